// SPDX-License-Identifier: Apache-2.0
// browser.mjs - what the browser tests share: Debian's chromium started
// headless by playwright-core (from the npm install ci/install-deps.sh
// makes, $PLAYWRIGHT_DIR), kept off the network by its flags; TAP lines;
// console errors collected per page; and screenshots written to the test
// logs and judged not blank by decoding them in the browser itself.
import { createRequire } from 'node:module';
import { mkdirSync, writeFileSync } from 'node:fs';

const require = createRequire(`${process.env.PLAYWRIGHT_DIR}/`);
const { chromium } = require('playwright-core');

export const flags = [
	'--no-sandbox', '--disable-gpu', '--disable-background-networking',
	'--disable-component-update', '--no-first-run', '--disable-sync',
	'--disable-quic', '--disable-default-apps', '--disable-extensions',
	// speedscope draws with WebGL: Chromium's software renderer, as no GPU is used.
	'--use-angle=swiftshader', '--enable-unsafe-swiftshader',
];

export async function launch() {
	return chromium.launch({
		executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
		args: flags,
		headless: true,
	});
}

let failures = 0;
export function tap(pass, desc, detail) {
	console.log(`${pass ? 'ok' : 'not ok'} - ${desc}`);
	if (!pass) {
		failures++;
		if (detail)
			for (const line of String(detail).split('\n').slice(0, 30))
				console.log(`#   ${line}`);
	}
	return pass;
}
export const failed = () => failures;

// Console errors and uncaught exceptions of a page (and its frames).
export function watchErrors(page) {
	const errors = [];
	page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
	page.on('pageerror', (e) => errors.push(String(e)));
	return errors;
}

// Decode a PNG in a blank page: how many distinct colours it has and the
// share of its most common one (a blank shot has one colour at 100%).
export async function pngStats(browser, png) {
	const page = await browser.newPage();
	try {
		await page.setContent('<canvas id="c"></canvas>');
		return await page.evaluate(async (b64) => {
			const img = new Image();
			img.src = `data:image/png;base64,${b64}`;
			await img.decode();
			const c = document.getElementById('c');
			c.width = img.width;
			c.height = img.height;
			const ctx = c.getContext('2d');
			ctx.drawImage(img, 0, 0);
			const d = ctx.getImageData(0, 0, c.width, c.height).data;
			const counts = new Map();
			for (let i = 0; i < d.length; i += 4) {
				const k = (d[i] << 16) | (d[i + 1] << 8) | d[i + 2];
				counts.set(k, (counts.get(k) || 0) + 1);
			}
			const top = Math.max(...counts.values());
			return { colours: counts.size, top: top / (d.length / 4) };
		}, png.toString('base64'));
	} finally {
		await page.close();
	}
}

// Screenshot of page (or of one element) into the test logs; TAP line on
// whether it shows something.
export async function screenshot(browser, target, name, desc) {
	const dir = process.env.SCREENSHOT_DIR;
	const png = await target.screenshot();
	name = `${process.env.SCREENSHOT_PREFIX || ''}${name}`;
	let where = '';
	if (dir) {
		mkdirSync(dir, { recursive: true });
		writeFileSync(`${dir}/${name}.png`, png);
		where = ` (${dir}/${name}.png)`;
	}
	const s = await pngStats(browser, png);
	tap(s.colours >= 16 && s.top < 0.95,
		`${desc}: the screenshot is not blank${where}`,
		`${s.colours} colours, the commonest covers ${(100 * s.top).toFixed(1)}%`);
	return png;
}
