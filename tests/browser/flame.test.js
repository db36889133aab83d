#!/usr/bin/env node
/* Browser test of the flame graph outputs (flame_render.c + analyzer/web/):
 * opens the svg and html files that make_flame writes in the system's
 * headless Chromium, from file://, with every non-file request aborted and
 * counted, and checks what a user would see: frames drawn, click to zoom,
 * reset, search, hostile frame names shown as literal text, a 100k-frame
 * tree drawn without freezing.  Screenshots land next to the outputs.
 *
 * Not for: checking the numbers in the tree (tests/unit/test_flame_tree.c
 * does that) or downloading browsers: it uses /usr/bin/chromium (or
 * $FLIGHTREC_CHROMIUM) and exits 77 (ctest SKIP) when that or
 * node_modules/playwright-core is missing.
 *
 * usage: node flame.test.js MAKE_FLAME OUTDIR */
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');

const SKIP = 77;
const CHROMIUM = process.env.FLIGHTREC_CHROMIUM || '/usr/bin/chromium';
const HOSTILE_IMG = '<img src=x onerror=alert(1)>';
const HOSTILE_SCRIPT = '</script><script>alert(2)</script>';
const HOSTILE_CDATA = ']]><svg onload=alert(3)>';
const TITLE = 'CPU samples: trainer </title><script>alert(4)</script>';
const TOTAL = 3170; /* sum of the small tree in make_flame.c */

function skip(why) {
	console.log('browser.flame: SKIP: ' + why);
	process.exit(SKIP);
}

const [makeFlame, outDir] = process.argv.slice(2);
if (!makeFlame || !outDir) {
	console.error('usage: node flame.test.js MAKE_FLAME OUTDIR');
	process.exit(2);
}
if (!fs.existsSync(CHROMIUM))
	skip(CHROMIUM + ' not found (apt-get install chromium, or set FLIGHTREC_CHROMIUM)');
let chromium;
try {
	({ chromium } = require('playwright-core'));
} catch (e) {
	skip('playwright-core not installed: run `npm ci` in ' + __dirname);
}

let passes = 0, failures = 0;
function check(cond, what) {
	if (cond) passes++;
	else { failures++; console.error('FAIL: ' + what); }
}

fs.mkdirSync(outDir, { recursive: true });
execFileSync(makeFlame, [outDir], { stdio: 'inherit' });

/* ---- helpers that run in the page ---- */

/* Every drawn frame: label text, rect geometry, classes. */
function framesInPage() {
	return Array.from(document.querySelectorAll('.fg-frame')).map(function (g) {
		var r = g.querySelector('rect'), t = g.querySelector('text');
		var b = r.getBoundingClientRect(), d = window.FLAME_DATA;
		return {
			name: d.names[d.nodes[3 * g.fgIndex + 1]],
			label: t ? t.textContent : '',
			width: parseFloat(r.getAttribute('width')),
			cls: g.getAttribute('class'),
			cx: b.left + b.width / 2, cy: b.top + b.height / 2,
		};
	});
}

function frameByLabel(frames, label) {
	return frames.find((f) => f.label === label);
}

async function frames(page) {
	return page.evaluate(framesInPage);
}

async function svgWidth(page) {
	return page.evaluate(() => {
		var s = document.querySelector('.fg-svg');
		return parseFloat(s.getAttribute('width'));
	});
}

async function text(page, sel) {
	return page.evaluate((s) => {
		var e = document.querySelector(s);
		return e ? e.textContent : null;
	}, sel);
}

async function openPage(ctx, file, state) {
	const page = await ctx.newPage();
	page.on('console', (m) => { if (m.type() === 'error') state.errors.push(file + ': console: ' + m.text()); });
	page.on('pageerror', (e) => state.errors.push(file + ': pageerror: ' + e));
	page.on('request', (r) => { if (!r.url().startsWith('file:')) state.requests.push(r.url()); });
	page.on('dialog', async (d) => {
		state.dialogs.push(d.type() + ': ' + d.message());
		if (d.type() === 'prompt' && state.answer !== null) await d.accept(state.answer);
		else await d.dismiss();
	});
	const t0 = Date.now();
	await page.goto('file://' + path.resolve(outDir, file));
	await page.waitForSelector('.fg-frame', { timeout: 20000 });
	state.loadMs = Date.now() - t0;
	return page;
}

async function search(page, isHtml, state, term) {
	if (isHtml) {
		await page.fill('#fg-search', term);
	} else {
		state.answer = term;
		const before = state.dialogs.length;
		await page.keyboard.press('Control+f');
		for (let i = 0; i < 50 && state.dialogs.length === before; i++) await page.waitForTimeout(20);
		await page.waitForTimeout(50);
		state.answer = null;
	}
}

async function testSmall(ctx, file, state) {
	const isHtml = file.endsWith('.html');
	const page = await openPage(ctx, file, state);
	const shot = (suffix) => page.screenshot({
		path: path.join(outDir, 'flame-' + (isHtml ? 'html' : 'svg') + suffix + '.png'),
		fullPage: isHtml, /* playwright's fullPage hangs on a bare SVG document */
	});
	let fs0 = await frames(page);
	const full = (await svgWidth(page)) - 20;
	check(fs0.length >= 20, file + ': frames drawn (' + fs0.length + ')');
	check(frameByLabel(fs0, 'all') && Math.abs(frameByLabel(fs0, 'all').width - full) < 1,
		file + ': root frame spans the width');
	check(frameByLabel(fs0, 'train_step (train.py:42)'), file + ': python frame labelled');
	check(fs0.some((f) => f.label.endsWith('..')), file + ': narrow labels truncated');

	/* hostile names and title are text, not markup */
	const dom = await page.evaluate(() => ({
		imgs: document.getElementsByTagName('img').length,
		bold: document.getElementsByTagName('b').length,
		handlers: Array.from(document.querySelectorAll('*')).filter((e) =>
			e.hasAttribute('onerror') || e.hasAttribute('onload')).length,
		scripts: document.getElementsByTagName('script').length,
		svgs: document.getElementsByTagName('svg').length,
		title: document.querySelector('.fg-title').textContent,
		subtitle: document.querySelector('.fg-subtitle').textContent,
		docTitle: document.title,
	}));
	check(dom.imgs === 0 && dom.handlers === 0 && dom.bold === 0 && dom.scripts === 2 && dom.svgs === 1,
		file + ': no element injected ' + JSON.stringify(dom));
	check(dom.title === TITLE, file + ': title shown literally: ' + dom.title);
	check(dom.docTitle === TITLE, file + ': document title literal: ' + dom.docTitle);
	check(dom.subtitle.includes('<b>not bold</b>'), file + ': subtitle literal');
	for (const name of [HOSTILE_IMG, HOSTILE_SCRIPT, HOSTILE_CDATA])
		check(frameByLabel(fs0, name), file + ': hostile frame label literal: ' + name);
	const img = frameByLabel(fs0, HOSTILE_IMG);
	if (img) {
		await page.mouse.move(img.cx, img.cy);
		const details = await text(page, '.fg-details');
		check(details.startsWith(HOSTILE_IMG + ' \u2014 600 samples, 18.93%'),
			file + ': hover details: ' + details);
	}
	check(fs0.some((f) => f.label === 'semi;colon frame'), file + ': ; kept in svg/html names');
	await page.mouse.move(1, 1);
	await shot('');

	/* click to zoom: the frame becomes full width, ancestors dimmed */
	const ts = frameByLabel(fs0, 'train_step (train.py:42)');
	if (ts) {
		check(ts.width < full * 0.9, file + ': train_step narrower than full before zoom');
		await page.mouse.click(ts.cx, ts.cy);
		let fz = await frames(page);
		const z = frameByLabel(fz, 'train_step (train.py:42)');
		check(z && Math.abs(z.width - full) < 1, file + ': clicked frame is full width (' + (z && z.width) + ' vs ' + full + ')');
		check(z && !z.cls.includes('fg-anc'), file + ': zoomed frame not dimmed');
		const anc = fz.filter((f) => f.cls.includes('fg-anc')).map((f) => f.label);
		check(anc.includes('all') && anc.includes('train_loop (train.py:88)') && anc.length === 5,
			file + ': ancestors dimmed: ' + JSON.stringify(anc));
		check(!frameByLabel(fz, 'ncclProxyService'), file + ': frames outside the zoom hidden');
		check(await page.evaluate(() => !document.querySelector('.fg-reset').getAttribute('class').includes('fg-hidden')),
			file + ': reset control shown when zoomed');
		const mm = frameByLabel(fz, 'at::native::matmul');
		check(mm && Math.abs(mm.width - full * 400 / 1070) < 1, file + ': children rescaled (' + (mm && mm.width) + ')');
		await shot('-zoomed');

		await page.keyboard.press('Escape');
		fz = await frames(page);
		check(Math.abs(frameByLabel(fz, 'train_step (train.py:42)').width - ts.width) < 0.01 &&
			!fz.some((f) => f.cls.includes('fg-anc')), file + ': Escape unzooms');

		await page.mouse.click(ts.cx, ts.cy);
		await page.click('.fg-reset');
		check(await page.evaluate(() => document.querySelector('.fg-svg').getAttribute('data-zoom')) === '0',
			file + ': reset control unzooms');

		await page.mouse.click(ts.cx, ts.cy);
		fz = await frames(page);
		const root = frameByLabel(fz, 'all');
		await page.mouse.click(root.cx, root.cy);
		check(await page.evaluate(() => document.querySelector('.fg-svg').getAttribute('data-zoom')) === '0',
			file + ': click on root unzooms');
		if (isHtml) {
			await page.mouse.click(ts.cx, ts.cy);
			await page.click('#fg-reset');
			check(await page.evaluate(() => document.querySelector('.fg-svg').getAttribute('data-zoom')) === '0',
				file + ': page reset button unzooms');
		}
	}

	/* search: substring, regex, invalid regex, hostile term */
	await search(page, isHtml, state, 'alloc');
	let fm = (await frames(page)).filter((f) => f.cls.includes('fg-match'));
	check(fm.length === 4 && fm.every((f) => /alloc/.test(f.name)), file + ': search highlights matches: ' +
		JSON.stringify(fm.map((f) => f.name)));
	let matched = await text(page, '.fg-matched');
	check(matched === 'Matched: ' + (100 * 90 / TOTAL).toFixed(2) + '% (90 samples)', file + ': matched percentage: ' + matched);
	await shot('-search');

	await search(page, isHtml, state, 'cuda.*Kernel$');
	matched = await text(page, '.fg-matched');
	check(matched === 'Matched: ' + (100 * 700 / TOTAL).toFixed(2) + '% (700 samples)', file + ': regex search: ' + matched);

	await search(page, isHtml, state, '(train.py:4');
	matched = await text(page, '.fg-matched');
	check(matched === 'Matched: ' + (100 * 1070 / TOTAL).toFixed(2) + '% (1,070 samples)',
		file + ': invalid regex falls back to substring: ' + matched);

	await search(page, isHtml, state, '<img');
	fm = (await frames(page)).filter((f) => f.cls.includes('fg-match'));
	check(fm.length === 1 && fm[0].label === HOSTILE_IMG && fm[0].name === HOSTILE_IMG, file + ': hostile name searchable');

	if (isHtml) {
		await page.focus('#fg-search');
		await page.keyboard.press('Escape');
	} else {
		await page.click('.fg-clear-btn');
	}
	check((await frames(page)).every((f) => !f.cls.includes('fg-match')) && (await text(page, '.fg-matched')) === '',
		file + ': search cleared');
	await page.close();
}

async function testBig(ctx, file, state) {
	const page = await openPage(ctx, file, state);
	const drawn = await page.evaluate(() => document.querySelectorAll('.fg-frame').length);
	const nodes = await page.evaluate(() => window.FLAME_DATA.nodes.length / 3);
	check(nodes > 100000, file + ': big tree has over 100k frames (' + nodes + ')');
	check(drawn < nodes / 4, file + ': only visible frames drawn (' + drawn + ' of ' + nodes + ')');
	check(state.loadMs < 15000, file + ': loaded and drawn in ' + state.loadMs + ' ms');
	const full = (await svgWidth(page)) - 20;
	const fs0 = await frames(page);
	const mod = fs0.find((f) => f.name.startsWith('module_') && f.width > 3);
	const t0 = Date.now();
	if (mod) await page.mouse.click(mod.cx, mod.cy);
	const zoomMs = Date.now() - t0;
	const fz = await frames(page);
	const zm = mod && fz.find((f) => f.name === mod.name);
	check(zm && Math.abs(zm.width - full) < 1 && zm.label === mod.name,
		file + ': zoomed module is full width with its full label');
	check(fz.filter((f) => f.name.startsWith('function_')).length >= 150,
		file + ': zoom into a module shows its functions');
	check(zoomMs < 5000, file + ': zoom took ' + zoomMs + ' ms');
	console.log(file + ': ' + nodes + ' frames, ' + drawn + ' drawn, load ' + state.loadMs + ' ms, zoom ' + zoomMs + ' ms');
	await page.screenshot({ path: path.join(outDir, 'flame-' + path.basename(file).replace('.', '-') + '.png') });
	await page.close();
}

async function testPruned(ctx, file, state) {
	const page = await openPage(ctx, file, state);
	const sub = await text(page, '.fg-subtitle');
	const nodes = await page.evaluate(() => window.FLAME_DATA.nodes.length / 3);
	check(nodes < 1000 && /^[\d,]+ frames under .* each not drawn/.test(sub),
		file + ': pruned tree (' + nodes + ' frames) says so: ' + sub);
	await page.close();
}

async function main() {
	const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'flightrec-chromium-'));
	const state = { errors: [], requests: [], dialogs: [], answer: null, blocked: 0, loadMs: 0 };
	let ctx;
	try {
		ctx = await chromium.launchPersistentContext(profile, {
			executablePath: CHROMIUM,
			headless: true,
			viewport: { width: 1280, height: 900 },
			args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
				'--disable-background-networking', '--disable-component-update', '--disable-sync'],
		});
		await ctx.route('**/*', (route) => {
			if (route.request().url().startsWith('file:')) return route.continue();
			state.blocked++;
			return route.abort();
		});
		await testSmall(ctx, 'small.svg', state);
		await testSmall(ctx, 'small.html', state);
		await testBig(ctx, 'big.html', state);
		await testBig(ctx, 'big.svg', state);
		await testPruned(ctx, 'pruned.html', state);
	} finally {
		if (ctx) await ctx.close();
		fs.rmSync(profile, { recursive: true, force: true });
	}
	check(state.errors.length === 0, 'no console errors: ' + JSON.stringify(state.errors));
	check(state.requests.length === 0 && state.blocked === 0,
		'no network requests: ' + JSON.stringify(state.requests) + ', blocked ' + state.blocked);
	const alerts = state.dialogs.filter((d) => !d.startsWith('prompt'));
	check(alerts.length === 0, 'no alert dialogs: ' + JSON.stringify(alerts));
	console.log('browser.flame: ' + passes + ' checks passed, ' + failures + ' failed; screenshots in ' + path.resolve(outDir));
	process.exit(failures ? 1 : 0);
}

main().catch((e) => {
	console.error('browser.flame: ' + (e && e.stack ? e.stack : e));
	process.exit(1);
});
