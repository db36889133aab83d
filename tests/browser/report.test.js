#!/usr/bin/env node
/* Browser test of the HTML report (out_report.c + analyzer/web/report.js):
 * make_report_trace writes synthetic traces, `flightrec-analyze report`
 * turns them into pages, and the system's headless Chromium opens them from
 * file:// with every non-file request aborted and counted.  Checks what a
 * user sees: no console errors, no network requests, the sections for the
 * data recorded (and "no ... in this trace" for the others), the drops
 * warning, a click on a flame frame zooms, the process selector switches
 * graphs, and hostile names render as text (no alert, no injected element).
 * The models trace has every model section: GPU memory (in-use chart, the
 * slider moves the instant of the in-use flame graph), CUDA (self time,
 * pinned/pageable copies, async-then-sync), stragglers (verdict, rank x step
 * heatmap) and RDMA (connections, latency chart).
 * What to fix first: the findings trace (test_analyzer_findings_trace.h)
 * shows its three findings in cost order (host_sync 36.84 ms, launch_bound
 * 14.25 ms, pageable_copy 10 ms), each with its kind, cost, per step,
 * share and the fix `findings --json` gives; the healthy trace says no
 * finding is above the threshold (and names what is under it).
 * Screenshots land in OUTDIR (report.png, report-zoomed.png, hostile.png,
 * models.png, models-memory.png, models-stragglers.png, models-rdma.png,
 * findings.png, findings-healthy.png).
 *
 * Not for: the numbers (tests/unit/test_analyzer_report.c) or downloading
 * browsers: exits 77 (ctest SKIP) without /usr/bin/chromium (or
 * $FLIGHTREC_CHROMIUM) or node_modules/playwright-core.
 *
 * usage: node report.test.js MAKE_REPORT_TRACE FLIGHTREC_ANALYZE OUTDIR */
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');

const SKIP = 77;
const CHROMIUM = process.env.FLIGHTREC_CHROMIUM || '/usr/bin/chromium';
const HOSTILE = '<img src=x onerror=alert(1)>';

function skip(why) {
	console.log('browser.report: SKIP: ' + why);
	process.exit(SKIP);
}

const [makeTrace, analyze, outDir] = process.argv.slice(2);
if (!makeTrace || !analyze || !outDir) {
	console.error('usage: node report.test.js MAKE_REPORT_TRACE FLIGHTREC_ANALYZE OUTDIR');
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
execFileSync(makeTrace, [outDir], { stdio: 'inherit' });
for (const name of ['report', 'hostile', 'models', 'findings', 'healthy'])
	execFileSync(analyze, ['report', path.join(outDir, name + '.frec'), '-o', path.join(outDir, name + '.html')],
		{ stdio: 'inherit' });
/* what the CLI says of the findings trace: the page must show the same */
const findingsJson = JSON.parse(execFileSync(analyze, ['findings', path.join(outDir, 'findings.frec'), '--json'],
	{ encoding: 'utf8' }));

async function openPage(ctx, file, state) {
	const page = await ctx.newPage();
	page.on('console', (m) => { if (m.type() === 'error') state.errors.push(file + ': console: ' + m.text()); });
	page.on('pageerror', (e) => state.errors.push(file + ': pageerror: ' + e));
	page.on('request', (r) => { if (!r.url().startsWith('file:')) state.requests.push(r.url()); });
	page.on('dialog', async (d) => { state.dialogs.push(d.type() + ': ' + d.message()); await d.dismiss(); });
	await page.goto('file://' + path.resolve(outDir, file));
	await page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
	await page.waitForSelector('#cpu .fg-frame', { timeout: 20000 });
	return page;
}

function frameCenters() {
	return Array.from(document.querySelectorAll('#cpu .fg-frame')).filter((g) => g.getBoundingClientRect().width > 0)
		.map((g) => {
			const r = g.querySelector('rect').getBoundingClientRect(), t = g.querySelector('text');
			return { label: t ? t.textContent : '', cx: r.left + r.width / 2, cy: r.top + r.height / 2, w: r.width };
		});
}

async function testReport(ctx, state) {
	const page = await openPage(ctx, 'report.html', state);
	const info = await page.evaluate(() => {
		const text = (id) => { const e = document.getElementById(id); return e ? e.textContent : null; };
		return {
			ids: Array.from(document.querySelectorAll('section.fr-section')).map((s) => s.id),
			h1: document.querySelector('h1').textContent,
			drops: document.querySelector('.fr-drops') ? document.querySelector('.fr-drops').textContent : null,
			mem: text('gpu-memory'), strag: text('stragglers'), rdma: text('rdma'),
			cuda: text('cuda'), copies: text('copies'), sys: text('syscalls'), findings: text('findings'),
			options: Array.from(document.querySelectorAll('#fr-cpu-select option')).map((o) => o.textContent),
			navLinks: document.querySelectorAll('.fr-nav a').length,
			bars: document.querySelectorAll('#syscalls .fr-bar').length,
			cudaTimeFrames: document.querySelectorAll('#fr-cuda-time .fg-frame').length,
			cudaTimeNames: ((JSON.parse(document.getElementById('fr-data').textContent).cuda || {})
				.time_tree || { names: [] }).names.join('\n'),
		};
	});
	check(JSON.stringify(info.ids) === JSON.stringify(['summary', 'findings', 'cpu', 'gpu-memory', 'cuda', 'copies',
		'stragglers', 'rdma', 'syscalls']), 'sections in order: ' + JSON.stringify(info.ids));
	/* the CUDA-time flame graph in the CUDA section, the calls as leaves */
	check(info.cudaTimeFrames > 0 && info.cuda.includes('Time in CUDA API calls per stack') &&
		info.cudaTimeNames.includes('cudaMemcpy') && info.cudaTimeNames.includes('cudaLaunchKernel'),
		'cuda time graph: ' + info.cudaTimeFrames + ' ' + info.cudaTimeNames.slice(0, 300));
	check(info.h1.startsWith('flightrec report: python train.py'), 'title: ' + info.h1);
	check(info.drops && info.drops.includes('Dropped events: 3'), 'drops warning visible: ' + info.drops);
	check(info.mem.includes('No CUDA allocation events in this trace'), 'gpu memory says why: ' + info.mem);
	check(info.strag.includes('No NCCL events in this trace'), 'stragglers says why');
	check(info.rdma.includes('No RDMA events in this trace'), 'rdma says why');
	check(info.cuda.includes('cudaMemcpy') && info.cuda.includes('cudaLaunchKernel'), 'cuda table');
	check(info.copies.includes('H2D') && info.copies.includes('3.0 MiB'), 'copies table: ' + info.copies);
	check(info.sys.includes('read') && info.bars === 2, 'syscalls chart and table');
	check(info.options.length === 3 && info.options[0] === 'all processes', 'process selector: ' + JSON.stringify(info.options));
	check(info.navLinks === 9, 'navigation links');
	/* what to fix first: this trace's GPU never waits long enough */
	check(info.findings.includes('What to fix first') && info.findings.includes('No finding above 3% of wall time'),
		'findings section says none: ' + info.findings);
	await page.screenshot({ path: path.join(outDir, 'report.png'), fullPage: true });

	/* click a frame: it zooms (the flame graph scrolled into view first) */
	await page.evaluate(() => document.getElementById('cpu').scrollIntoView());
	const fs0 = await page.evaluate(frameCenters);
	const workA = fs0.find((f) => f.label === 'work_a');
	check(!!workA, 'work_a frame drawn: ' + JSON.stringify(fs0.map((f) => f.label)));
	if (workA) {
		await page.mouse.click(workA.cx, workA.cy);
		const zoom = await page.evaluate(() => document.querySelector('#cpu .fg-svg').getAttribute('data-zoom'));
		check(zoom !== '0', 'click zooms (data-zoom ' + zoom + ')');
		const fz = await page.evaluate(frameCenters);
		const z = fz.find((f) => f.label === 'work_a');
		check(z && z.w > workA.w * 1.2, 'zoomed frame wider (' + (z && z.w) + ' vs ' + workA.w + ')');
		await page.screenshot({ path: path.join(outDir, 'report-zoomed.png'), fullPage: true });
		await page.keyboard.press('Escape');
		const unz = await page.evaluate(() => document.querySelector('#cpu .fg-svg').getAttribute('data-zoom'));
		check(unz === '0', 'Escape over the graph unzooms');
	}
	/* the selector switches to another process's graph */
	await page.selectOption('#fr-cpu-select', '2');
	const shown = await page.evaluate(() => {
		const boxes = Array.from(document.querySelectorAll('#cpu .fr-flame')).filter((b) => b.style.display !== 'none');
		return boxes.length === 1 ? boxes[0].querySelector('.fg-title').textContent : null;
	});
	check(shown && shown.includes('loader (pid 200)'), 'selector shows the loader graph: ' + shown);
	/* search in the graph */
	await page.selectOption('#fr-cpu-select', '0');
	const input = await page.$('#cpu .fr-flame:not([style*="none"]) input[type=search]');
	await input.fill('work_');
	const matched = await page.evaluate(() => Array.from(document.querySelectorAll('#cpu .fg-matched'))
		.map((e) => e.textContent).filter((t) => t).join());
	check(matched.startsWith('Matched: '), 'search matches: ' + matched);
	await page.close();
}

async function testHostile(ctx, state) {
	const page = await openPage(ctx, 'hostile.html', state);
	await page.waitForTimeout(300);
	const dom = await page.evaluate(() => ({
		imgs: document.getElementsByTagName('img').length,
		bold: document.getElementsByTagName('b').length,
		handlers: Array.from(document.querySelectorAll('*')).filter((e) =>
			e.hasAttribute('onerror') || e.hasAttribute('onload')).length,
		scripts: document.getElementsByTagName('script').length,
		procs: document.getElementById('summary').textContent,
		labels: Array.from(document.querySelectorAll('#cpu .fg-frame text')).map((t) => t.textContent),
		options: Array.from(document.querySelectorAll('#fr-cpu-select option')).map((o) => o.textContent),
	}));
	check(dom.imgs === 0 && dom.bold === 0 && dom.handlers === 0 && dom.scripts === 3,
		'no element injected: ' + JSON.stringify({ imgs: dom.imgs, bold: dom.bold, handlers: dom.handlers, scripts: dom.scripts }));
	check(dom.procs.includes('evil ' + HOSTILE), 'hostile command line shown as text');
	check(dom.options.some((o) => o.includes('evil</script>')), 'hostile comm shown as text in the selector');
	/* the hostile process is the busiest: its graph is one option away */
	const idx = dom.options.findIndex((o) => o.includes('evil</script>'));
	await page.selectOption('#fr-cpu-select', String(idx));
	const labels = await page.evaluate(() => Array.from(document.querySelectorAll('#cpu .fr-flame'))
		.filter((b) => b.style.display !== 'none')
		.flatMap((b) => Array.from(b.querySelectorAll('.fg-frame text')).map((t) => t.textContent)));
	check(labels.includes(HOSTILE), 'hostile frame label literal: ' + JSON.stringify(labels));
	await page.screenshot({ path: path.join(outDir, 'hostile.png'), fullPage: true });
	await page.close();
}

async function testModels(ctx, state) {
	const page = await openPage(ctx, 'models.html', state);
	const info = await page.evaluate(() => {
		const text = (id) => { const e = document.getElementById(id); return e ? e.textContent : ''; };
		return {
			mem: text('gpu-memory'), cuda: text('cuda'), copies: text('copies'), strag: text('stragglers'),
			rdma: text('rdma'),
			chart: document.querySelectorAll('#gpu-memory svg.fr-linechart path.fr-line').length,
			memFlames: document.querySelectorAll('#gpu-memory .fr-flame').length,
			slider: document.getElementById('fr-mem-slider') ? Number(document.getElementById('fr-mem-slider').max) : -1,
			cells: document.querySelectorAll('#stragglers svg.fr-heatmap rect.fr-cell').length,
			verdict: text('fr-verdict'),
			latency: document.querySelectorAll('#rdma svg.fr-latency rect.fr-range').length,
		};
	});
	check(info.mem.includes('Peak in use') && info.mem.includes('3.4 KiB'), 'gpu memory peak card: ' + info.mem.slice(0, 200));
	check(info.chart === 1, 'in-use chart drawn (' + info.chart + ' lines)');
	check(info.slider === 19, 'slider over 20 instants (max ' + info.slider + ')');
	check(info.memFlames >= 3, 'in-use, peak and alloc flame graphs (' + info.memFlames + ')');
	check(info.mem.includes('work_a <- main') && info.mem.includes('cudaErrorMemoryAllocation'),
		'top stack at the peak and the failed allocation');
	check(info.cuda.includes('Self time') && info.cuda.includes('cudaMemcpyAsync'), 'cuda model table');
	check(info.copies.includes('pageable') && info.copies.includes('async') &&
		info.copies.includes('followed within'), 'copies pinned/pageable and async-then-sync: ' + info.copies.slice(0, 300));
	check(info.verdict.includes('Straggler: rank 2'), 'straggler verdict: ' + info.verdict);
	check(info.cells === 80, 'heatmap cells: ' + info.cells);
	check(info.rdma.includes('RDMA_WRITE') && info.rdma.includes('trainer (pid 100)') && info.latency === 1,
		'rdma connection and latency chart: ' + info.latency);
	await page.screenshot({ path: path.join(outDir, 'models.png'), fullPage: true });

	/* the slider moves the instant: label, marker and graph change */
	const at = async () => page.evaluate(() => ({
		label: document.getElementById('fr-mem-instant').textContent,
		marker: document.querySelector('#gpu-memory .fr-marker').getAttribute('data-t'),
		shown: document.querySelector('#gpu-memory .fr-snapshot').getAttribute('data-t'),
	}));
	const before = await at();
	await page.$eval('#fr-mem-slider', (e) => { e.value = '0'; e.dispatchEvent(new Event('input')); });
	const first = await at();
	await page.$eval('#fr-mem-slider', (e) => { e.value = '19'; e.dispatchEvent(new Event('input')); });
	const last = await at();
	check(first.label !== last.label && first.marker !== last.marker && first.shown !== last.shown &&
		Number(last.shown) > Number(first.shown), 'slider moves the instant: ' + JSON.stringify([before, first, last]));
	await page.$eval('#fr-mem-slider', (e) => { e.value = '10'; e.dispatchEvent(new Event('input')); });
	const el = await page.$('#gpu-memory');
	await el.screenshot({ path: path.join(outDir, 'models-memory.png') });

	/* the heatmap switches to step time */
	await page.selectOption('#fr-heat-select', 'step');
	const shownHeat = await page.evaluate(() => ({
		shown: document.querySelector('#stragglers .fr-heat').getAttribute('data-shown'),
		cells: document.querySelectorAll('#stragglers svg.fr-heatmap rect.fr-cell').length,
	}));
	check(shownHeat.shown === 'step' && shownHeat.cells === 80, 'step-time heatmap: ' + JSON.stringify(shownHeat));
	await (await page.$('#stragglers')).screenshot({ path: path.join(outDir, 'models-stragglers.png') });
	await (await page.$('#rdma')).screenshot({ path: path.join(outDir, 'models-rdma.png') });
	await page.close();
}

/* The findings section as a user sees it: each finding's box in page order. */
function findingBoxes() {
	const text = (e, sel) => { const x = e.querySelector(sel); return x ? x.textContent : null; };
	const card = (box, label) => {
		const c = Array.from(box.querySelectorAll('.fr-card')).find((k) => k.querySelector('.fr-k').textContent === label);
		return c ? { v: c.getAttribute('data-v'), shown: c.querySelector('.fr-v').textContent } : null;
	};
	const sec = document.getElementById('findings');
	return {
		title: text(sec, 'h2'),
		none: text(sec, '.fr-findings-none'),
		below: text(sec, '.fr-findings-below'),
		notEvaluated: text(sec, '#fr-findings-not-evaluated'),
		idleTable: text(sec, '#fr-findings-idle'),
		boxes: Array.from(sec.querySelectorAll('#fr-findings-list .fr-finding-item')).map((b) => ({
			kind: b.getAttribute('data-kind'),
			heading: text(b, 'h3'),
			n: text(b, '.fr-finding-n'),
			shownKind: text(b, '.fr-finding-kind'),
			cost: card(b, 'GPU idle'), perStep: card(b, 'Per step'), share: card(b, 'Share'),
			procs: card(b, 'Processes'),
			where: text(b, '.fr-where span'),
			fix: text(b, '.fr-fix span'),
			visible: b.getBoundingClientRect().height > 0,
		})),
	};
}

async function testFindings(ctx, state) {
	const page = await openPage(ctx, 'findings.html', state);
	const f = await page.evaluate(findingBoxes);
	const want = [['host_sync', 36.84], ['launch_bound', 14.25], ['pageable_copy', 10]];
	check(f.title === 'What to fix first', 'findings section title: ' + f.title);
	check(f.none === null, 'findings trace: no "no finding" line: ' + f.none);
	check(JSON.stringify(f.boxes.map((b) => b.kind)) === JSON.stringify(want.map((w) => w[0])),
		'findings in cost order: ' + JSON.stringify(f.boxes.map((b) => b.kind)));
	const costs = f.boxes.map((b) => (b.cost ? Number(b.cost.v) : NaN));
	check(costs.every((c, i) => i === 0 || c <= costs[i - 1]), 'costs descend: ' + JSON.stringify(costs));
	f.boxes.forEach((b, i) => {
		const w = want[i] || [], cli = findingsJson.findings[i] || {};
		check(b.visible && b.n === (i + 1) + '. ' && b.shownKind === w[0], 'finding ' + (i + 1) + ' numbered, kind shown: ' + b.heading);
		check(b.heading.includes('— ') && !b.heading.endsWith('— ' + w[0]), 'finding ' + (i + 1) + ' has a title: ' + b.heading);
		check(b.cost && Math.abs(Number(b.cost.v) - w[1]) < 1e-9 && b.cost.shown === w[1].toFixed(3) + ' ms',
			'finding ' + (i + 1) + ' cost ' + w[1] + ' ms: ' + JSON.stringify(b.cost));
		check(b.perStep && Number(b.perStep.v) === cli.cost_ms_per_step && b.share && Number(b.share.v) === cli.share,
			'finding ' + (i + 1) + ' per step and share as the CLI: ' + JSON.stringify([b.perStep, b.share]));
		check(b.fix && b.fix === cli.fix && b.fix.length > 40, 'finding ' + (i + 1) + ' fix as the CLI: ' + b.fix);
		check(b.where === cli.where.join(' → '), 'finding ' + (i + 1) + ' where: ' + b.where);
	});
	check(f.boxes.length === 3 && f.boxes[1].fix.startsWith('issue fewer, larger kernels') &&
		f.boxes[1].where.includes('run_small_ops') && f.boxes[1].procs.shown === '1 (pid 510)',
		'launch_bound: its fix, culprit and process');
	check(f.boxes.length === 3 && f.boxes[2].fix.includes('pin_memory=True'), 'pageable_copy fix');
	check(f.idleTable && f.idleTable.includes('500') && f.idleTable.includes('510') && f.idleTable.includes('40.000 ms'),
		'GPU idle per process: ' + f.idleTable);
	// the trace has no kernel records: its idle is labelled a bound
	check(f.idleTable.includes('host signals (an upper bound)') && !f.idleTable.includes('measured'),
		'GPU idle per process says where it was read from: ' + f.idleTable);
	check(f.notEvaluated && f.notEvaluated.includes('small_batch'), 'small_batch listed as not evaluated');
	await (await page.$('#findings')).screenshot({ path: path.join(outDir, 'findings.png') });
	await page.close();

	const healthy = await openPage(ctx, 'healthy.html', state);
	const h = await healthy.evaluate(findingBoxes);
	check(h.boxes.length === 0, 'healthy: no finding box: ' + h.boxes.length);
	check(h.none === 'No finding above 3% of wall time.', 'healthy: says no finding: ' + h.none);
	check(h.below && h.below.includes('host_sync 1.0 ms (2.0%)'), 'healthy: what is under the threshold: ' + h.below);
	await (await healthy.$('#findings')).screenshot({ path: path.join(outDir, 'findings-healthy.png') });
	await healthy.close();
}

async function main() {
	const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'flightrec-chromium-'));
	const state = { errors: [], requests: [], dialogs: [], blocked: 0 };
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
		await testReport(ctx, state);
		await testHostile(ctx, state);
		await testModels(ctx, state);
		await testFindings(ctx, state);
	} finally {
		if (ctx) await ctx.close();
		fs.rmSync(profile, { recursive: true, force: true });
	}
	check(state.errors.length === 0, 'no console errors: ' + JSON.stringify(state.errors));
	check(state.requests.length === 0 && state.blocked === 0,
		'no network requests: ' + JSON.stringify(state.requests) + ', blocked ' + state.blocked);
	check(state.dialogs.length === 0, 'no dialogs: ' + JSON.stringify(state.dialogs));
	console.log('browser.report: ' + passes + ' checks passed, ' + failures + ' failed; screenshots in ' + path.resolve(outDir));
	process.exit(failures ? 1 : 0);
}

main().catch((e) => {
	console.error('browser.report: ' + (e && e.stack ? e.stack : e));
	process.exit(1);
});
