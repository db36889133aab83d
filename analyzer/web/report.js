/* flightrec report renderer.
 *
 * For: drawing the report from the JSON that out_report.c writes into
 * <script type="application/json" id="fr-data">: summary and warnings,
 * what to fix first (the findings),
 * CPU flame graphs (one per process plus "all", through the one flame
 * renderer, flame.js, which out_report.c wraps as window.FR_FLAME_MOUNT),
 * tables and small inline-SVG charts (report_ui.js draws them; this file
 * says what goes where).  One function per section, each fed by
 * one member of the data; a member that is null means the trace (or this
 * build) has no such data, and the section says so instead of guessing.
 *
 * Not for: fetching anything (the report must work offline from disk; the
 * page's CSP forbids every request) or parsing markup: every string from
 * the trace is placed with textContent or setAttribute, never innerHTML.
 * Embedded at build time (analyzer/embed.cmake), so it must never contain
 * the byte sequences that end an HTML script element; the build checks.
 */
(function () {
	'use strict';
	var UI = window.FR_REPORT_UI;
	var el = UI.el, svgEl = UI.svgEl, commas = UI.commas, fmtNs = UI.fmtNs, fmtBytes = UI.fmtBytes,
		table = UI.table, barChart = UI.barChart, lineChart = UI.lineChart,
		mountFlame = UI.mountFlame, flames = UI.flames;
	var root = document.getElementById('fr-root');
	var D;
	try {
		D = JSON.parse(document.getElementById('fr-data').textContent);
	} catch (e) {
		root.textContent = 'This report\u2019s data could not be read: ' + e;
		return;
	}

	/* ---- helpers ---- */
	function section(id, title) {
		var s = el('section', 'fr-section', null, root);
		s.id = id;
		el('h2', null, title, s);
		nav.push([id, title]);
		return s;
	}
	function empty(parent, text) {
		return el('p', 'fr-empty', text, parent);
	}

	/* ---- sections ---- */
	var nav = [];
	var S = D.summary || { files: [], processes: [] };
	var P = D.presence || {};

	function renderHeader() {
		var h = el('header', 'fr-header', null, root);
		el('h1', null, D.title || 'flightrec report', h);
		var files = S.files || [];
		var sub = files.length === 1 ? files[0].path + ', recorded ' + files[0].start
			: files.length + ' trace files';
		el('span', 'fr-sub', sub, h);
	}

	function renderWarnings() {
		(S.files || []).forEach(function (f) {
			var drops = 0, probes = [], stackless = 0, stackWhy = [];
			(f.drops || []).forEach(function (p) {
				if (p.drops > 0) { drops += p.drops; probes.push(p.probe + ' ' + commas(p.drops)); }
			});
			function why(l) {
				return l.probe + ' ' + commas(l.count) + ' ' + l.reason +
					(l.first_s === null ? '' : ' at ' + l.first_s.toFixed(3) + '-' + l.last_s.toFixed(3) + ' s');
			}
			if ((f.losses || []).length) {
				probes = [];
				f.losses.forEach(function (l) {
					if (l.lost === 'event') probes.push(why(l));
					else { stackless += l.count; stackWhy.push(why(l)); }
				});
			}
			if (drops > 0) {
				el('div', 'fr-warn fr-drops', 'Dropped events: ' + commas(drops) + ' in ' + f.path +
					' (' + probes.join(', ') + '). Counts and graphs below miss these events.', root);
			}
			if (stackless > 0) {
				el('div', 'fr-warn fr-stackless', 'Events without their stack: ' + commas(stackless) +
					' in ' + f.path + ' (' + stackWhy.join(', ') + '). They are counted under [no stack].', root);
			}
			if (f.damaged_regions > 0 || f.malformed_records > 0) {
				el('div', 'fr-warn fr-bad fr-damage', 'Damaged trace: ' + f.path + ': ' +
					f.damaged_regions + ' damaged region(s), ' + f.malformed_records +
					' malformed record(s); what they held is missing below.', root);
			}
			if (!f.complete) {
				el('div', 'fr-warn fr-incomplete', 'Incomplete trace: ' + f.path + ': ' + f.status +
					'. Everything that was read is analyzed.', root);
			}
		});
	}

	function card(parent, k, v, alert) {
		var c = el('div', 'fr-card' + (alert ? ' fr-alert' : ''), null, parent);
		el('div', 'fr-k', k, c);
		el('div', 'fr-v', v, c);
		return c;
	}

	function renderSummary() {
		var s = section('summary', 'Summary');
		var files = S.files || [], procs = S.processes || [];
		var hosts = {}, ranks = {}, nRanks = 0, events = 0, dur = 0, drops = 0, damage = 0;
		files.forEach(function (f) {
			hosts[f.host] = 1;
			events += f.events;
			if (f.duration_ns > dur) dur = f.duration_ns;
			(f.drops || []).forEach(function (p) { drops += p.drops; });
			damage += f.damaged_regions + f.malformed_records + (f.complete ? 0 : 1);
		});
		procs.forEach(function (p) { if (p.rank !== null && !ranks[p.rank]) { ranks[p.rank] = 1; nRanks++; } });
		var cards = el('div', 'fr-cards', null, s);
		card(cards, 'Hosts', Object.keys(hosts).length);
		card(cards, 'Ranks', nRanks ? nRanks : 'unknown');
		card(cards, 'Processes', procs.length);
		card(cards, 'Duration', fmtNs(dur));
		card(cards, 'Events', commas(events));
		card(cards, 'Dropped', commas(drops), drops > 0);
		card(cards, 'Damage', damage ? damage + ' problem(s)' : 'none', damage > 0);
		el('h3', null, 'Trace files', s);
		table(s, [
			{ title: 'File', key: 'path', wrap: true },
			{ title: 'Host', key: 'host' },
			{ title: 'Start (UTC)', key: 'start' },
			{ title: 'Duration', key: 'duration_ns', num: true, fmt: fmtNs },
			{ title: 'Events', key: 'events', num: true, fmt: commas },
			{ title: 'Status', key: 'status' },
			{ title: 'Ran in', key: 'ran_in', wrap: true },
			{ title: 'Command', key: 'command', wrap: true }
		], files);
		el('h3', null, 'Processes', s);
		if (!procs.length) empty(s, 'No process records in this trace.');
		else table(s, [
			{ title: 'Rank', key: 'rank', num: true },
			{ title: 'Host', key: 'host' },
			{ title: 'PID', key: 'pid', num: true },
			{ title: 'PPID', key: 'ppid', num: true },
			{ title: 'Threads', key: 'threads', num: true },
			{ title: 'Comm', key: 'comm' },
			{ title: 'Command', key: 'cmdline', wrap: true }
		], procs);
	}

	/* What to fix first: D.findings is `findings --json`'s object (costed
	 * findings in the CLI's order, then those without an idle cost; GPU
	 * idle per process and its unexplained part; kinds not evaluated). */
	var KIND_TITLE = {
		dataloader: 'Data loading on the training thread', pageable_copy: 'Copies from pageable memory',
		sync_checkpoint: 'Checkpoint saved on the training thread', host_sync: 'Host work after a synchronize',
		launch_bound: 'Kernels launched slower than the GPU runs them',
		nccl_exchange: 'Collectives exchanging data on the critical path',
		straggler: 'Straggler rank', oom: 'Out of device memory', memory_leak: 'Device memory leak',
		rdma_errors: 'RDMA errors'
	};
	function fmtMs(v) { return v === null || v === undefined ? '\u2014' : v.toFixed(1) + ' ms'; }
	function renderFindings() {
		var s = section('findings', 'What to fix first');
		var F = D.findings;
		if (!F) { empty(s, 'The findings model did not run.'); return; }
		var minPct = Math.round(100 * F.min_share);
		el('p', 'fr-note', 'Each cause of GPU idle, costed in GPU-idle time summed over its processes, per step ' +
			'(' + F.steps + ' step' + (F.steps === 1 ? '' : 's') + ', from ' + F.steps_from + ') and as a share of ' +
			'wall time (' + fmtMs(F.wall_ms) + ') \u00d7 processes; causes under ' + minPct + '% are not listed.', s);
		var list = el('div', 'fr-findings', null, s);
		list.id = 'fr-findings-list';
		var all = (F.findings || []).filter(function (f) { return f.cost_ms !== null; })
			.concat((F.findings || []).filter(function (f) { return f.cost_ms === null; }));
		if (!all.length) {
			el('p', 'fr-ok fr-findings-none', 'No finding above ' + minPct + '% of wall time.', list);
		}
		all.forEach(function (f, i) {
			var box = el('div', 'fr-finding fr-finding-item' + (f.cost_ms === null ? ' fr-nocost' : ' fr-warn'), null, list);
			box.setAttribute('data-kind', f.kind);
			var h = el('h3', null, null, box);
			el('span', 'fr-finding-n', (i + 1) + '. ', h);
			el('span', 'fr-finding-kind', f.kind, h);
			el('span', null, ' \u2014 ' + (KIND_TITLE[f.kind] || f.kind), h);
			var cards = el('div', 'fr-cards', null, box);
			if (f.cost_ms !== null) {
				card(cards, 'GPU idle', f.cost_ms.toFixed(3) + ' ms').setAttribute('data-v', String(f.cost_ms));
				card(cards, 'Per step', f.cost_ms_per_step.toFixed(3) + ' ms').setAttribute('data-v', String(f.cost_ms_per_step));
				card(cards, 'Share', (100 * f.share).toFixed(2) + '%').setAttribute('data-v', String(f.share));
			} else {
				card(cards, 'GPU idle', 'no idle cost');
			}
			/* a count first, then who: a bare pid reads as a count */
			card(cards, 'Processes', f.pids.length + ' (pid' + (f.pids.length === 1 ? ' ' : 's ') +
				f.pids.join(', ') + (f.ranks.length ? '; rank' + (f.ranks.length === 1 ? ' ' : 's ') +
				f.ranks.join(', ') : '') + ')');
			if (f.where.length) {
				var w = el('div', 'fr-evidence fr-where', null, box);
				el('strong', null, 'Where (root first): ', w);
				el('span', null, f.where.join(' \u2192 '), w);
			}
			var ev = el('div', 'fr-evidence', null, box);
			el('strong', null, 'Evidence: ', ev);
			el('span', null, f.evidence, ev);
			var fx = el('div', 'fr-evidence fr-fix', null, box);
			el('strong', null, 'Fix: ', fx);
			el('span', null, f.fix, fx);
		});
		var idle = F.gpu_idle_ms || {}, unexp = F.unexplained_ms || {}, streams = F.streams || {};
		var from = F.gpu_time_from || {};
		var pids = Object.keys(idle);
		el('h3', null, 'GPU idle per process', s);
		if (!pids.length) empty(s, 'No process drove a GPU (no CUDA synchronizes or launches in this trace).');
		else {
			var procs = S.processes || [];
			table(s, [
				{ title: 'PID', key: 'pid', num: true },
				{ title: 'Process', key: 'comm' },
				{ title: 'GPU idle', key: 'idle_ms', num: true, fmt: function (v) { return v.toFixed(3) + ' ms'; } },
				{ title: 'Of wall', key: 'idle_share', num: true, fmt: function (v) { return (100 * v).toFixed(1) + '%'; } },
				{ title: 'Unexplained', key: 'unexplained_ms', num: true, fmt: function (v) { return v.toFixed(3) + ' ms'; } },
				{ title: 'Streams', key: 'streams', num: true },
				/* kernel records measure idle; host signals only bound it */
				{ title: 'Read from', key: 'from' }
			], pids.map(function (p) {
				var pr = null;
				procs.forEach(function (x) { if (String(x.pid) === p && !pr) pr = x; });
				return { pid: Number(p), comm: pr ? pr.comm : null, idle_ms: idle[p],
					idle_share: F.wall_ms > 0 && idle[p] !== null ? idle[p] / F.wall_ms : null,
					unexplained_ms: unexp[p], streams: streams[p] === undefined ? null : streams[p],
					from: from[p] === 'kernels' ? 'GPU kernel records (measured)' :
						'host signals (an upper bound)' };
			})).id = 'fr-findings-idle';
		}
		if ((F.below || []).length) {
			el('p', 'fr-note fr-findings-below', 'Under ' + minPct + '% (not findings): ' + F.below.map(function (b) {
				return b.kind + ' ' + fmtMs(b.cost_ms) + ' (' + (100 * b.share).toFixed(1) + '%)';
			}).join(', ') + '.', s);
		}
		if ((F.not_evaluated || []).length) {
			el('h3', null, 'Not evaluated', s);
			table(s, [
				{ title: 'Kind', key: 'kind' },
				{ title: 'Why', key: 'why', wrap: true }
			], F.not_evaluated).id = 'fr-findings-not-evaluated';
		}
	}

	function renderCpu() {
		var s = section('cpu', 'CPU flame graph');
		var c = D.cpu;
		if (!c || !c.trees || !c.trees.length) {
			empty(s, 'No CPU samples in this trace (was the cpu probe attached?).');
			return;
		}
		var ctl = el('div', 'fr-controls', null, s);
		el('label', null, 'Process: ', ctl);
		var sel = el('select', null, null, ctl);
		sel.id = 'fr-cpu-select';
		c.trees.forEach(function (t, i) {
			var o = el('option', null, t.label + (i ? ' \u2014 ' + commas(t.samples) + ' samples' : ''), sel);
			o.value = String(i);
		});
		if (c.left_out > 0) el('span', 'fr-note', c.left_out + ' more processes are only in "all processes".', ctl);
		el('span', 'fr-note', 'Click a frame to zoom, Escape or Reset to unzoom, type to search.', ctl);
		var hostDiv = el('div', null, null, s);
		var mounted = {};
		function show(i) {
			for (var k in mounted) mounted[k].box.style.display = 'none';
			if (!mounted[i]) mounted[i] = mountFlame(hostDiv, c.trees[i].data);
			else {
				mounted[i].box.style.display = '';
				mounted[i].resize.forEach(function (fn) { fn(); });
			}
			hostDiv.setAttribute('data-shown', String(i));
		}
		sel.addEventListener('change', function () { show(Number(sel.value)); });
		show(0);
	}

	function renderMem() {
		var s = section('gpu-memory', 'GPU memory');
		var m = D.mem;
		if (!m) {
			if (!P.cuda_alloc_events) empty(s, 'No CUDA allocation events in this trace.');
			else empty(s, commas(P.cuda_alloc_events) + ' CUDA allocation/free calls are in this trace, ' +
				'but the GPU memory model kept none of them.');
			return;
		}
		var cards = el('div', 'fr-cards', null, s);
		card(cards, 'Peak in use', fmtBytes(m.peak_bytes));
		card(cards, 'Peak at', (m.peak_t_ns / 1e9).toFixed(3) + ' s');
		card(cards, 'Allocations', commas(m.device_allocs));
		card(cards, 'In use at end', fmtBytes(m.leak_bytes) + ' (' + commas(m.leak_count) + ')', m.leak_bytes > 0);
		card(cards, 'Failed allocations', commas(m.failures), m.failures > 0);
		var series = (m.series || []).filter(function (x) { return x.points; });
		var caching = (m.series || []).some(function (x) { return x.caching; });
		if (caching) el('p', 'fr-note', 'A caching allocator (e.g. PyTorch\u2019s) holds what it allocates: ' +
			'these numbers are reserved segments, and memory still in use at the end is cached, not leaked.', s);
		if (m.files > 1) el('p', 'fr-note', 'Times are seconds from the start of each file\u2019s recording; ' +
			'each file has its own peak.', s);
		el('h3', null, 'Device memory in use over time', s);
		var chart = null;
		if (series.length) chart = lineChart(s, series, m.files === 1 ? m.peak_t_ns : null);
		else empty(s, 'No device memory series.');

		var snaps = (m.snapshots || []);
		el('h3', null, 'In use by stack at an instant', s);
		if (!snaps.length) {
			empty(s, 'No in-use snapshots.');
		} else {
			var ctl = el('div', 'fr-controls', null, s);
			el('label', null, 'Instant: ', ctl);
			var slider = el('input', null, null, ctl);
			slider.type = 'range';
			slider.id = 'fr-mem-slider';
			slider.min = '0';
			slider.max = String(snaps.length - 1);
			slider.step = '1';
			/* start at the snapshot nearest the peak */
			var start = 0;
			snaps.forEach(function (x, i) {
				if (Math.abs(x.t_ns - m.peak_t_ns) < Math.abs(snaps[start].t_ns - m.peak_t_ns)) start = i;
			});
			slider.value = String(start);
			var label = el('span', 'fr-mem-instant', '', ctl);
			label.id = 'fr-mem-instant';
			var snapHost = el('div', 'fr-snapshot', null, s);
			var mountedSnaps = {};
			var showSnap = function (i) {
				var x = snaps[i];
				label.textContent = 't = ' + (x.t_ns / 1e9).toFixed(3) + ' s: ' + fmtBytes(x.bytes) + ' in use';
				snapHost.setAttribute('data-t', String(x.t_ns));
				if (chart) chart.mark(x.t_ns);
				for (var k in mountedSnaps) mountedSnaps[k].style.display = 'none';
				if (!mountedSnaps[i]) {
					var box = el('div', null, null, snapHost);
					if (x.tree) mountFlame(box, x.tree);
					else empty(box, 'Nothing in use at this instant.');
					mountedSnaps[i] = box;
				} else {
					mountedSnaps[i].style.display = '';
					flames.forEach(function (f) {
						if (f.box.parentNode === mountedSnaps[i]) f.resize.forEach(function (fn) { fn(); });
					});
				}
			};
			slider.addEventListener('input', function () { showSnap(Number(slider.value)); });
			showSnap(start);
		}

		el('h3', null, 'Top stacks at the peak', s);
		var top = [];
		(m.series || []).forEach(function (x) {
			(x.top_at_peak || []).forEach(function (t) {
				top.push({ where: x.label, stack: t.stack, bytes: t.bytes, count: t.count });
			});
		});
		if (!top.length) empty(s, 'Nothing in use at the peak.');
		else table(s, [
			{ title: 'Process / device', key: 'where', wrap: true },
			{ title: 'Stack (leaf first)', key: 'stack', wrap: true },
			{ title: 'Bytes', key: 'bytes', num: true, fmt: fmtBytes }
		], top);
		if (m.peak_tree) {
			el('h3', null, 'In use at the peak (flame graph)', s);
			mountFlame(s, m.peak_tree);
		}
		if (m.alloc_tree) {
			el('h3', null, 'Bytes allocated by stack (whole run)', s);
			mountFlame(s, m.alloc_tree);
		}

		el('h3', null, 'Still in use at the end (leaks)', s);
		var leaks = [];
		(m.series || []).forEach(function (x) {
			(x.leaks || []).forEach(function (t) {
				leaks.push({ where: x.label, stack: t.stack, bytes: t.bytes, count: t.count });
			});
		});
		if (!leaks.length) empty(s, 'Every allocation was freed by the end of the recording.');
		else table(s, [
			{ title: 'Process / device', key: 'where', wrap: true },
			{ title: 'Stack (leaf first)', key: 'stack', wrap: true },
			{ title: 'Bytes', key: 'bytes', num: true, fmt: fmtBytes },
			{ title: 'Allocations', key: 'count', num: true, fmt: commas }
		], leaks);

		el('h3', null, 'Failed allocations', s);
		var failed = m.failed || [];
		if (!failed.length) empty(s, 'No allocation failed.');
		else {
			if (m.failures > failed.length) el('p', 'fr-note', 'The first ' + failed.length + ' of ' +
				commas(m.failures) + ' failures.', s);
			table(s, [
				{ title: 'At', key: 't_ns', num: true, fmt: function (v) { return (v / 1e9).toFixed(3) + ' s'; } },
				{ title: 'Process', key: 'process', wrap: true },
				{ title: 'Call', key: 'func' },
				{ title: 'Error', key: 'error' },
				{ title: 'Requested', key: 'bytes', num: true, fmt: fmtBytes },
				{ title: 'In use then', key: 'inuse_bytes', num: true, fmt: fmtBytes },
				{ title: 'Stack', key: 'stack', wrap: true },
				{ title: 'Top holder then', key: 'holder', wrap: true }
			], failed.map(function (x) {
				var r = {};
				for (var k in x) r[k] = x[k];
				r.holder = x.holders && x.holders.length ? fmtBytes(x.holders[0].bytes) + ': ' + x.holders[0].stack : null;
				return r;
			}));
		}
	}

	function renderCuda() {
		var s = section('cuda', 'CUDA API');
		var c = D.cuda;
		if (!c) { empty(s, 'No CUDA events in this trace.'); return; }
		el('p', 'fr-note', commas(c.events) + ' calls. Self time excludes CUDA calls nested inside ' +
			'(cudaMalloc around cuMemAlloc). Percentiles within 0.4%.', s);
		var cols = [
			{ title: 'Function', key: 'name' },
			{ title: 'Calls', key: 'calls', num: true, fmt: commas },
			{ title: 'Total time', key: 'total_ns', num: true, fmt: fmtNs },
			{ title: 'Self time', key: 'self_ns', num: true, fmt: fmtNs },
			{ title: 'Mean', key: 'mean_ns', num: true, fmt: fmtNs },
			{ title: 'p50', key: 'p50_ns', num: true, fmt: fmtNs },
			{ title: 'p99', key: 'p99_ns', num: true, fmt: fmtNs },
			{ title: 'Max', key: 'max_ns', num: true, fmt: fmtNs },
			{ title: 'Failed', key: 'failed', num: true, fmt: commas },
			{ title: 'Errors', key: 'errtext', wrap: true }
		];
		table(s, cols, c.funcs.map(function (f) {
			var r = {};
			for (var k in f) r[k] = f[k];
			r.mean_ns = f.calls ? f.total_ns / f.calls : 0;
			r.errtext = (f.errors || []).map(function (e) { return e.name + ' \u00d7' + commas(e.count); }).join(', ') || null;
			return r;
		}));
		if (c.time_tree) {
			el('h3', null, 'Time in CUDA API calls per stack', s);
			el('p', 'fr-note', 'Beside the CPU flame graph: where the threads waited in CUDA calls, the call ' +
				'as the leaf. ' + (c.launches ? commas(c.launches_with_stack) + ' of ' + commas(c.launches) +
				' kernel launches carry a stack (the recorder takes one launch in ' + c.launch_stack_every +
				'); the others are under [no stack].' : ''), s);
			var tb = el('div', null, null, s);
			tb.id = 'fr-cuda-time';
			mountFlame(tb, c.time_tree);
		}
		var cs = section('copies', 'Host\u2013device copies');
		if (!c.copies || !c.copies.length) { empty(cs, 'No cudaMemcpy calls in this trace.'); return; }
		function gbps(x) { return x.total_ns ? x.bytes / x.total_ns : 0; }
		el('p', 'fr-note', 'By direction, host memory (pinned or pageable) and mode. Pageable copies are staged ' +
			'through a pinned buffer by the driver and are synchronous even when called async.', cs);
		table(cs, [
			{ title: 'Direction', key: 'dir' },
			{ title: 'Host memory', key: 'host' },
			{ title: 'Mode', key: 'mode' },
			{ title: 'Calls', key: 'calls', num: true, fmt: commas },
			{ title: 'Bytes', key: 'bytes', num: true, fmt: fmtBytes },
			{ title: 'Time', key: 'total_ns', num: true, fmt: fmtNs },
			{ title: 'Throughput', key: 'gbps', num: true, fmt: function (v) { return v.toFixed(2) + ' GB/s'; } }
		], c.copies.map(function (x) {
			return { dir: x.dir, host: x.host, mode: x.mode, calls: x.calls, bytes: x.bytes,
				total_ns: x.total_ns, gbps: gbps(x) };
		}));
		var fs = el('div', 'fr-finding', null, cs);
		fs.id = 'fr-async-sync';
		if (!c.async_then_sync) {
			el('p', null, 'No async copy was followed at once by a synchronize.', fs);
		} else {
			el('p', 'fr-warn', commas(c.async_then_sync) + ' async copies were followed within ' +
				fmtNs(c.sync_gap_ns) + ' by a synchronize (' + fmtNs(c.async_then_sync_ns) +
				' spent waiting): the copy could have been a plain synchronous one, or the wait moved later.', fs);
			table(fs, [
				{ title: 'Process', key: 'process', wrap: true },
				{ title: 'Copy stack (leaf first)', key: 'stack', wrap: true },
				{ title: 'Times', key: 'count', num: true, fmt: commas },
				{ title: 'Sync time', key: 'sync_ns', num: true, fmt: fmtNs },
				{ title: 'Bytes', key: 'bytes', num: true, fmt: fmtBytes }
			], c.sync_stacks || []);
		}
	}

	/* Heatmap: rows [[v|null...]...] with row labels; colour from low to high. */
	function heatmap(parent, rows, rowLabels, colLabel, fmt, signed) {
		var cols = 0, lo = Infinity, hi = -Infinity;
		rows.forEach(function (r) {
			if (r.length > cols) cols = r.length;
			r.forEach(function (v) { if (v !== null) { if (v < lo) lo = v; if (v > hi) hi = v; } });
		});
		var CW = Math.max(4, Math.min(24, Math.floor(800 / Math.max(1, cols)))), CH = 16, L = 170, T = 4;
		var W = L + cols * CW + 10, H = T + rows.length * CH + 22;
		var svg = svgEl('svg', { 'class': 'fr-chart fr-heatmap', width: W, height: H,
			viewBox: '0 0 ' + W + ' ' + H }, parent);
		if (signed) { var m = Math.max(Math.abs(lo), Math.abs(hi)); lo = -m; hi = m; }
		function colour(v) {
			var f = hi > lo ? (v - lo) / (hi - lo) : 0.5;
			if (signed) { /* blue (early) - white - red (late) */
				var a = Math.abs(f - 0.5) * 2, r0 = f > 0.5 ? 201 : 43, g0 = f > 0.5 ? 48 : 87, b0 = f > 0.5 ? 44 : 151;
				return 'rgb(' + Math.round(255 + (r0 - 255) * a) + ',' + Math.round(255 + (g0 - 255) * a) + ',' +
					Math.round(255 + (b0 - 255) * a) + ')';
			}
			return 'rgb(' + Math.round(255 - 54 * f) + ',' + Math.round(245 - 197 * f) + ',' + Math.round(220 - 176 * f) + ')';
		}
		rows.forEach(function (r, i) {
			svgEl('text', { x: L - 6, y: T + i * CH + 12, 'text-anchor': 'end' }, svg).textContent = rowLabels[i];
			r.forEach(function (v, j) {
				if (v === null) return;
				var rect = svgEl('rect', { 'class': 'fr-cell', x: L + j * CW, y: T + i * CH, width: CW - 1,
					height: CH - 1, fill: colour(v) }, svg);
				svgEl('title', {}, rect).textContent = rowLabels[i] + ', ' + colLabel(j) + ': ' + fmt(v);
			});
		});
		svgEl('text', { x: L, y: H - 6 }, svg).textContent = colLabel(0);
		svgEl('text', { x: L + cols * CW, y: H - 6, 'text-anchor': 'end' }, svg).textContent = colLabel(cols - 1);
		var key = el('p', 'fr-note', 'Colour scale: ' + fmt(lo) + ' to ' + fmt(hi) + '. Hover a cell for its value.', parent);
		return { svg: svg, key: key };
	}

	function renderStragglers() {
		var s = section('stragglers', 'Stragglers');
		var g = D.stragglers;
		if (!g) {
			if (!P.nccl_events) empty(s, 'No NCCL events in this trace.');
			else empty(s, commas(P.nccl_events) + ' NCCL events are in this trace, but none was a call of a rank the ' +
				'stragglers model could follow.');
			return;
		}
		var v = g.verdict || { found: false, text: 'No verdict.' };
		var box = el('div', v.found ? 'fr-warn fr-bad fr-verdict' : 'fr-verdict fr-ok', null, s);
		box.id = 'fr-verdict';
		el('strong', null, v.text, box);
		if (v.found && v.evidence) el('div', 'fr-evidence', 'Evidence: ' + v.evidence, box);
		if (v.found && v.frames && v.frames.length) {
			el('div', 'fr-evidence', 'In its compute segments it spends more time in: ' + v.frames.map(function (f) {
				return f.name + ' (' + (100 * f.share).toFixed(1) + '% vs ' + (100 * f.others_share).toFixed(1) + '%)';
			}).join(', '), box);
		}
		if (v.found && v.syscalls && v.syscalls.length) {
			el('div', 'fr-evidence', 'System calls: ' + v.syscalls.map(function (x) {
				return x.name + ' ' + x.ms_per_step.toFixed(2) + ' ms/step vs ' + x.others_ms_per_step.toFixed(2);
			}).join(', '), box);
		}
		el('p', 'fr-note', g.ranks_total + ' ranks on ' + g.nodes + ' node(s), ' + commas(g.complete_collectives) +
			' complete collectives; steps from ' + g.steps_from + (g.median_step_ms !== null
			? ', median step ' + g.median_step_ms.toFixed(2) + ' ms' : '') + '.', s);
		var ranks = g.ranks || [];
		table(s, [
			{ title: 'Rank', key: 'rank', num: true },
			{ title: 'Host', key: 'host' },
			{ title: 'PID', key: 'pid', num: true },
			{ title: 'Steps', key: 'steps', num: true, fmt: commas },
			{ title: 'Mean step', key: 'mean_step_ms', num: true, fmt: function (x) { return x.toFixed(2) + ' ms'; } },
			{ title: 'Mean wait', key: 'mean_wait_ms', num: true, fmt: function (x) { return x.toFixed(2) + ' ms'; } },
			{ title: 'Median compute', key: 'median_compute_ms', num: true, fmt: function (x) { return x.toFixed(2) + ' ms'; } },
			{ title: 'Score', key: 'score', num: true, fmt: function (x, r) { return x.toFixed(2) + (r.flagged ? ' \u26a0' : ''); } },
			{ title: 'Latest in', key: 'latest', num: true, fmt: commas },
			{ title: 'Median lateness', key: 'median_lateness_ms', num: true, fmt: function (x) { return x.toFixed(3) + ' ms'; } }
		], ranks);
		var hm = g.heatmap;
		if (!hm) { empty(s, 'No steps: no heatmap.'); return; }
		var labels = ranks.slice(0, hm.rows).map(function (r) {
			return (r.rank !== null ? 'rank ' + r.rank : 'pid ' + r.pid) + ' ' + r.host;
		});
		function colLabel(j) {
			return hm.width > 1 ? 'steps ' + (j * hm.width) + '\u2013' + Math.min(hm.steps - 1, (j + 1) * hm.width - 1)
				: 'step ' + j;
		}
		el('h3', null, 'Rank \u00d7 step', s);
		var ctl = el('div', 'fr-controls', null, s);
		el('label', null, 'Show: ', ctl);
		var sel = el('select', null, null, ctl);
		sel.id = 'fr-heat-select';
		[['lateness', 'lateness at the collectives (ms, vs the median rank)'], ['step', 'step time (ms)']].forEach(function (o) {
			var opt = el('option', null, o[1], sel);
			opt.value = o[0];
		});
		var hostDiv = el('div', 'fr-heat', null, s);
		function draw() {
			while (hostDiv.firstChild) hostDiv.removeChild(hostDiv.firstChild);
			var late = sel.value === 'lateness';
			heatmap(hostDiv, late ? hm.lateness_ms : hm.step_ms, labels, colLabel,
				function (x) { return x.toFixed(3) + ' ms'; }, late);
			hostDiv.setAttribute('data-shown', sel.value);
		}
		sel.addEventListener('change', draw);
		draw();
	}

	/* Latency per (opcode, size) of one connection: min..max bar with the
	 * p50 and p99 marked, log scale. */
	function latencyChart(parent, rows) {
		var W = 900, rowH = 20, L = 200, R = 80;
		var lo = Infinity, hi = 0;
		rows.forEach(function (r) {
			if (!r.latency.count) return;
			if (r.latency.min_ns > 0 && r.latency.min_ns < lo) lo = r.latency.min_ns;
			if (r.latency.max_ns > hi) hi = r.latency.max_ns;
		});
		if (!(hi > 0)) return null;
		if (!(lo < Infinity)) lo = 1;
		var llo = Math.log10(Math.max(1, lo)) - 0.05, lhi = Math.log10(hi) + 0.05;
		function x(v) { return L + (W - L - R) * (Math.log10(Math.max(1, v)) - llo) / Math.max(1e-9, lhi - llo); }
		var svg = svgEl('svg', { 'class': 'fr-chart fr-latency', width: W, height: rows.length * rowH + 24,
			viewBox: '0 0 ' + W + ' ' + (rows.length * rowH + 24) }, parent);
		rows.forEach(function (r, i) {
			var y = 4 + i * rowH, l = r.latency;
			svgEl('text', { x: L - 6, y: y + 12, 'text-anchor': 'end' }, svg).textContent = r.op + ' ' + r.size;
			if (!l.count) return;
			var bar = svgEl('rect', { 'class': 'fr-range', x: x(l.min_ns), y: y + 4, width: Math.max(1, x(l.max_ns) - x(l.min_ns)),
				height: rowH - 10 }, svg);
			svgEl('title', {}, bar).textContent = r.op + ' ' + r.size + ': ' + commas(l.count) + ' ops, min ' + fmtNs(l.min_ns) +
				', p50 ' + fmtNs(l.p50_ns) + ', p99 ' + fmtNs(l.p99_ns) + ', max ' + fmtNs(l.max_ns);
			svgEl('rect', { 'class': 'fr-p50', x: x(l.p50_ns) - 1.5, y: y + 1, width: 3, height: rowH - 4 }, svg);
			svgEl('rect', { 'class': 'fr-p99', x: x(l.p99_ns) - 1.5, y: y + 1, width: 3, height: rowH - 4 }, svg);
			svgEl('text', { x: x(l.max_ns) + 6, y: y + 12 }, svg).textContent = 'p99 ' + fmtNs(l.p99_ns);
		});
		var ya = rows.length * rowH + 18;
		svgEl('text', { x: L, y: ya }, svg).textContent = fmtNs(Math.pow(10, llo));
		svgEl('text', { x: W - R, y: ya, 'text-anchor': 'end' }, svg).textContent = fmtNs(Math.pow(10, lhi)) + ' (log scale)';
		return svg;
	}

	function renderRdma() {
		var s = section('rdma', 'RDMA');
		var r = D.rdma;
		if (!r) {
			if (!P.rdma_events) empty(s, 'No RDMA events in this trace.');
			else empty(s, commas(P.rdma_events) + ' RDMA verbs events are in this trace, but the RDMA model kept none.');
			return;
		}
		el('p', 'fr-note', commas(r.posts) + ' work requests posted, ' + commas(r.completions) + ' completions, ' +
			commas(r.connections) + ' connection view(s) (one per local queue pair).', s);
		var conns = r.conns || [];
		if (!conns.length) empty(s, 'No connections (no queue pair carried work requests).');
		else {
			if (r.left_out) el('p', 'fr-note', r.left_out + ' more connections are left out.', s);
			table(s, [
				{ title: '#', key: 'id', num: true },
				{ title: 'Local', key: 'local', wrap: true },
				{ title: 'QP', key: 'qp', num: true },
				{ title: 'Remote', key: 'remote', wrap: true },
				{ title: 'Remote QP', key: 'remote_qp', num: true },
				{ title: 'Ops', key: 'ops', num: true, fmt: commas },
				{ title: 'Bytes', key: 'bytes', num: true, fmt: fmtBytes },
				{ title: 'p50', key: 'p50_ns', num: true, fmt: fmtNs },
				{ title: 'p99', key: 'p99_ns', num: true, fmt: fmtNs },
				{ title: 'Max', key: 'max_ns', num: true, fmt: fmtNs },
				{ title: 'Errors', key: 'errtext', wrap: true }
			], conns.map(function (c) {
				var cls = Object.keys(c.classes || {}).map(function (k) { return k + ' ' + c.classes[k]; });
				if (c.flush_errors) cls.push('flushed ' + c.flush_errors);
				return { id: c.id, local: c.local, qp: c.qp, remote: c.remote, remote_qp: c.remote_qp,
					ops: c.ops, bytes: c.bytes, p50_ns: c.latency.count ? c.latency.p50_ns : null,
					p99_ns: c.latency.count ? c.latency.p99_ns : null, max_ns: c.latency.count ? c.latency.max_ns : null,
					errtext: cls.length ? cls.join(', ') : (c.errors ? String(c.errors) : null) };
			}));
			el('h3', null, 'Post \u2192 completion latency by opcode and size', s);
			var ctl = el('div', 'fr-controls', null, s);
			el('label', null, 'Connection: ', ctl);
			var sel = el('select', null, null, ctl);
			sel.id = 'fr-rdma-select';
			conns.forEach(function (c, i) {
				var o = el('option', null, '#' + c.id + ' ' + c.local + ' QP ' + c.qp + ' \u2192 ' + c.remote, sel);
				o.value = String(i);
			});
			el('span', 'fr-note', 'Bars span min to max; marks at p50 and p99.', ctl);
			var hostDiv = el('div', 'fr-rdma-latency', null, s);
			var drawConn = function () {
				while (hostDiv.firstChild) hostDiv.removeChild(hostDiv.firstChild);
				var c = conns[Number(sel.value)];
				if (!latencyChart(hostDiv, c.rows || [])) empty(hostDiv, 'No completed work requests on this connection.');
				table(hostDiv, [
					{ title: 'Opcode', key: 'op' },
					{ title: 'Size', key: 'size' },
					{ title: 'Ops', key: 'ops', num: true, fmt: commas },
					{ title: 'Bytes', key: 'bytes', num: true, fmt: fmtBytes },
					{ title: 'p50', key: 'p50_ns', num: true, fmt: fmtNs },
					{ title: 'p99', key: 'p99_ns', num: true, fmt: fmtNs },
					{ title: 'Max', key: 'max_ns', num: true, fmt: fmtNs }
				], (c.rows || []).map(function (x) {
					return { op: x.op, size: x.size, ops: x.ops, bytes: x.bytes,
						p50_ns: x.latency.count ? x.latency.p50_ns : null,
						p99_ns: x.latency.count ? x.latency.p99_ns : null,
						max_ns: x.latency.count ? x.latency.max_ns : null };
				}));
			};
			sel.addEventListener('change', drawConn);
			drawConn();
		}
		if (r.counters && r.counters.length) {
			el('h3', null, 'Port counters', s);
			table(s, [
				{ title: 'Host', key: 'host' },
				{ title: 'Counter', key: 'name' },
				{ title: 'Total', key: 'total', num: true, fmt: commas },
				{ title: 'Max per second', key: 'max_per_s', num: true, fmt: commas }
			], r.counters);
		}
	}

	function renderSyscalls() {
		var s = section('syscalls', 'Top system calls by time');
		var c = D.syscalls;
		if (!c) { empty(s, 'No system call events in this trace.'); return; }
		barChart(s, c.top.slice(0, 15).map(function (x) { return { label: x.name, value: x.total_ns }; }), fmtNs);
		table(s, [
			{ title: 'System call', key: 'name' },
			{ title: 'Calls', key: 'count', num: true, fmt: commas },
			{ title: 'Total', key: 'total_ns', num: true, fmt: fmtNs },
			{ title: 'Mean', key: 'mean_ns', num: true, fmt: fmtNs },
			{ title: 'Max', key: 'max_ns', num: true, fmt: fmtNs },
			{ title: 'Failed', key: 'failed', num: true, fmt: commas }
		], c.top.map(function (x) {
			return { name: x.name, count: x.count, total_ns: x.total_ns, max_ns: x.max_ns,
				failed: x.failed, mean_ns: x.count ? x.total_ns / x.count : 0 };
		}));
	}

	renderHeader();
	var navEl = el('nav', 'fr-nav', null, root);
	renderWarnings();
	renderSummary();
	renderFindings();
	renderCpu();
	renderMem();
	renderCuda();
	renderStragglers();
	renderRdma();
	renderSyscalls();
	nav.forEach(function (n) {
		var a = el('a', null, n[1], navEl);
		a.href = '#' + n[0];
	});
	el('p', 'fr-footer', 'Generated by flightrec-analyze report. Self-contained: this file makes no network requests.', root);
	document.body.setAttribute('data-ready', '1');
})();
