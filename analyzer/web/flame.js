/* flightrec flame graph renderer.
 *
 * For: drawing the flame tree that flame_render.c writes as inline JSON
 * (window.FLAME_DATA) into an <svg>, either the root of a standalone .svg
 * file or <svg id="fg-svg"> inside an HTML page, with hover details, click to
 * zoom, reset, and search.  It is embedded into the analyzer binary at build
 * time (analyzer/embed.cmake), so it must never contain the byte sequences
 * that end a CDATA section or an HTML script element; the build checks.
 *
 * Not for: fetching anything (the outputs must work offline, from disk, with
 * no requests at all) or parsing markup: every string from the trace is
 * placed with textContent / setAttribute, never innerHTML.
 *
 * Data layout (flat, because 100k-node trees must load fast):
 *   names: [string], nodes: [parent, nameIndex, total, ...] in pre-order,
 *   children in name order, node 0 the root.  Self values are not sent:
 *   total minus the children's totals also counts the frames the writer
 *   merged away, which is what the viewer should show.
 */
(function () {
	'use strict';
	var SVGNS = 'http://www.w3.org/2000/svg';
	var FRAME_H = 16;
	var PAD = 10;
	var TOP = 70;      /* title, subtitle, controls */
	var BOTTOM = 30;   /* details line */
	var MIN_PX = 0.5;  /* narrower frames (and their subtrees) are not drawn */

	var D = window.FLAME_DATA || {};
	var docEl = document.documentElement;
	var standalone = docEl.namespaceURI === SVGNS && docEl.localName === 'svg';
	var svg = standalone ? docEl : document.getElementById('fg-svg');
	if (!svg) return;
	var searchInput = standalone ? null : document.getElementById('fg-search');

	var names = D.names || [];
	var raw = D.nodes || [];
	var n = Math.floor(raw.length / 3);
	var P = new Uint32Array(n), NM = new Uint32Array(n), V = new Float64Array(n);
	var X = new Float64Array(n), DEP = new Uint32Array(n), END = new Uint32Array(n);
	var SELF = new Float64Array(n);
	var maxDepth = 0;
	var bad = n === 0;

	(function build() {
		var used = new Float64Array(n);
		var size = new Uint32Array(n);
		var i;
		for (i = 0; i < n && !bad; i++) {
			var p = raw[3 * i], nm = raw[3 * i + 1], v = raw[3 * i + 2];
			if (typeof v !== 'number' || !(nm < names.length) ||
			    (i > 0 && !(p < i))) { bad = true; break; }
			NM[i] = nm; V[i] = v; size[i] = 1;
			if (i === 0) continue;
			P[i] = p;
			X[i] = X[p] + used[p];
			used[p] += v;
			DEP[i] = DEP[p] + 1;
			if (DEP[i] > maxDepth) maxDepth = DEP[i];
		}
		if (bad) return;
		for (i = n - 1; i > 0; i--) size[P[i]] += size[i];
		for (i = 0; i < n; i++) {
			END[i] = i + size[i];
			SELF[i] = Math.max(0, V[i] - used[i]);
		}
	})();

	var total = n ? V[0] : 0;
	var unit = typeof D.unit === 'string' ? D.unit : 'samples';
	var width = 1200, height = 0, charW = 7.3;
	var zoomed = 0;
	var nameMatch = null;   /* Uint8Array over names while a search is active */
	var searchTerm = '';
	var colors = [];

	function el(tag, attrs, parent) {
		var e = document.createElementNS(SVGNS, tag);
		for (var k in attrs) e.setAttribute(k, attrs[k]);
		if (parent) parent.appendChild(e);
		return e;
	}

	function commas(v) {
		var s = String(Math.round(v));
		return s.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
	}

	function fmtValue(v) {
		if (unit === 'bytes') {
			var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'], k = 0, x = v;
			while (x >= 1024 && k < u.length - 1) { x /= 1024; k++; }
			return (k ? x.toFixed(1) + ' ' + u[k] + ' (' + commas(v) + ' bytes)' : commas(v) + ' bytes');
		}
		if (unit === 'ns') {
			var t = v >= 1e9 ? (v / 1e9).toFixed(3) + ' s' : v >= 1e6 ? (v / 1e6).toFixed(2) + ' ms' :
				v >= 1e3 ? (v / 1e3).toFixed(1) + ' us' : commas(v) + ' ns';
			return t + ' (' + commas(v) + ' ns)';
		}
		return commas(v) + ' ' + unit;
	}

	function pct(v, of) {
		return of > 0 ? (100 * v / of).toFixed(2) + '%' : '0%';
	}

	/* Colour from a hash of the name so a function keeps its colour across
	 * zooms, reloads and different recordings. */
	function colorOf(nm) {
		if (colors[nm]) return colors[nm];
		var s = String(names[nm]), h = 2166136261;
		for (var i = 0; i < s.length; i++) {
			h ^= s.charCodeAt(i);
			h = Math.imul(h, 16777619);
		}
		h >>>= 0;
		var a = (h & 0xff) / 255, b = ((h >>> 8) & 0xff) / 255, c = ((h >>> 16) & 0xff) / 255;
		var r, g, bl;
		if (nm === NM[0] && s === 'all') { r = 190; g = 190; bl = 195; }
		else if (/^\[unknown\]/.test(s)) { r = 170 + 30 * a; g = r; bl = r; }
		else if (/_\[k\]$/.test(s)) {            /* kernel: green */
			r = 70 + 50 * a; g = 185 + 50 * b; bl = 90 + 50 * c;
		} else if (/\([^()]*\.py(:\d+)?\)$/.test(s)) { /* Python: blue */
			r = 80 + 50 * a; g = 140 + 60 * b; bl = 215 + 40 * c;
		} else {                                  /* native: warm */
			r = 205 + 50 * c; g = 230 * a; bl = 55 * b;
		}
		colors[nm] = 'rgb(' + Math.round(r) + ',' + Math.round(g) + ',' + Math.round(bl) + ')';
		return colors[nm];
	}

	function clip(s, chars) {
		return s.length <= chars ? s : s.slice(0, Math.max(1, chars - 2)) + '..';
	}

	function fitLabel(s, w) {
		var fit = Math.floor((w - 6) / charW);
		if (s.length <= fit) return s;
		if (fit < 4) return ''; /* "x.." tells the reader nothing */
		return s.slice(0, fit - 2) + '..';
	}

	/* ---- static chrome: title, controls, details ---- */
	var fallback = document.getElementById('fg-fallback');
	if (fallback && fallback.parentNode) fallback.parentNode.removeChild(fallback);
	svg.setAttribute('class', 'fg-svg');
	var bg = el('rect', { 'class': 'fg-bg', x: 0, y: 0, width: '100%', height: '100%' }, svg);
	var titleG = el('g', {}, svg), subG = el('g', {}, svg); /* their title elements are the tooltips */
	var titleEl = el('text', { 'class': 'fg-title', y: 24 }, titleG);
	var titleText = typeof D.title === 'string' && D.title ? D.title : 'Flame graph';
	var subEl = el('text', { 'class': 'fg-subtitle', y: 44 }, subG);
	var sub = [];
	if (typeof D.subtitle === 'string' && D.subtitle) sub.push(D.subtitle);
	if (D.omitted > 0) {
		sub.push(commas(D.omitted) + ' frames under ' + fmtValue(D.omittedBelow || 0) +
			' each not drawn (counted in their parents\' self)');
	}
	var subText = sub.join(' \u2014 ');
	el('title', {}, titleG).textContent = titleText;
	el('title', {}, subG).textContent = subText;
	var resetEl = el('text', { 'class': 'fg-btn fg-reset fg-hidden', x: PAD, y: 24 }, svg);
	resetEl.textContent = 'Reset Zoom';
	var searchBtn = el('text', { 'class': 'fg-btn fg-search-btn', y: 24 }, svg);
	searchBtn.textContent = 'Search';
	var clearBtn = el('text', { 'class': 'fg-btn fg-clear-btn fg-hidden', y: 44 }, svg);
	clearBtn.textContent = 'Clear search';
	var detailsEl = el('text', { 'class': 'fg-details', x: PAD }, svg);
	var matchedEl = el('text', { 'class': 'fg-matched' }, svg);
	var framesG = el('g', { 'class': 'fg-frames' }, svg);
	if (searchInput) searchBtn.setAttribute('class', 'fg-btn fg-search-btn fg-hidden');

	/* Measure the real glyph width once; labels are truncated against it. */
	(function measure() {
		var t = el('text', { 'class': 'fg-frame-text', x: 0, y: -100 }, svg);
		t.textContent = 'MMMMMMMMMMMMMMMMMMMM';
		try {
			var w = t.getComputedTextLength() / 20;
			if (w > 2 && w < 30) charW = w;
		} catch (e) { /* not laid out: keep the estimate */ }
		svg.removeChild(t);
	})();

	function layout() {
		if (!standalone) {
			var host = svg.parentNode;
			var w = host && host.clientWidth ? host.clientWidth : 1200;
			width = Math.max(320, w);
		}
		height = TOP + (maxDepth + 1) * FRAME_H + BOTTOM;
		svg.setAttribute('width', width);
		svg.setAttribute('height', height);
		svg.setAttribute('viewBox', '0 0 ' + width + ' ' + height);
		titleEl.setAttribute('x', width / 2);
		/* centred between the corner controls; the full text is in the title element
		 * and the tooltip */
		titleEl.textContent = clip(titleText, Math.floor((width - 240) / (charW * 17 / 12)));
		subEl.textContent = clip(subText, Math.floor((width - 240) / charW));
		subEl.setAttribute('x', width / 2);
		searchBtn.setAttribute('x', width - PAD);
		clearBtn.setAttribute('x', width - PAD);
		detailsEl.setAttribute('y', height - 10);
		matchedEl.setAttribute('x', width - PAD);
		matchedEl.setAttribute('y', height - 10);
		bg.setAttribute('width', width);
		bg.setAttribute('height', height);
	}

	function rowY(depth) {
		return TOP + (maxDepth - depth) * FRAME_H; /* root at the bottom */
	}

	function drawFrame(frag, i, x, w, cls) {
		var g = el('g', { 'class': cls }, frag);
		g.fgIndex = i;
		var isMatch = nameMatch && nameMatch[NM[i]];
		if (isMatch) g.setAttribute('class', cls + ' fg-match');
		var round = w >= 8 ? 2 : 0; /* rounded slivers read as dots */
		el('rect', { x: x.toFixed(2), y: rowY(DEP[i]), width: w.toFixed(2),
			height: FRAME_H - 1, rx: round, ry: round, fill: colorOf(NM[i]) }, g);
		var label = fitLabel(String(names[NM[i]]), w);
		if (label) {
			var t = el('text', { x: (x + 3).toFixed(2), y: rowY(DEP[i]) + FRAME_H - 4 }, g);
			t.textContent = label;
		}
	}

	function render() {
		layout();
		var frag = document.createDocumentFragment();
		var full = width - 2 * PAD;
		if (bad) {
			detailsEl.textContent = 'No usable flame graph data in this file.';
		} else {
			/* ancestors of the zoomed frame: full width, dimmed */
			var anc = [];
			for (var a = zoomed; a !== 0;) { a = P[a]; anc.push(a); }
			for (var k = 0; k < anc.length; k++) drawFrame(frag, anc[k], PAD, full, 'fg-frame fg-anc');
			var z = zoomed, x0 = X[z], scale = V[z] > 0 ? full / V[z] : 0;
			drawFrame(frag, z, PAD, full, 'fg-frame');
			for (var i = z + 1; i < END[z];) {
				var w = V[i] * scale;
				if (w < MIN_PX) { i = END[i]; continue; }
				drawFrame(frag, i, PAD + (X[i] - x0) * scale, w, 'fg-frame');
				i++;
			}
		}
		while (framesG.firstChild) framesG.removeChild(framesG.firstChild);
		framesG.appendChild(frag);
		resetEl.setAttribute('class', zoomed ? 'fg-btn fg-reset' : 'fg-btn fg-reset fg-hidden');
		svg.setAttribute('data-zoom', String(zoomed));
	}

	function describe(i) {
		var s = String(names[NM[i]]) + ' \u2014 ' + fmtValue(V[i]) + ', ' + pct(V[i], total);
		if (zoomed && i !== zoomed && V[zoomed] > 0 && END[i] <= END[zoomed] && i > zoomed)
			s += ' (' + pct(V[i], V[zoomed]) + ' of zoomed)';
		if (SELF[i] > 0 && SELF[i] !== V[i]) s += ', self ' + fmtValue(SELF[i]);
		return s;
	}

	function defaultDetails() {
		return bad ? '' : 'Total ' + fmtValue(total) + '. Click a frame to zoom, Escape to reset, Ctrl-F to search.';
	}

	function zoomTo(i) {
		zoomed = i > 0 && i < n ? i : 0;
		render();
		detailsEl.textContent = zoomed ? describe(zoomed) : defaultDetails();
	}

	function setSearch(term) {
		searchTerm = term || '';
		if (!searchTerm) {
			nameMatch = null;
			matchedEl.textContent = '';
			clearBtn.setAttribute('class', 'fg-btn fg-clear-btn fg-hidden');
		} else {
			var re = null;
			try { re = new RegExp(searchTerm); } catch (e) { re = null; }
			nameMatch = new Uint8Array(names.length);
			for (var k = 0; k < names.length; k++) {
				var s = String(names[k]);
				nameMatch[k] = (re && re.test(s)) || s.indexOf(searchTerm) >= 0 ? 1 : 0;
			}
			nameMatch[NM[0]] = 0; /* the root is not a frame */
			/* count each matching subtree once, however often it recurses */
			var sum = 0;
			for (var i = 1; i < n;) {
				if (nameMatch[NM[i]]) { sum += V[i]; i = END[i]; } else i++;
			}
			matchedEl.textContent = 'Matched: ' + pct(sum, total) + ' (' + fmtValue(sum) + ')';
			clearBtn.setAttribute('class', 'fg-btn fg-clear-btn');
		}
		if (searchInput && searchInput.value !== searchTerm) searchInput.value = searchTerm;
		render();
	}

	function openSearch() {
		if (searchInput) {
			searchInput.focus();
			searchInput.select();
			return;
		}
		var term = window.prompt('Search frames (regular expression or substring):', searchTerm);
		if (term !== null) setSearch(term);
	}

	function frameOf(target) {
		for (var e = target; e && e !== framesG; e = e.parentNode)
			if (typeof e.fgIndex === 'number') return e.fgIndex;
		return -1;
	}

	framesG.addEventListener('mouseover', function (ev) {
		var i = frameOf(ev.target);
		if (i >= 0) detailsEl.textContent = describe(i);
	});
	framesG.addEventListener('mouseout', function () {
		detailsEl.textContent = zoomed ? describe(zoomed) : defaultDetails();
	});
	framesG.addEventListener('click', function (ev) {
		var i = frameOf(ev.target);
		if (i >= 0) zoomTo(i);
	});
	resetEl.addEventListener('click', function () { zoomTo(0); });
	searchBtn.addEventListener('click', openSearch);
	clearBtn.addEventListener('click', function () { setSearch(''); });
	if (searchInput) {
		searchInput.addEventListener('input', function () { setSearch(searchInput.value); });
	}
	var resetBtnHtml = standalone ? null : document.getElementById('fg-reset');
	if (resetBtnHtml) resetBtnHtml.addEventListener('click', function () { zoomTo(0); });

	document.addEventListener('keydown', function (ev) {
		var inInput = searchInput && ev.target === searchInput;
		if (ev.key === 'Escape') {
			if (inInput) { setSearch(''); searchInput.blur(); }
			else if (zoomed) zoomTo(0);
			else if (searchTerm) setSearch('');
			ev.preventDefault();
		} else if ((ev.key === 'f' || ev.key === 'F') && (ev.ctrlKey || ev.metaKey)) {
			ev.preventDefault();
			openSearch();
		} else if (ev.key === '/' && !inInput) {
			ev.preventDefault();
			openSearch();
		}
	});

	if (!standalone) {
		var pending = false;
		window.addEventListener('resize', function () {
			if (pending) return;
			pending = true;
			window.requestAnimationFrame(function () { pending = false; render(); });
		});
	}

	render();
	detailsEl.textContent = defaultDetails();
})();
