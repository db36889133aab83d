/* The svg and html flame graph writers.  Both emit the same document shape:
 * the tree as inline JSON plus the one renderer (analyzer/web/flame.js and
 * flame.css, embedded at build time), so the two formats cannot drift apart
 * and neither makes a network request.  The JSON writer is public too: the
 * report (out_report_*.c) embeds its graphs through it, so every flame
 * graph is pruned by the same rule.
 *
 * Not for: layout or drawing (the JS does that, so the page can zoom and
 * search without a round trip) or the folded text (flame_tree.c).
 *
 * Escaping is the point of most of this file.  Frame names and titles come
 * from traces, and traces come from bug-report attachments, so every such
 * string is written either as a JSON string with everything outside
 * printable ASCII and every one of < > & ' escaped as \uXXXX (so neither
 * "</script>" nor "]]>" can appear, and U+2028/2029 cannot break older JS
 * parsers), or as XML/HTML text with character references.  Invalid UTF-8
 * becomes U+FFFD: one stray byte must not make the whole .svg ill-formed
 * XML. */
#include "flame_tree.h"
#include "out_common.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flame_web.h" /* generated: flame_web_js, flame_web_css */

#define DEFAULT_MIN_FRACTION 0.0001
#define DEFAULT_MAX_NODES 200000
/* keep in step with flame.js: FRAME_H, TOP, BOTTOM */
#define SVG_WIDTH 1200
#define FRAME_H 16
#define TOP_PX 70
#define BOTTOM_PX 30

/* Which tree nodes go into the JSON, in pre-order. */
struct selection {
	uint32_t *order;     /* tree indices, order[0] = root */
	size_t n;
	size_t omitted;      /* tree nodes (not counting the root) left out */
	uint64_t threshold;  /* nodes with total below this were left out */
	uint32_t max_depth;
};

/* Pre-order walk keeping nodes whose total >= threshold.  A child's total
 * never exceeds its parent's, so skipping a node skips its subtree and the
 * kept set is always a tree. */
static size_t walk_select(const struct flame_tree *t, uint64_t threshold,
			  uint32_t *order, uint32_t *max_depth)
{
	size_t n = 0;
	uint32_t depth = 0;
	if (order)
		order[n] = 0;
	n++;
	uint32_t i = flame_tree_node(t, 0)->first_child;
	while (i) {
		const struct flame_node *node = flame_tree_node(t, i);
		if (node->total >= threshold) {
			if (order)
				order[n] = i;
			n++;
			if (node->depth > depth)
				depth = node->depth;
			if (node->first_child) {
				i = node->first_child;
				continue;
			}
		}
		while (i && !flame_tree_node(t, i)->next_sibling)
			i = flame_tree_node(t, i)->parent;
		if (i)
			i = flame_tree_node(t, i)->next_sibling;
	}
	if (max_depth)
		*max_depth = depth;
	return n;
}

static int cmp_u64_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

static int select_nodes(const struct flame_tree *t, const struct flame_render_limits *lim,
			struct selection *sel)
{
	double frac = lim && lim->min_fraction > 0 ? lim->min_fraction : DEFAULT_MIN_FRACTION;
	size_t max_nodes = lim && lim->max_nodes > 0 ? lim->max_nodes : DEFAULT_MAX_NODES;
	if (max_nodes < 2)
		max_nodes = 2;
	if (frac > 1)
		frac = 1;
	uint64_t total = flame_tree_total(t);
	double want = ceil((double)total * frac);
	uint64_t threshold = want >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)want;
	if (threshold < 1)
		threshold = 1; /* a zero-total node draws nothing */

	size_t n = walk_select(t, threshold, NULL, NULL);
	if (n > max_nodes) {
		/* Keep the max_nodes - 1 largest non-root frames: raise the
		 * threshold just above the first total that does not fit. */
		uint64_t *totals = malloc((n - 1) * sizeof(*totals));
		uint32_t *tmp = malloc(n * sizeof(*tmp));
		if (!totals || !tmp) {
			free(totals);
			free(tmp);
			return -ENOMEM;
		}
		walk_select(t, threshold, tmp, NULL);
		for (size_t k = 1; k < n; k++)
			totals[k - 1] = flame_tree_node(t, tmp[k])->total;
		qsort(totals, n - 1, sizeof(*totals), cmp_u64_desc);
		uint64_t cut = totals[max_nodes - 1];
		threshold = cut == UINT64_MAX ? UINT64_MAX : cut + 1;
		free(totals);
		free(tmp);
		n = walk_select(t, threshold, NULL, NULL);
	}
	sel->order = malloc(n * sizeof(*sel->order));
	if (!sel->order)
		return -ENOMEM;
	sel->n = walk_select(t, threshold, sel->order, &sel->max_depth);
	sel->omitted = flame_tree_count(t) - sel->n;
	sel->threshold = threshold;
	return 0;
}

/* Names are interned by the tree, so equal names share a pointer and a
 * pointer-keyed table dedupes them: recursive trees repeat few names many
 * times. */
struct name_map {
	const char **keys;
	uint32_t *vals;
	size_t mask;
	size_t n;
};

static int64_t name_map_get(struct name_map *m, const char *name, int *added)
{
	size_t h = (size_t)(((uintptr_t)name >> 3) * 0x9e3779b97f4a7c15ULL);
	for (size_t i = h & m->mask;; i = (i + 1) & m->mask) {
		if (!m->keys[i]) {
			m->keys[i] = name;
			m->vals[i] = (uint32_t)m->n++;
			*added = 1;
			return m->vals[i];
		}
		if (m->keys[i] == name) {
			*added = 0;
			return m->vals[i];
		}
	}
}

static int write_json(const struct flame_tree *t, const struct flame_render_opts *o,
		      const struct selection *sel, FILE *f)
{
	size_t slots = 16;
	while (slots < sel->n * 2)
		slots *= 2;
	struct name_map map = {
		.keys = calloc(slots, sizeof(*map.keys)),
		.vals = calloc(slots, sizeof(*map.vals)),
		.mask = slots - 1,
	};
	uint32_t *name_idx = malloc(sel->n * sizeof(*name_idx));
	/* tree index -> position in the JSON, for parent references */
	uint32_t *pos = malloc(flame_tree_count(t) * sizeof(*pos));
	int one_line = o && o->one_line;
	int rc = 0;
	if (!map.keys || !map.vals || !name_idx || !pos) {
		rc = -ENOMEM;
		goto out;
	}
	fputs("{\"title\":", f);
	out_json_str(f, o && o->title ? o->title : "Flame graph");
	fputs(",\"subtitle\":", f);
	out_json_str(f, o && o->subtitle ? o->subtitle : "");
	fputs(",\"unit\":", f);
	out_json_str(f, o && o->unit ? o->unit : "samples");
	fprintf(f, ",\"total\":%llu,\"omitted\":%llu,\"omittedBelow\":%llu,\"names\":[",
		(unsigned long long)flame_tree_total(t), (unsigned long long)sel->omitted,
		(unsigned long long)(sel->omitted ? sel->threshold : 0));
	for (size_t k = 0; k < sel->n; k++) {
		const struct flame_node *node = flame_tree_node(t, sel->order[k]);
		int added;
		name_idx[k] = (uint32_t)name_map_get(&map, node->name, &added);
		if (added) {
			if (name_idx[k])
				fputc(',', f);
			if (!one_line)
				fputc('\n', f);
			out_json_str(f, node->name);
		}
	}
	fputs("],\"nodes\":[", f);
	for (size_t k = 0; k < sel->n; k++) {
		const struct flame_node *node = flame_tree_node(t, sel->order[k]);
		pos[sel->order[k]] = (uint32_t)k;
		fprintf(f, "%s%u,%u,%llu", k ? (k % 8 || one_line ? "," : ",\n") : "",
			k ? pos[node->parent] : 0u, name_idx[k],
			(unsigned long long)node->total);
	}
	fputs("]}", f);
out:
	free(map.keys);
	free(map.vals);
	free(name_idx);
	free(pos);
	return rc;
}

int flame_write_json(const struct flame_tree *t, const struct flame_render_opts *o,
		     const struct flame_render_limits *lim, FILE *f)
{
	if (!t || !f)
		return -EINVAL;
	struct selection sel = { 0 };
	int rc = select_nodes(t, lim, &sel);
	if (!rc)
		rc = write_json(t, o, &sel, f);
	free(sel.order);
	return rc;
}

static int finish(FILE *f, int rc)
{
	if (!rc && (fflush(f) || ferror(f)))
		rc = -EIO;
	return rc;
}

int flame_write_svg_ex(const struct flame_tree *t, const struct flame_render_opts *o,
		       const struct flame_render_limits *lim, FILE *f)
{
	if (!t || !f)
		return -EINVAL;
	struct selection sel = { 0 };
	int rc = select_nodes(t, lim, &sel);
	if (rc)
		return rc;
	unsigned height = TOP_PX + (sel.max_depth + 1) * FRAME_H + BOTTOM_PX;
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n", f);
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" class=\"fg-svg\" "
		"width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\">\n",
		SVG_WIDTH, height, SVG_WIDTH, height);
	fputs("<title>", f);
	out_html_text(f, o && o->title ? o->title : "Flame graph");
	fputs("</title>\n<style type=\"text/css\"><![CDATA[\n", f);
	fputs(flame_web_css, f);
	fputs("]]></style>\n", f);
	fputs("<text id=\"fg-fallback\" x=\"10\" y=\"24\">This flame graph is drawn by "
	      "JavaScript; open it in a web browser.</text>\n", f);
	fputs("<script type=\"text/ecmascript\"><![CDATA[\nvar FLAME_DATA = ", f);
	rc = write_json(t, o, &sel, f);
	fputs(";\n]]></script>\n<script type=\"text/ecmascript\"><![CDATA[\n", f);
	fputs(flame_web_js, f);
	fputs("]]></script>\n</svg>\n", f);
	free(sel.order);
	return finish(f, rc);
}

int flame_write_html_ex(const struct flame_tree *t, const struct flame_render_opts *o,
			const struct flame_render_limits *lim, FILE *f)
{
	if (!t || !f)
		return -EINVAL;
	struct selection sel = { 0 };
	int rc = select_nodes(t, lim, &sel);
	if (rc)
		return rc;
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      /* belt and braces: even a renderer bug cannot fetch anything */
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	      "script-src 'unsafe-inline'; style-src 'unsafe-inline'\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	      "<title>", f);
	out_html_text(f, o && o->title ? o->title : "Flame graph");
	fputs("</title>\n<style>\n", f);
	fputs(flame_web_css, f);
	fputs("</style>\n</head>\n<body class=\"fg-page\">\n"
	      "<div class=\"fg-bar\"><input id=\"fg-search\" type=\"search\" "
	      "placeholder=\"Search: regex or substring (Ctrl-F)\" "
	      "aria-label=\"Search frames\" autocomplete=\"off\">"
	      "<button id=\"fg-reset\" type=\"button\">Reset zoom</button></div>\n"
	      "<div class=\"fg-host\"><svg id=\"fg-svg\" xmlns=\"http://www.w3.org/2000/svg\">"
	      "<text id=\"fg-fallback\" x=\"10\" y=\"24\">This flame graph is drawn by "
	      "JavaScript, which is disabled.</text></svg></div>\n"
	      "<script>\nvar FLAME_DATA = ", f);
	rc = write_json(t, o, &sel, f);
	fputs(";\n</script>\n<script>\n", f);
	fputs(flame_web_js, f);
	fputs("</script>\n</body>\n</html>\n", f);
	free(sel.order);
	return finish(f, rc);
}

int flame_write_svg(const struct flame_tree *t, const struct flame_render_opts *o,
		    FILE *out)
{
	return flame_write_svg_ex(t, o, NULL, out);
}

int flame_write_html(const struct flame_tree *t, const struct flame_render_opts *o,
		     FILE *out)
{
	return flame_write_html_ex(t, o, NULL, out);
}
