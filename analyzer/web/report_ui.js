/* flightrec report widgets: the elements, number formats, sortable
 * tables, bar and line charts and flame-graph mounts the report's sections
 * (report.js) are drawn with, as window.FR_REPORT_UI.  Strings go in with
 * textContent or setAttribute, never innerHTML.  Embedded at build time
 * before report.js (analyzer/embed.cmake), so it must never contain the
 * byte sequences that end an HTML script element; the build checks.
 */
window.FR_REPORT_UI = (function () {
	'use strict';
	var SVGNS = 'http://www.w3.org/2000/svg';

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

	/* In-use line chart: series [{label, points:[[t_ns, bytes]...]}]; returns
	 * {svg, mark(t_ns)} where mark moves a vertical line to an instant. */
	var PALETTE = ['#2b5797', '#e07b00', '#2e8b57', '#c9302c', '#7b4ea3', '#8c6d31', '#1b9e9e', '#d6489f'];
	function lineChart(parent, series, peakT) {
		var W = 900, H = 240, L = 80, R = 12, T = 10, B = 30;
		/* x: the span of the memory activity, not the whole recording */
		var tmin = Infinity, tmax = 0, ymax = 0;
		series.forEach(function (s) {
			s.points.forEach(function (p) {
				if (p[0] < tmin) tmin = p[0];
				if (p[0] > tmax) tmax = p[0];
				if (p[1] > ymax) ymax = p[1];
			});
		});
		if (!(tmin < Infinity)) tmin = 0;
		var span = tmax - tmin;
		tmin = Math.max(0, tmin - span * 0.02);
		tmax = tmax + span * 0.02;
		if (tmax <= tmin) tmax = tmin + 1;
		if (ymax <= 0) ymax = 1;
		var svg = svgEl('svg', { 'class': 'fr-chart fr-linechart', width: W, height: H,
			viewBox: '0 0 ' + W + ' ' + H }, parent);
		function x(t) { return L + (W - L - R) * (Math.min(tmax, Math.max(tmin, t)) - tmin) / (tmax - tmin); }
		function y(b) { return T + (H - T - B) * (1 - b / ymax); }
		svgEl('line', { 'class': 'fr-axis', x1: L, y1: H - B, x2: W - R, y2: H - B }, svg);
		svgEl('line', { 'class': 'fr-axis', x1: L, y1: T, x2: L, y2: H - B }, svg);
		for (var k = 0; k <= 4; k++) {
			var yy = y(ymax * k / 4);
			svgEl('line', { 'class': 'fr-grid', x1: L, y1: yy, x2: W - R, y2: yy }, svg);
			svgEl('text', { x: L - 4, y: yy + 4, 'text-anchor': 'end' }, svg).textContent = fmtBytes(ymax * k / 4);
			var tk = tmin + (tmax - tmin) * k / 4;
			svgEl('text', { x: x(tk), y: H - B + 16, 'text-anchor': 'middle' }, svg).textContent =
				(tk / 1e9).toFixed(tmax - tmin < 1e8 ? 4 : 2) + ' s';
		}
		series.forEach(function (s, i) {
			if (!s.points.length) return;
			/* a step line: memory holds its value until the next change */
			var d = 'M' + x(tmin).toFixed(1) + ',' + y(0).toFixed(1), last = 0;
			s.points.forEach(function (p) {
				d += 'L' + x(p[0]).toFixed(1) + ',' + y(last).toFixed(1) + 'L' + x(p[0]).toFixed(1) + ',' + y(p[1]).toFixed(1);
				last = p[1];
			});
			d += 'L' + x(tmax).toFixed(1) + ',' + y(last).toFixed(1);
			var path = svgEl('path', { 'class': 'fr-line', d: d, stroke: PALETTE[i % PALETTE.length] }, svg);
			svgEl('title', {}, path).textContent = s.label;
		});
		if (peakT !== null && peakT !== undefined) {
			var pk = svgEl('line', { 'class': 'fr-peak', x1: x(peakT), y1: T, x2: x(peakT), y2: H - B }, svg);
			svgEl('title', {}, pk).textContent = 'peak at ' + (peakT / 1e9).toFixed(3) + ' s';
		}
		var marker = svgEl('line', { 'class': 'fr-marker', x1: L, y1: T, x2: L, y2: H - B,
			visibility: 'hidden' }, svg);
		var legend = el('div', 'fr-legend', null, parent);
		series.forEach(function (s, i) {
			var item = el('span', 'fr-legend-item', null, legend);
			var sw = el('span', 'fr-swatch', null, item);
			sw.style.background = PALETTE[i % PALETTE.length];
			el('span', null, s.label, item);
		});
		return {
			svg: svg,
			mark: function (t) {
				marker.setAttribute('x1', x(t));
				marker.setAttribute('x2', x(t));
				marker.setAttribute('visibility', 'visible');
				marker.setAttribute('data-t', String(t));
			}
		};
	}

	return {
		el: el, svgEl: svgEl, commas: commas, fmtNs: fmtNs, fmtBytes: fmtBytes, table: table,
		barChart: barChart, lineChart: lineChart, mountFlame: mountFlame,
		flames: flames /* every mounted flame graph: {box, keydown, resize} */
	};
})();
