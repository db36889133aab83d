/* flightrec report renderer.
 *
 * For: drawing the report from the JSON that out_report.c writes into
 * <script type="application/json" id="fr-data">: summary and warnings,
 * CPU flame graphs (one per process plus "all", through the one flame
 * renderer, flame.js, which out_report.c wraps as window.FR_FLAME_MOUNT),
 * tables and small inline-SVG charts.  One function per section, each fed by
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
	var SVGNS = 'http://www.w3.org/2000/svg';
	var root = document.getElementById('fr-root');
	var D;
	try {
		D = JSON.parse(document.getElementById('fr-data').textContent);
	} catch (e) {
		root.textContent = 'This report\u2019s data could not be read: ' + e;
		return;
	}

	/* ---- helpers ---- */
	function el(tag, cls, text, parent) {
		var e = document.createElement(tag);
		if (cls) e.className = cls;
		if (text !== undefined && text !== null) e.textContent = String(text);
		if (parent) parent.appendChild(e);
		return e;
	}
	function svgEl(tag, attrs, parent) {
		var e = document.createElementNS(SVGNS, tag);
		for (var k in attrs) e.setAttribute(k, attrs[k]);
		if (parent) parent.appendChild(e);
		return e;
	}
	function commas(v) {
		return String(Math.round(v)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
	}
	function fmtNs(ns) {
		if (ns >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
		if (ns >= 1e6) return (ns / 1e6).toFixed(1) + ' ms';
		if (ns >= 1e3) return (ns / 1e3).toFixed(1) + ' \u00b5s';
		return Math.round(ns) + ' ns';
	}
	function fmtBytes(b) {
		var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], k = 0;
		while (b >= 1024 && k < u.length - 1) { b /= 1024; k++; }
		return (k ? b.toFixed(1) : String(Math.round(b))) + ' ' + u[k];
	}
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

	/* A table; cols: [{title, key, num, fmt}], sortable by clicking a header. */
	function table(parent, cols, rows) {
		var t = el('table', 'fr-table', null, parent);
		var thead = el('thead', null, null, t), tr = el('tr', null, null, thead);
		var tbody = el('tbody', null, null, t);
		var sortKey = null, sortDesc = true;
		function fill() {
			while (tbody.firstChild) tbody.removeChild(tbody.firstChild);
			var rs = rows.slice();
			if (sortKey !== null) {
				rs.sort(function (a, b) {
					var x = a[sortKey], y = b[sortKey];
					var c = x < y ? -1 : x > y ? 1 : 0;
					return sortDesc ? -c : c;
				});
			}
			rs.forEach(function (r) {
				var row = el('tr', null, null, tbody);
				cols.forEach(function (c) {
					var v = r[c.key];
					var td = el('td', c.num ? 'fr-num' : (c.wrap ? 'fr-wrap' : ''),
						v === null || v === undefined ? '\u2014' : (c.fmt ? c.fmt(v, r) : v), row);
					if (c.title === 'Command' || c.wrap) td.title = String(v === null ? '' : v);
				});
			});
		}
		cols.forEach(function (c) {
			var th = el('th', c.num ? 'fr-num' : '', c.title, tr);
			th.addEventListener('click', function () {
				if (sortKey === c.key) sortDesc = !sortDesc;
				else { sortKey = c.key; sortDesc = !!c.num; }
				fill();
			});
		});
		fill();
		return t;
	}

	/* Horizontal bar chart as inline SVG: items [{label, value}]. */
	function barChart(parent, items, fmt) {
		var W = 900, rowH = 18, labelW = 220, max = 0;
		items.forEach(function (it) { if (it.value > max) max = it.value; });
		var svg = svgEl('svg', { 'class': 'fr-chart', width: W, height: items.length * rowH + 6,
			viewBox: '0 0 ' + W + ' ' + (items.length * rowH + 6) }, parent);
		items.forEach(function (it, i) {
			var y = 3 + i * rowH;
			var t = svgEl('text', { x: labelW - 6, y: y + 12, 'text-anchor': 'end' }, svg);
			t.textContent = it.label;
			var w = max > 0 ? Math.max(1, (W - labelW - 120) * it.value / max) : 1;
			var r = svgEl('rect', { 'class': 'fr-bar', x: labelW, y: y + 2, width: w.toFixed(1),
				height: rowH - 5 }, svg);
			svgEl('title', {}, r).textContent = it.label + ': ' + fmt(it.value);
			var v = svgEl('text', { x: labelW + w + 6, y: y + 12 }, svg);
			v.textContent = fmt(it.value);
		});
		return svg;
	}

	/* ---- flame graphs through flame.js, each in its own scope ---- */
	var flames = [], activeFlame = null;
	function mountFlame(parent, data) {
		var box = el('div', 'fr-flame', null, parent);
		var bar = el('div', 'fg-bar', null, box);
		var input = el('input', null, null, bar);
		input.type = 'search';
		input.placeholder = 'Search: regex or substring';
		input.setAttribute('aria-label', 'Search frames');
		input.autocomplete = 'off';
		var reset = el('button', null, 'Reset zoom', bar);
		reset.type = 'button';
		var host = el('div', 'fg-host', null, box);
		var svg = svgEl('svg', {}, host);
		var ids = { 'fg-svg': svg, 'fg-search': input, 'fg-reset': reset };
		var inst = { box: box, keydown: [], resize: [] };
		var docShim = {
			documentElement: document.documentElement,
			getElementById: function (id) { return ids[id] || null; },
			createElementNS: function (ns, tag) { return document.createElementNS(ns, tag); },
			createDocumentFragment: function () { return document.createDocumentFragment(); },
			addEventListener: function (type, fn) { if (type === 'keydown') inst.keydown.push(fn); }
		};
		var winShim = {
			FLAME_DATA: data,
			addEventListener: function (type, fn) { if (type === 'resize') inst.resize.push(fn); },
			requestAnimationFrame: function (fn) { return window.requestAnimationFrame(fn); },
			prompt: function () { return null; }
		};
		window.FR_FLAME_MOUNT(winShim, docShim);
		box.addEventListener('mouseenter', function () { activeFlame = inst; });
		box.addEventListener('focusin', function () { activeFlame = inst; });
		box.addEventListener('mouseleave', function () {
			if (activeFlame === inst && document.activeElement !== input) activeFlame = null;
		});
		flames.push(inst);
		return inst;
	}
	document.addEventListener('keydown', function (ev) {
		if (!activeFlame || !activeFlame.box.isConnected) return;
		activeFlame.keydown.forEach(function (fn) { fn(ev); });
	});
	window.addEventListener('resize', function () {
		flames.forEach(function (f) {
			if (f.box.isConnected && f.box.offsetParent) f.resize.forEach(function (fn) { fn(); });
		});
	});

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
			var drops = 0, probes = [];
			(f.drops || []).forEach(function (p) {
				if (p.drops > 0) { drops += p.drops; probes.push(p.probe + ' ' + commas(p.drops)); }
			});
			if (drops > 0) {
				el('div', 'fr-warn fr-drops', 'Dropped events: ' + commas(drops) + ' in ' + f.path +
					' (' + probes.join(', ') + '). Counts and graphs below miss these events.', root);
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
		if (D.mem) {
			/* HOOK: model_mem's result: in-use chart, snapshot slider, alloc graph, leaks, failed */
			empty(s, 'GPU memory data present; its view is not in this build.');
			return;
		}
		if (!P.cuda_alloc_events) empty(s, 'No CUDA allocation events in this trace.');
		else empty(s, commas(P.cuda_alloc_events) + ' CUDA allocation/free calls are in this trace; ' +
			'this build of the analyzer has no GPU memory model yet (see the sqlite output\u2019s ' +
			'allocations and memory_inuse tables, or the timeline\u2019s memory counter).');
	}

	function renderCuda() {
		var s = section('cuda', 'CUDA API');
		var c = D.cuda;
		if (!c) { empty(s, 'No CUDA events in this trace.'); return; }
		el('p', 'fr-note', commas(c.events) + ' calls. Percentiles are approximate (\u00b19%), from a log histogram.', s);
		table(s, [
			{ title: 'Function', key: 'name' },
			{ title: 'Calls', key: 'calls', num: true, fmt: commas },
			{ title: 'Total time', key: 'total_ns', num: true, fmt: fmtNs },
			{ title: 'Mean', key: 'mean_ns', num: true, fmt: fmtNs },
			{ title: 'p50 \u2264', key: 'p50_ns', num: true, fmt: fmtNs },
			{ title: 'p99 \u2264', key: 'p99_ns', num: true, fmt: fmtNs },
			{ title: 'Max', key: 'max_ns', num: true, fmt: fmtNs },
			{ title: 'Failed', key: 'failed', num: true, fmt: commas },
			{ title: 'Bytes', key: 'bytes', num: true, fmt: fmtBytes }
		], c.funcs.map(function (f) {
			var r = {};
			for (var k in f) r[k] = f[k];
			r.mean_ns = f.calls ? f.total_ns / f.calls : 0;
			return r;
		}));
		var cs = section('copies', 'Host\u2013device copies');
		if (!c.copies || !c.copies.length) { empty(cs, 'No cudaMemcpy calls in this trace.'); return; }
		el('p', 'fr-note', 'By direction. Pinned vs pageable needs the CUDA model (not in this build).', cs);
		table(cs, [
			{ title: 'Direction', key: 'kind' },
			{ title: 'Calls', key: 'calls', num: true, fmt: commas },
			{ title: 'Bytes', key: 'bytes', num: true, fmt: fmtBytes },
			{ title: 'Time', key: 'total_ns', num: true, fmt: fmtNs },
			{ title: 'Throughput', key: 'gbps', num: true, fmt: function (v) { return v.toFixed(2) + ' GB/s'; } }
		], c.copies.map(function (x) {
			return { kind: x.kind, calls: x.calls, bytes: x.bytes, total_ns: x.total_ns,
				gbps: x.total_ns ? x.bytes / x.total_ns : 0 };
		}));
	}

	function renderStragglers() {
		var s = section('stragglers', 'Stragglers');
		if (D.stragglers) {
			/* HOOK: rank x step heatmap and the verdict from the stragglers model */
			empty(s, 'Straggler data present; its view is not in this build.');
			return;
		}
		if (!P.nccl_events) empty(s, 'No NCCL events in this trace.');
		else empty(s, commas(P.nccl_events) + ' NCCL calls and ' + commas(P.step_events || 0) +
			' step marks are in this trace; this build of the analyzer has no stragglers model yet ' +
			'(see the sqlite output\u2019s nccl_calls table).');
	}

	function renderRdma() {
		var s = section('rdma', 'RDMA');
		if (D.rdma) {
			/* HOOK: connections with latency histograms from the rdma model */
			empty(s, 'RDMA data present; its view is not in this build.');
			return;
		}
		if (!P.rdma_events) empty(s, 'No RDMA events in this trace.');
		else empty(s, commas(P.rdma_events) + ' RDMA verbs events are in this trace; this build of the ' +
			'analyzer has no RDMA model yet (see the sqlite output\u2019s rdma_posts and rdma_completions).');
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
