// SPDX-License-Identifier: Apache-2.0
// svg.mjs - the SVG flame graph in a real browser (tests/integration/
// 80-svg-browser.sh): node svg.mjs BURNER.svg HOSTILE.svg.
//
// BURNER.svg is a profile of tests/programs/burn (burn_hot_a : burn_hot_b
// = 3:1 of CPU time): both frames are drawn, their widths 3:1 within 3
// points; a click on burn_hot_a zooms it to the full width and Reset
// zoom undoes it; the search box highlights it and says its share; no
// console error.  HOSTILE.svg holds frame names made of XML's specials and
// bytes that are not UTF-8: it loads as an SVG document, with its script
// running, and shows the names as text.
import { launch, tap, failed, watchErrors, screenshot } from './browser.mjs';

const [burnerSvg, hostileSvg] = process.argv.slice(2);
const browser = await launch();

// The frame whose full name (its <title> up to " (") is name.
async function frame(page, name) {
	return page.evaluate((n) => {
		for (const g of document.querySelectorAll('#frames > g')) {
			const t = g.querySelector('title').textContent;
			if (t.slice(0, t.lastIndexOf(' (')) === n) {
				const r = g.querySelector('rect');
				return {
					x: +r.getAttribute('x'), w: +r.getAttribute('width'),
					fill: r.getAttribute('fill'), shown: g.style.display !== 'none',
					title: t, text: g.querySelector('text').textContent,
				};
			}
		}
		return null;
	}, name);
}

try {
	const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
	const errors = watchErrors(page);
	await page.goto(`file://${burnerSvg}`);
	const full = await page.evaluate(() => +document.documentElement.getAttribute('data-width') -
		2 * +document.documentElement.getAttribute('data-pad'));
	const a = await frame(page, 'burn_hot_a');
	const b = await frame(page, 'burn_hot_b');
	if (tap(a && b, 'burn_hot_a and burn_hot_b are frames of the burner\'s SVG')) {
		const share = (100 * a.w) / (a.w + b.w);
		tap(Math.abs(share - 75) <= 3,
			`burn_hot_a : burn_hot_b widths are 3:1 within 3 points (${share.toFixed(1)}% : ${(100 - share).toFixed(1)}%)`);
		tap(/^burn_hot_a \(\d+ samples?, \d+(\.\d+)?%\)$/.test(a.title),
			`a frame's title is its name, count and share: "${a.title}"`);
		await screenshot(browser, page, 'svg-burner', 'the burner\'s flame graph');

		await page.click('#frames > g:has(title:text-matches("^burn_hot_a "))');
		const z = await frame(page, 'burn_hot_a');
		tap(Math.abs(z.w - full) < 0.5, `a click on burn_hot_a zooms it to the full width (${z.w.toFixed(1)} of ${full} px)`);
		const hidden = await frame(page, 'burn_hot_b');
		tap(!hidden.shown, 'burn_hot_b, beside it, is hidden while zoomed');
		await screenshot(browser, page, 'svg-burner-zoomed', 'the zoomed flame graph');
		await page.click('#reset');
		const back = await frame(page, 'burn_hot_a');
		tap(Math.abs(back.w - a.w) < 0.05 && (await frame(page, 'burn_hot_b')).shown,
			'Reset zoom draws every frame at its first width again');

		await page.fill('#search', 'burn_hot_a');
		const hl = await frame(page, 'burn_hot_a');
		const other = await frame(page, 'burn_hot_b');
		const matched = await page.textContent('#matched');
		const m = /Matched: ([\d.]+)%/.exec(matched);
		tap(hl.fill === 'rgb(230,0,230)' && other.fill !== 'rgb(230,0,230)',
			'searching burn_hot_a highlights it and not burn_hot_b', JSON.stringify({ hl, other }));
		tap(m && Math.abs(+m[1] - (100 * a.w) / full) < 0.2,
			`the search says the share it matched: "${matched}"`);
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
