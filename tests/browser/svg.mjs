// SPDX-License-Identifier: Apache-2.0
// svg.mjs - the SVG flame graph in a real browser (tests/integration/
// 80-svg-browser.sh): node svg.mjs BURNER.svg HOSTILE.svg.
//
// BURNER.svg is a profile of tests/programs/burn (burn_hot_a : burn_hot_b
// = 3:1 of CPU time): both functions are drawn, their widths 3:1 within
// 3 points; a click on burn_hot_a zooms it to the full width and Reset
// zoom undoes it; the search box highlights it and says its share, the
// samples of its frames that are not under another of its frames (it may
// be drawn in more than one stack); no console error.  HOSTILE.svg holds
// frame names made of XML's specials and bytes that are not UTF-8: it
// loads as an SVG document, with its script running, and shows the names
// as text.
import { launch, tap, failed, watchErrors, screenshot } from './browser.mjs';

const [burnerSvg, hostileSvg] = process.argv.slice(2);
const browser = await launch();

// Every drawn frame, in the SVG's order (pre-order): its full name (its
// <title> up to " ("), the samples its title counts, its depth, whether a
// frame of the same name is one of its callers, and how it is drawn.
async function frames(page) {
	return page.evaluate(() => {
		const open = [];
		return [...document.querySelectorAll('#frames > g')].map((g, index) => {
			const t = g.querySelector('title').textContent;
			const r = g.querySelector('rect');
			const f = {
				index, name: t.slice(0, t.lastIndexOf(' (')),
				count: +/\((\d+) samples?, [^)]*\)$/.exec(t)?.[1],
				depth: +g.getAttribute('data-depth'),
				x: +r.getAttribute('x'), w: +r.getAttribute('width'),
				fill: r.getAttribute('fill'), shown: g.style.display !== 'none',
				title: t, text: g.querySelector('text').textContent,
			};
			open.length = f.depth;
			f.underSame = open.some((c) => c.name === f.name);
			open.push(f);
			return f;
		});
	});
}

// The frames of one function.  A function may be drawn in more than one
// stack (under other callers, or below a stack cut short), so a test of
// a function's share sums them: those not under a frame of the same
// function, as a flame graph's search counts each sample once.
const named = (all, name) => all.filter((f) => f.name === name);
const top = (fs) => fs.filter((f) => !f.underSame);
const sum = (fs, k) => fs.reduce((n, f) => n + f[k], 0);

try {
	const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
	const errors = watchErrors(page);
	await page.goto(`file://${burnerSvg}`);
	const full = await page.evaluate(() => +document.documentElement.getAttribute('data-width') -
		2 * +document.documentElement.getAttribute('data-pad'));
	const first = await frames(page);
	const as = named(first, 'burn_hot_a');
	const bs = named(first, 'burn_hot_b');
	console.log(`# burn_hot_a is drawn in ${as.length} stack(s), burn_hot_b in ${bs.length}`);
	if (tap(as.length && bs.length, 'burn_hot_a and burn_hot_b are frames of the burner\'s SVG')) {
		const wa = sum(top(as), 'w');
		const wb = sum(top(bs), 'w');
		const share = (100 * wa) / (wa + wb);
		tap(Math.abs(share - 75) <= 3,
			`burn_hot_a : burn_hot_b widths are 3:1 within 3 points (${share.toFixed(1)}% : ${(100 - share).toFixed(1)}%)`);
		// The widest: the one a person clicks.
		const a = as.reduce((m, f) => (f.w > m.w ? f : m));
		tap(/^burn_hot_a \(\d+ samples?, \d+(\.\d+)?%\)$/.test(a.title),
			`a frame's title is its name, count and share: "${a.title}"`);
		await screenshot(browser, page, 'svg-burner', 'the burner\'s flame graph');

		await page.click(`#frames > g:nth-child(${a.index + 1})`);
		const zoomed = await frames(page);
		const z = zoomed[a.index];
		tap(Math.abs(z.w - full) < 0.5, `a click on burn_hot_a zooms it to the full width (${z.w.toFixed(1)} of ${full} px)`);
		tap(named(zoomed, 'burn_hot_b').every((f) => !f.shown), 'burn_hot_b, beside it, is hidden while zoomed');
		await screenshot(browser, page, 'svg-burner-zoomed', 'the zoomed flame graph');
		await page.click('#reset');
		const back = await frames(page);
		tap(back.every((f, i) => Math.abs(f.w - first[i].w) < 0.05 && f.shown),
			'Reset zoom draws every frame at its first width again');

		await page.fill('#search', 'burn_hot_a');
		const found = await frames(page);
		const matched = await page.textContent('#matched');
		const m = /Matched: ([\d.]+)%/.exec(matched);
		tap(named(found, 'burn_hot_a').every((f) => f.fill === 'rgb(230,0,230)') &&
			named(found, 'burn_hot_b').every((f) => f.fill !== 'rgb(230,0,230)'),
			'searching burn_hot_a highlights it and not burn_hot_b',
			JSON.stringify(found.filter((f) => f.name.startsWith('burn_hot_'))));
		// What it should say, from the samples the titles count: those of
		// every burn_hot_a not under another, of all the samples (the root's).
		const want = (100 * sum(top(named(found, 'burn_hot_a')), 'count')) / found[0].count;
		tap(m && Math.abs(+m[1] - want) < 0.2,
			`the search says the share it matched: "${matched}" (the samples of burn_hot_a's frames: ${want.toFixed(2)}%)`);
		await screenshot(browser, page, 'svg-burner-search', 'the flame graph with a search');
	}
	tap(errors.length === 0, 'no console error in the burner\'s SVG', errors.join('\n'));

	const hostile = await browser.newPage();
	const herrors = watchErrors(hostile);
	await hostile.goto(`file://${hostileSvg}`);
	const doc = await hostile.evaluate(() => ({
		root: document.documentElement.localName,
		ns: document.documentElement.namespaceURI,
		parseError: document.getElementsByTagName('parsererror').length,
		titles: [...document.querySelectorAll('#frames > g > title')].map((t) => t.textContent),
	}));
	tap(doc.root === 'svg' && doc.ns === 'http://www.w3.org/2000/svg' && doc.parseError === 0,
		'an SVG with hostile frame names opens as an SVG document', JSON.stringify(doc));
	tap(doc.titles.some((t) => t.startsWith('<script>alert("&amp;")</script>')),
		'a frame named <script>alert("&amp;")</script> shows as that text', doc.titles.join('\n'));
	tap(doc.titles.some((t) => t.includes('\\xff')),
		'a byte that is not UTF-8 shows as \\xNN', doc.titles.join('\n'));
	await hostile.fill('#search', '<script>');
	tap((await hostile.textContent('#matched')).startsWith('Matched: '),
		'its script runs: the search answers');
	tap(herrors.length === 0, 'no console error in the hostile SVG', herrors.join('\n'));
} catch (e) {
	tap(false, 'the SVG browser test ran to its end', e.stack);
} finally {
	await browser.close();
}
process.exit(failed() ? 1 : 0);
