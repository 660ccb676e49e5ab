// SPDX-License-Identifier: Apache-2.0
// ui.js - the agent's web UI (docs/ui.md), no framework: takes a profile
// (POST /profile/KIND) or fetches a window of the continuous history
// (GET /profile/cpu/history/profile), and opens it in speedscope, served
// by the agent under /ui/speedscope/, in the frame below the page.
//
// The profile is fetched here and handed to speedscope as a blob: URL
// (#profileURL=blob:...), so speedscope never asks the agent for anything
// itself, the page can say what went wrong in the agent's own words, and
// behind --auth-token-file the credentials stay with the browser (it sends
// the token it was given at its login prompt; no URL carries it).
// speedscope opens on its left-heavy view: a pprof has no timestamps, so
// its time-ordered view would be a barcode; the sample type it shows first
// is the pprof's default_sample_type (the time).
//
// The kinds offered are those /healthz lists ("kinds": name, title,
// whether a snapshot), the agent's one list of them (agent/profile/
// limits.c): a kind the agent gains appears here without a change.
(function () {
	'use strict';

	var $ = function (id) { return document.getElementById(id); };
	var blobURL = null;
	var kinds = {}; // name: {name, title, snapshot}, from /healthz

	function say(text, isError) {
		$('status').textContent = text;
		$('status').className = isError ? 'error' : '';
	}

	// The agent's {"error": "..."}, else the status line.
	async function failure(resp) {
		try {
			var body = await resp.json();
			if (body && body.error)
				return body.error + ' (HTTP ' + resp.status + ')';
		} catch (e) { /* not JSON */ }
		return 'the agent answered HTTP ' + resp.status + ' ' + resp.statusText;
	}

	function show(blob, title) {
		if (blobURL)
			URL.revokeObjectURL(blobURL);
		blobURL = URL.createObjectURL(blob);
		$('download').href = blobURL;
		$('download').download = title.replace(/[^A-Za-z0-9_.-]+/g, '_') + '.pb.gz';
		$('links').hidden = false;
		// A new frame each time: speedscope reads its #profileURL once.
		var old = $('viewer'), viewer = document.createElement('iframe');
		viewer.id = 'viewer';
		viewer.title = 'speedscope';
		viewer.src = '/ui/speedscope/index.html#profileURL=' +
			encodeURIComponent(blobURL) + '&title=' +
			encodeURIComponent(title) + '&view=left-heavy';
		old.parentNode.replaceChild(viewer, old);
	}

	async function open(url, options, title) {
		var resp;

		try {
			resp = await fetch(url, options);
		} catch (e) {
			say('The agent cannot be reached: ' + e.message, true);
			return false;
		}
		if (!resp.ok) {
			say(await failure(resp), true);
			return false;
		}
		var blob = await resp.blob();
		say(title + ': ' + blob.size + ' bytes, opened below in speedscope.');
		show(blob, title);
		return true;
	}

	async function takeProfile(ev) {
		ev.preventDefault();
		var kind = $('kind').value;
		var k = kinds[kind] || { name: kind, title: kind, snapshot: false };
		var seconds = +$('seconds').value;
		var frequency = +$('frequency').value;
		// A snapshot is taken at once: seconds and Hz mean nothing; faults
		// are sampled by count (the agent's default period), not Hz.
		var title = k.title.replace(/ \(.*/, '') + (k.snapshot ? ' snapshot, ' :
			kind === 'faults' ? ' profile, ' + seconds + ' s, ' :
			' profile, ' + seconds + ' s at ' + frequency + ' Hz, ') +
			new Date().toISOString().slice(0, 19) + 'Z';
		var button = $('profile-button');

		button.disabled = true;
		say(k.snapshot ? 'Taking a snapshot…' : 'Profiling for ' + seconds + ' s…');
		await open('/profile/' + kind, {
			method: 'POST',
			headers: { 'Content-Type': 'application/json' },
			body: JSON.stringify({
				profiler: { BccProfile: null },
				sampling_frequency: frequency,
				timeout_seconds: seconds,
				archive: true,
				format: 'pprof'
			})
		}, title);
		button.disabled = false;
	}

	function openHistory(from, until, title) {
		var q = 'from=' + encodeURIComponent(from) + '&archive=true';
		if (until)
			q += '&until=' + encodeURIComponent(until);
		say('Fetching ' + title + '…');
		return open('/profile/cpu/history/profile?' + q, {}, title);
	}

	function cell(row, text) {
		var td = document.createElement('td');
		td.textContent = text;
		row.appendChild(td);
		return td;
	}

	// GET /profile/cpu/history: shown only when the agent profiles all the
	// time, and read again as each window is sealed.
	async function loadHistory() {
		var resp, h;

		try {
			resp = await fetch('/profile/cpu/history');
			if (!resp.ok)
				return;
			h = await resp.json();
		} catch (e) {
			return;
		}
		if (!h || !h.continuous)
			return;
		$('history').hidden = false;
		$('history-summary').textContent = 'Profiling all the time at ' +
			h.frequency + ' Hz, one window every ' + h.interval_seconds +
			' s; kept from ' + (h.oldest || '–') + ' to ' + (h.newest || '–') +
			(h.dropped_windows ? ', ' + h.dropped_windows + ' windows dropped' : '') + '.';
		var body = $('windows').tBodies[0];
		body.textContent = '';
		(h.windows || []).slice().reverse().forEach(function (w) {
			var row = document.createElement('tr');
			cell(row, w.start);
			cell(row, w.end);
			cell(row, String(w.samples));
			cell(row, String(w.lost || 0));
			var button = document.createElement('button');
			button.type = 'button';
			button.textContent = 'Open';
			button.className = 'open-window';
			button.addEventListener('click', function () {
				openHistory(w.start, w.end, 'CPU history ' + w.start + ' to ' + w.end);
			});
			cell(row, '').appendChild(button);
			body.appendChild(row);
		});
		setTimeout(loadHistory, Math.max(2, h.interval_seconds || 10) * 1000);
	}

	// The kinds the agent lists, as the choices of the form; the button
	// waits for them.
	function fillKinds(list) {
		var select = $('kind');

		if (select.options.length || !Array.isArray(list))
			return;
		list.forEach(function (k) {
			var option = document.createElement('option');
			kinds[k.name] = k;
			option.value = k.name;
			option.textContent = k.title || k.name;
			select.appendChild(option);
		});
		$('profile-button').disabled = !select.options.length;
	}

	async function loadHealth() {
		try {
			var resp = await fetch('/healthz');
			var h = await resp.json();
			var parts = [];
			fillKinds(h.kinds);
			if (h.bpf && typeof h.bpf === 'object')
				parts.push('eBPF ' + (h.bpf.usable ? 'usable' : 'unusable'));
			if (h.profile)
				parts.push(h.profile.running ? 'a profile is running' : 'no profile running');
			$('health').textContent = parts.join(', ');
		} catch (e) {
			$('health').textContent = 'health unknown';
		}
		// Without the kinds yet (the agent restarting): ask again.
		if (!$('kind').options.length)
			setTimeout(loadHealth, 2000);
	}

	$('profile-form').addEventListener('submit', takeProfile);
	document.querySelectorAll('#history button[data-from]').forEach(function (b) {
		b.addEventListener('click', function () {
			openHistory(b.getAttribute('data-from'), 'now', 'CPU history, ' + b.textContent.toLowerCase());
		});
	});
	loadHealth();
	loadHistory();
})();
