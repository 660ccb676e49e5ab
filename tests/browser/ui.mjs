// SPDX-License-Identifier: Apache-2.0
// ui.mjs - the agent's web UI in a real browser (tests/integration/
// 81-ui-postgres.sh), against a running agent that profiles PostgreSQL
// under pgbench -S: node ui.mjs URL [TOKEN].
//
// Without TOKEN: /ui/ loads with no console error, a 5 s CPU profile
// opens in speedscope on its left-heavy view, with times (the pprof's
// default sample type, not the counts), and speedscope's sandwich table,
// sorted by total, lists PostgresMain; when the agent profiles all the
// time, the newest window of its history opens the same way.
// With TOKEN (the agent runs with --auth-token-file): before the token is
// given, no file of the UI is served (401); once given at the browser's
// login prompt (the password), a profile opens, and no URL the page
// requests carries the token.
import { launch, tap, failed, watchErrors, screenshot } from './browser.mjs';

const [url, token] = process.argv.slice(2);
const browser = await launch();
const viewport = { width: 1400, height: 900 };

// speedscope in the page's frame, once it shows a profile (another than
// the one at previous, the frame's src before).
async function speedscope(page, previous = '') {
	await page.waitForFunction((prev) => {
		const v = document.getElementById('viewer');
		return v && v.src.includes('profileURL=') && v.src !== prev;
	}, previous, { timeout: 90000 });
	const el = await page.$('#viewer');
	const frame = await el.contentFrame();
	await frame.waitForSelector('text=Sandwich', { timeout: 30000 });
	return { el, frame };
}

// The sandwich view sorted by total: does its table list name?
async function sandwichLists(frame, name) {
	await frame.click('text=Sandwich');
	await frame.click('text=Total');
	try {
		await frame.waitForSelector(`text=${name}`, { timeout: 15000 });
		return true;
	} catch {
		return false;
	}
}

async function openedProfile(browser, page, what, shot, previous = '') {
	const { el, frame } = await speedscope(page, previous);
	const src = await el.getAttribute('src');
	tap(/[#&]view=left-heavy(&|$)/.test(src) && src.includes('profileURL=blob%3A'),
		`${what} opens in speedscope on its left-heavy view, from a blob: URL`, src);
	await page.waitForTimeout(1000);
	await screenshot(browser, page, `${shot}-left-heavy`, `${what}, left-heavy view`);
	const listed = await sandwichLists(frame, 'PostgresMain');
	const text = await frame.evaluate(() => document.body.innerText);
	tap(listed, `${what}: speedscope's sandwich table lists PostgresMain`, text.slice(0, 1500));
	tap(/\d(\.\d+)?(ns|µs|ms|s) \(/.test(text),
		`${what}: speedscope shows CPU time, the pprof's default sample type`, text.slice(0, 300));
	await screenshot(browser, page, `${shot}-sandwich`, `${what}, sandwich view`);
}

async function withoutToken() {
	const page = await browser.newPage({ viewport });
	const errors = watchErrors(page);
	const resp = await page.goto(`${url}/ui/`);
	const csp = resp.headers()['content-security-policy'] || '';
	tap(resp.status() === 200 && (await page.title()) === 'vmtools agent',
		'GET /ui/ loads the agent\'s page');
	tap(/default-src 'none'/.test(csp) && !/https?:/.test(csp),
		'the page comes with a Content-Security-Policy that allows nothing from elsewhere', csp);
	await page.fill('#seconds', '5');
	await page.click('#profile-button');
	await openedProfile(browser, page, 'a 5 s CPU profile of PostgreSQL', 'ui-cpu');

	const history = await page.evaluate(async () => {
		const r = await fetch('/profile/cpu/history');
		return r.ok ? r.json() : { continuous: false, status: r.status };
	});
	if (history.continuous) {
		const previous = await page.$eval('#viewer', (v) => v.src);
		await page.waitForSelector('button.open-window', { timeout: 30000 });
		await page.click('button.open-window');
		await openedProfile(browser, page, 'the newest window of the history', 'ui-history', previous);
	} else {
		console.log('ok - a window of the continuous history opens in speedscope # SKIP ' +
			`this agent keeps no history (GET /profile/cpu/history: ${JSON.stringify(history)})`);
	}
	const real = errors.filter((e) => !/status of 404/.test(e) || history.continuous);
	tap(real.length === 0, 'no console error in the UI (a 404 of the history\'s probe aside when there is none)',
		errors.join('\n'));
	await page.close();
}

async function withToken() {
	const anon = await browser.newContext({ viewport });
	const page = await anon.newPage();
	for (const path of ['/ui/', '/ui/ui.js', '/ui/speedscope/index.html']) {
		const resp = await anon.request.get(`${url}${path}`);
		const body = await resp.text();
		tap(resp.status() === 401 && !body.includes('<script') && !body.includes('speedscope'),
			`before the token is given, ${path} is not served (${resp.status()})`, body.slice(0, 300));
	}
	// The browser itself, its login prompt dismissed: no page.
	// A refused login may still be navigating when goto returns or throws:
	// read the page once it has settled, trying again while it moves.
	let shown = null;
	await page.goto(`${url}/ui/`).catch(() => {});
	for (let i = 0; i < 20 && shown === null; i++) {
		await page.waitForLoadState('load').catch(() => {});
		shown = await page.content().catch(() => null);
		if (shown === null)
			await page.waitForTimeout(250);
	}
	tap(shown !== null, 'the page a browser given no token shows could be read');
	shown = shown || '';
	tap(!shown.includes('Take a profile') && !shown.includes('ui.js'),
		'a browser given no token shows nothing of the UI', shown.slice(0, 300));
	await anon.close();

	const ctx = await browser.newContext({
		viewport, httpCredentials: { username: 'vmtools', password: token },
	});
	const urls = [];
	ctx.on('request', (r) => urls.push(r.url()));
	const auth = await ctx.newPage();
	const errors = watchErrors(auth);
	const resp = await auth.goto(`${url}/ui/`);
	tap(resp.status() === 200 && (await auth.title()) === 'vmtools agent',
		'once the token is given at the browser\'s prompt, /ui/ loads');
	await auth.fill('#seconds', '2');
	await auth.click('#profile-button');
	const { frame } = await speedscope(auth);
	await screenshot(browser, auth, 'ui-token', 'a profile opened behind the token');
	tap(await sandwichLists(frame, 'PostgresMain'),
		'behind the token, the profile opens and lists PostgresMain');
	tap(urls.length > 0 && !urls.some((u) => u.includes(token)),
		`no URL the page requested carries the token (${urls.length} requests)`, urls.join('\n'));
	tap(errors.filter((e) => !/status of 404/.test(e)).length === 0,
		'no console error behind the token', errors.join('\n'));
	await ctx.close();
}

try {
	if (token)
		await withToken();
	else
		await withoutToken();
} catch (e) {
	tap(false, 'the UI browser test ran to its end', e.stack);
} finally {
	await browser.close();
}
process.exit(failed() ? 1 : 0);
