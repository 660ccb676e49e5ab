// SPDX-License-Identifier: Apache-2.0
// flame.js - what makes the SVG flame graph of svg.c interactive; the
// Makefile turns it into a C string that svg.c puts, whole, inside every
// SVG, so the file needs nothing from anywhere else.
//
// Click a frame: it fills the width and its callees are redrawn in
// proportion; its callers stay under it, dimmed; the rest is hidden.
// "Reset zoom" (or Escape) draws everything again.  The search box takes
// a regular expression (a literal when it is not one), highlights the
// frames whose name matches and says what share of the whole they cover,
// each sample counted once however many matching frames its stack holds.
(function () {
	'use strict';
	var svg = document.documentElement;
	var pad = +svg.getAttribute('data-pad');
	var full = +svg.getAttribute('data-width') - 2 * pad;
	var charW = +svg.getAttribute('data-char-width');
	var highlight = 'rgb(230,0,230)';
	var frames = [];
	var nodes = document.getElementById('frames').children;
	var zoomed = null;

	function label(name, w) {
		var n = Math.floor((w - 6) / charW);

		if (n < 3)
			return '';
		if (name.length <= n)
			return name;
		return name.slice(0, n - 2) + '..';
	}

	function place(f, x, w) {
		f.r.setAttribute('x', x.toFixed(2));
		f.r.setAttribute('width', w.toFixed(2));
		f.t.setAttribute('x', (x + 3).toFixed(2));
		f.t.textContent = label(f.name, w);
	}

	// Frames come in pre-order; a frame's parent is the nearest one before
	// it on the row below.
	(function read() {
		var open = [];

		for (var i = 0; i < nodes.length; i++) {
			var g = nodes[i];
			var title = g.getElementsByTagName('title')[0].textContent;
			var r = g.getElementsByTagName('rect')[0];
			var f = {
				g: g,
				r: r,
				t: g.getElementsByTagName('text')[0],
				name: title.slice(0, title.lastIndexOf(' (')),
				x: +r.getAttribute('x'),
				w: +r.getAttribute('width'),
				depth: +g.getAttribute('data-depth'),
				fill: r.getAttribute('fill'),
				index: i
			};
			f.parent = f.depth > 0 ? open[f.depth - 1] : null;
			open[f.depth] = f;
			frames.push(f);
		}
	})();

	function show(f, on) {
		f.g.style.display = on ? '' : 'none';
	}

	function zoom(z) {
		var ratio = full / z.w;
		var i, f;

		for (i = 0; i < frames.length; i++)
			show(frames[i], false);
		for (f = z; f; f = f.parent) {
			place(f, pad, full);
			f.g.classList.toggle('caller', f !== z);
			show(f, true);
		}
		for (i = z.index + 1; i < frames.length; i++) {
			f = frames[i];
			if (f.depth <= z.depth)
				break;
			place(f, pad + (f.x - z.x) * ratio, f.w * ratio);
			f.g.classList.remove('caller');
			show(f, true);
		}
		zoomed = z;
		document.getElementById('reset').style.opacity = '1';
	}

	function reset() {
		for (var i = 0; i < frames.length; i++) {
			var f = frames[i];

			place(f, f.x, f.w);
			f.g.classList.remove('caller');
			show(f, true);
		}
		zoomed = null;
		document.getElementById('reset').style.opacity = '0.4';
	}

	function pattern(term) {
		try {
			return new RegExp(term);
		} catch (e) {
			return new RegExp(term.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
		}
	}

	function search(term) {
		var re = term ? pattern(term) : null;
		var spans = [], covered = 0, end = -1;

		for (var i = 0; i < frames.length; i++) {
			var f = frames[i];
			var hit = re !== null && f.depth > 0 && re.test(f.name);

			f.r.setAttribute('fill', hit ? highlight : f.fill);
			f.g.classList.toggle('match', hit);
			if (hit)
				spans.push([f.x, f.x + f.w]);
		}
		spans.sort(function (a, b) { return a[0] - b[0]; });
		for (var j = 0; j < spans.length; j++) {
			if (spans[j][1] <= end)
				continue;
			covered += spans[j][1] - Math.max(spans[j][0], end);
			end = spans[j][1];
		}
		document.getElementById('matched').textContent = re ?
			'Matched: ' + (frames.length && frames[0].w > 0 ?
				(100 * covered / frames[0].w).toFixed(1) : '0.0') + '%' : '';
	}

	document.getElementById('frames').addEventListener('click', function (e) {
		for (var g = e.target; g && g.parentNode; g = g.parentNode) {
			if (g.parentNode.id === 'frames') {
				zoom(frames[Array.prototype.indexOf.call(nodes, g)]);
				return;
			}
		}
	});
	document.getElementById('frames').addEventListener('mouseover', function (e) {
		var g = e.target.parentNode;

		if (g && g.parentNode && g.parentNode.id === 'frames')
			document.getElementById('hover').textContent =
				g.getElementsByTagName('title')[0].textContent;
	});
	document.getElementById('reset').addEventListener('click', reset);
	var box = document.getElementById('search');
	box.addEventListener('input', function () { search(box.value); });
	document.addEventListener('keydown', function (e) {
		if (e.key === 'Escape' && zoomed)
			reset();
		if ((e.ctrlKey || e.metaKey) && e.key === 'f') {
			e.preventDefault();
			box.focus();
		}
	});
	reset();
})();
