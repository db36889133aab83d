/* Unit tests for the flame tree (flame_tree.c) and its svg/html writers
 * (flame_render.c): exact folded text, merging, order, self vs total,
 * pruning, and that hostile frame names cannot break out of the svg/html
 * documents.  Not for: how the page behaves in a browser (tests/browser/).
 *
 * Self-contained on purpose (no xmllint, no browser): a small
 * well-formedness checker below is enough to catch an unescaped '<' or a
 * CDATA section ended early. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "flame_tree.h"

#define ADD(t, v, ...) do { \
	const char *_f[] = { __VA_ARGS__ }; \
	CHECK(flame_tree_add((t), _f, sizeof(_f) / sizeof(_f[0]), (v)) == 0); \
} while (0)

typedef int (*writer_fn)(const struct flame_tree *, const struct flame_render_opts *,
			 const struct flame_render_limits *, FILE *);

static int folded_writer(const struct flame_tree *t, const struct flame_render_opts *o,
			 const struct flame_render_limits *lim, FILE *f)
{
	(void)o;
	(void)lim;
	return flame_write_folded(t, f);
}

static char *capture(writer_fn fn, const struct flame_tree *t,
		     const struct flame_render_opts *o, const struct flame_render_limits *lim)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	int rc = fn(t, o, lim, f);
	fclose(f);
	CHECK(rc == 0);
	return buf;
}

static char *folded(const struct flame_tree *t)
{
	return capture(folded_writer, t, NULL, NULL);
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

static const struct flame_node *child_named(const struct flame_tree *t, uint32_t parent,
					    const char *name)
{
	for (uint32_t c = flame_tree_node(t, parent)->first_child; c;
	     c = flame_tree_node(t, c)->next_sibling)
		if (strcmp(flame_tree_node(t, c)->name, name) == 0)
			return flame_tree_node(t, c);
	return NULL;
}

static uint32_t index_of(const struct flame_tree *t, const struct flame_node *n)
{
	return (uint32_t)(n - flame_tree_node(t, 0));
}

/* ---- a deliberately small XML well-formedness check ---- */

static int xml_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == ':' || c == '.';
}

/* "&...;" must be a known entity or a character reference. */
static int xml_ref_ok(const char *p)
{
	static const char *const named[] = { "&lt;", "&gt;", "&amp;", "&quot;", "&apos;" };
	for (size_t i = 0; i < 5; i++)
		if (strncmp(p, named[i], strlen(named[i])) == 0)
			return 1;
	if (p[1] != '#')
		return 0;
	const char *q = p + 2;
	int hex = *q == 'x';
	if (hex)
		q++;
	const char *start = q;
	while ((*q >= '0' && *q <= '9') || (hex && ((*q >= 'a' && *q <= 'f') || (*q >= 'A' && *q <= 'F'))))
		q++;
	return q > start && *q == ';';
}

static int xml_well_formed(const char *s)
{
	const char *stack[64];
	size_t stack_len[64];
	int depth = 0, roots = 0;
	if (strncmp(s, "<?xml", 5) == 0) {
		s = strstr(s, "?>");
		if (!s)
			return 0;
		s += 2;
	}
	while (*s) {
		if (*s != '<') {
			if (depth == 0 && !(*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r'))
				return 0;
			if (*s == '&' && !xml_ref_ok(s))
				return 0;
			if (strncmp(s, "]]>", 3) == 0)
				return 0;
			if ((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t' && *s != '\r')
				return 0;
			s++;
			continue;
		}
		if (strncmp(s, "<![CDATA[", 9) == 0) {
			if (depth == 0 || !(s = strstr(s + 9, "]]>")))
				return 0;
			s += 3;
		} else if (strncmp(s, "<!--", 4) == 0) {
			if (!(s = strstr(s + 4, "-->")))
				return 0;
			s += 3;
		} else if (s[1] == '/') {
			const char *name = s + 2, *e = name;
			while (xml_name_char(*e))
				e++;
			if (depth == 0 || *e != '>' || stack_len[depth - 1] != (size_t)(e - name) ||
			    strncmp(stack[depth - 1], name, (size_t)(e - name)) != 0)
				return 0;
			depth--;
			s = e + 1;
		} else {
			const char *name = s + 1, *e = name;
			while (xml_name_char(*e))
				e++;
			if (e == name)
				return 0;
			size_t name_len = (size_t)(e - name);
			for (;;) { /* attributes */
				while (*e == ' ' || *e == '\n' || *e == '\t')
					e++;
				if (*e == '>' || (e[0] == '/' && e[1] == '>'))
					break;
				const char *an = e;
				while (xml_name_char(*e))
					e++;
				if (e == an || *e != '=' || (e[1] != '"' && e[1] != '\''))
					return 0;
				char quote = e[1];
				for (e += 2; *e != quote; e++) {
					if (!*e || *e == '<' || (*e == '&' && !xml_ref_ok(e)))
						return 0;
				}
				e++;
			}
			if (depth == 0 && roots++)
				return 0;
			if (*e == '/') {
				s = e + 2;
			} else {
				if (depth == 64)
					return 0;
				stack[depth] = name;
				stack_len[depth] = name_len;
				depth++;
				s = e + 1;
			}
		}
	}
	return depth == 0 && roots == 1;
}

/* The inline JSON: from "var FLAME_DATA = " to the ";\n" that ends it. */
static char *json_of(const char *doc)
{
	const char *start = strstr(doc, "var FLAME_DATA = ");
	if (!start)
		return NULL;
	start += strlen("var FLAME_DATA = ");
	const char *end = strstr(start, ";\n");
	if (!end)
		return NULL;
	return strndup(start, (size_t)(end - start));
}

/* ---- tests ---- */

static void test_known_stacks(void)
{
	struct flame_tree *t = flame_tree_new();
	CHECK(t != NULL);
	ADD(t, 3, "main", "a", "b");
	ADD(t, 2, "main", "a");
	ADD(t, 1, "main", "c");
	ADD(t, 4, "main", "a", "b");
	ADD(t, 5, "other");
	ADD(t, 1, "main", "B");
	char *out = folded(t);
	/* byte order: "B" < "a" < "c"; a parent's line precedes its children */
	CHECK_STR(out, "main;B 1\n"
		       "main;a 2\n"
		       "main;a;b 7\n"
		       "main;c 1\n"
		       "other 5\n");
	free(out);

	CHECK_EQ_U64(flame_tree_total(t), 16);
	CHECK_EQ_U64(flame_tree_count(t), 7); /* root, main, B, a, b, c, other */
	const struct flame_node *root = flame_tree_node(t, 0);
	CHECK_STR(root->name, "all");
	CHECK_EQ_U64(root->depth, 0);
	CHECK_EQ_U64(root->parent, 0);
	const struct flame_node *main_n = child_named(t, 0, "main");
	CHECK(main_n != NULL);
	if (main_n) {
		CHECK_EQ_U64(main_n->total, 11);
		CHECK_EQ_U64(main_n->self, 0);
		CHECK_EQ_U64(main_n->depth, 1);
		const struct flame_node *a = child_named(t, index_of(t, main_n), "a");
		CHECK(a != NULL);
		if (a) {
			CHECK_EQ_U64(a->total, 9);
			CHECK_EQ_U64(a->self, 2);
			CHECK_EQ_U64(a->depth, 2);
			const struct flame_node *b = child_named(t, index_of(t, a), "b");
			CHECK(b != NULL && b->total == 7 && b->self == 7 && b->first_child == 0);
		}
		/* siblings come back in name order */
		uint32_t c = main_n->first_child;
		CHECK_STR(flame_tree_node(t, c)->name, "B");
		c = flame_tree_node(t, c)->next_sibling;
		CHECK_STR(flame_tree_node(t, c)->name, "a");
		c = flame_tree_node(t, c)->next_sibling;
		CHECK_STR(flame_tree_node(t, c)->name, "c");
		CHECK_EQ_U64(flame_tree_node(t, c)->next_sibling, 0);
	}
	CHECK(flame_tree_node(t, (uint32_t)flame_tree_count(t)) == NULL);

	/* adding after a read re-sorts on the next read */
	ADD(t, 1, "main", "A");
	out = folded(t);
	CHECK_STR(out, "main;A 1\nmain;B 1\nmain;a 2\nmain;a;b 7\nmain;c 1\nother 5\n");
	free(out);

	/* an empty stack counts toward the total but prints nothing */
	CHECK(flame_tree_add(t, NULL, 0, 3) == 0);
	CHECK_EQ_U64(flame_tree_total(t), 20);
	out = folded(t);
	CHECK_STR(out, "main;A 1\nmain;B 1\nmain;a 2\nmain;a;b 7\nmain;c 1\nother 5\n");
	free(out);
	CHECK(flame_tree_add(NULL, NULL, 0, 1) != 0);
	flame_tree_free(t);
}

static void test_deterministic_order(void)
{
	static const char *const stacks[][3] = {
		{ "main", "zeta", "leaf" }, { "main", "alpha", "leaf" },
		{ "main", "mid", "x" },    { "init", "a", "b" },
		{ "main", "alpha", "z" },  { "main", "mid", "a" },
	};
	size_t n = sizeof(stacks) / sizeof(stacks[0]);
	struct flame_tree *fwd = flame_tree_new(), *rev = flame_tree_new();
	for (size_t i = 0; i < n; i++) {
		CHECK(flame_tree_add(fwd, stacks[i], 3, i + 1) == 0);
		CHECK(flame_tree_add(rev, stacks[n - 1 - i], 3, n - i) == 0);
	}
	char *a = folded(fwd), *b = folded(rev);
	CHECK_STR(a, b);
	CHECK_STR(a, "init;a;b 4\nmain;alpha;leaf 2\nmain;alpha;z 5\nmain;mid;a 6\n"
		     "main;mid;x 3\nmain;zeta;leaf 1\n");
	free(a);
	free(b);
	flame_tree_free(fwd);
	flame_tree_free(rev);
}

static void test_memory_bounded_by_stacks(void)
{
	struct flame_tree *t = flame_tree_new();
	const char *s1[] = { "main", "loop", "work" };
	const char *s2[] = { "main", "loop", "io", "read_[k]" };
	for (int i = 0; i < 200000; i++) {
		if (flame_tree_add(t, s1, 3, 1) != 0 || flame_tree_add(t, s2, 4, 2) != 0)
			CHECK(0);
	}
	CHECK_EQ_U64(flame_tree_count(t), 6);
	CHECK_EQ_U64(flame_tree_total(t), 600000);
	char *out = folded(t);
	CHECK_STR(out, "main;loop;io;read_[k] 400000\nmain;loop;work 200000\n");
	free(out);

	/* repeated frame names in one stack are distinct nodes (recursion) */
	const char *rec[] = { "f", "f", "f" };
	CHECK(flame_tree_add(t, rec, 3, 1) == 0);
	CHECK_EQ_U64(flame_tree_count(t), 9);

	/* NULL names do not lose the sample */
	const char *holes[] = { "main", NULL };
	CHECK(flame_tree_add(t, holes, 2, 1) == 0);
	CHECK(child_named(t, index_of(t, child_named(t, 0, "main")), "[unknown]") != NULL);

	/* saturating rather than wrapping */
	const char *big[] = { "big" };
	CHECK(flame_tree_add(t, big, 1, UINT64_MAX) == 0);
	CHECK(flame_tree_add(t, big, 1, UINT64_MAX) == 0);
	CHECK_EQ_U64(child_named(t, 0, "big")->total, UINT64_MAX);
	CHECK_EQ_U64(flame_tree_total(t), UINT64_MAX);
	flame_tree_free(t);
}

/* A dispatcher frame with 200k distinct callees: quadratic sibling handling
 * would take minutes here, so this doubles as a guard on add's speed. */
static void test_wide_node(void)
{
	struct flame_tree *t = flame_tree_new();
	char name[32];
	const char *stack[2] = { "dispatch", name };
	for (int round = 0; round < 2; round++) {
		for (unsigned i = 0; i < 200000; i++) {
			/* scrambled insertion order */
			snprintf(name, sizeof(name), "fn_%06u", (i * 7919u) % 200000u);
			if (flame_tree_add(t, stack, 2, 1) != 0)
				CHECK(0);
		}
	}
	CHECK_EQ_U64(flame_tree_count(t), 200002);
	CHECK_EQ_U64(flame_tree_total(t), 400000);
	char *out = folded(t);
	CHECK(out && strncmp(out, "dispatch;fn_000000 2\ndispatch;fn_000001 2\n", 42) == 0);
	int sorted = 1;
	size_t lines = 0;
	for (char *p = out, *prev = NULL; p && *p; lines++) {
		char *nl = strchr(p, '\n');
		if (prev && strncmp(prev, p, (size_t)(nl - p)) >= 0)
			sorted = 0;
		prev = p;
		p = nl + 1;
	}
	CHECK(sorted);
	CHECK_EQ_U64(lines, 200000);
	free(out);
	flame_tree_free(t);
}

static void test_folded_hostile_names(void)
{
	struct flame_tree *t = flame_tree_new();
	ADD(t, 1, "x;y", "line\nbreak", "cr\rhere");
	ADD(t, 2, "name with spaces", "ok (train.py:12)");
	char *out = folded(t);
	CHECK_STR(out, "name with spaces;ok (train.py:12) 2\nx:y;line break;cr here 1\n");
	free(out);
	flame_tree_free(t);
}

#define HOSTILE_IMG "<img src=x onerror=alert(1)>"
#define HOSTILE_SCRIPT "</script><script>alert(2)</script>"
#define HOSTILE_CDATA "]]><script>alert(3)</script>"
#define HOSTILE_TITLE "</title><script>alert(4)</script> & <b>"

static struct flame_tree *hostile_tree(void)
{
	struct flame_tree *t = flame_tree_new();
	ADD(t, 10, "main", HOSTILE_IMG);
	ADD(t, 10, "main", HOSTILE_SCRIPT);
	ADD(t, 10, "main", HOSTILE_CDATA, "<!-- comment -->");
	ADD(t, 10, "main", "a;b", "nl\nx", "ctl\x01\x1b", "amp&amp;quot\"'");
	ADD(t, 10, "main", "bad utf8 \xff\xfe\xc0\x80 \xed\xa0\x80 end", "trunc \xe2\x82");
	ADD(t, 10, "main", "ok \xe2\x82\xac \xf0\x9f\x98\x80 \xe2\x80\xa8 \xef\xbf\xbe",
	    "train_step (train.py:42)");
	return t;
}

static void check_hostile_doc(const char *doc, int is_svg)
{
	CHECK(doc != NULL);
	if (!doc)
		return;
	/* none of the hostile strings appears raw */
	CHECK(strstr(doc, HOSTILE_IMG) == NULL);
	CHECK(strstr(doc, "<img") == NULL);
	CHECK(strstr(doc, HOSTILE_SCRIPT) == NULL);
	CHECK(strstr(doc, HOSTILE_CDATA) == NULL);
	CHECK(strstr(doc, HOSTILE_TITLE) == NULL);
	CHECK(strstr(doc, "<script>alert(") == NULL);
	CHECK(strstr(doc, "<!-- comment") == NULL);
	/* only the document's own markup: two scripts, and in svg three CDATA
	 * sections (style, data, renderer) */
	CHECK_EQ_U64(count_of(doc, "<script"), 2);
	CHECK_EQ_U64(count_of(doc, "</script>"), 2);
	CHECK_EQ_U64(count_of(doc, "]]>"), is_svg ? 3 : 0);
	CHECK_EQ_U64(count_of(doc, "<title>"), 1);
	CHECK_EQ_U64(count_of(doc, "</title>"), 1);
	/* pure ASCII: nothing for a wrong charset guess or U+2028 to break */
	int ascii = 1;
	for (const unsigned char *p = (const unsigned char *)doc; *p; p++)
		if (*p >= 0x80 || (*p < 0x20 && *p != '\n' && *p != '\t'))
			ascii = 0;
	CHECK(ascii);

	char *json = json_of(doc);
	CHECK(json != NULL);
	if (json) {
		CHECK(strpbrk(json, "<>&'") == NULL);
		CHECK(strstr(json, "\"\\u003cimg src=x onerror=alert(1)\\u003e\"") != NULL);
		CHECK(strstr(json, "\\u003c/script\\u003e\\u003cscript\\u003ealert(2)") != NULL);
		CHECK(strstr(json, "]]\\u003e\\u003cscript") != NULL);
		CHECK(strstr(json, "\"a;b\"") != NULL); /* ';' is only special in folded */
		CHECK(strstr(json, "\"nl\\u000ax\"") != NULL);
		CHECK(strstr(json, "\"ctl\\u0001\\u001b\"") != NULL);
		CHECK(strstr(json, "\"amp\\u0026amp;quot\\\"\\u0027\"") != NULL);
		CHECK(strstr(json, "\"bad utf8 \\ufffd\\ufffd\\ufffd\\ufffd \\ufffd\\ufffd\\ufffd end\"") != NULL);
		CHECK(strstr(json, "\"trunc \\ufffd\\ufffd\"") != NULL);
		CHECK(strstr(json, "\"ok \\u20ac \\ud83d\\ude00 \\u2028 \\ufffe\"") != NULL);
		CHECK(strstr(json, "\"title\":\"\\u003c/title\\u003e\\u003cscript\\u003ealert(4)") != NULL);
		CHECK(strstr(json, "\"total\":60,") != NULL);
		free(json);
	}
	CHECK(strstr(doc, "<title>&lt;/title&gt;&lt;script&gt;alert(4)&lt;/script&gt; &amp; &lt;b&gt;</title>") != NULL);
}

static void test_render_hostile(void)
{
	struct flame_tree *t = hostile_tree();
	struct flame_render_opts o = { .title = HOSTILE_TITLE, .unit = "samples",
				       .subtitle = "sub ]]> </script>" };
	char *svg = capture(flame_write_svg_ex, t, &o, NULL);
	check_hostile_doc(svg, 1);
	CHECK(svg && strncmp(svg, "<?xml version=\"1.0\" encoding=\"UTF-8\"", 36) == 0);
	CHECK(svg && strstr(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\"") != NULL);
	CHECK(svg && xml_well_formed(svg));
	/* the checker itself must reject what it is meant to catch */
	CHECK(!xml_well_formed("<svg><text>a < b</text></svg>"));
	CHECK(!xml_well_formed("<svg><script><![CDATA[ x ]]> ]]></script></svg>"));
	CHECK(!xml_well_formed("<svg><g></svg>"));
	CHECK(!xml_well_formed("<svg>&bogus;</svg>"));
	CHECK(xml_well_formed("<svg a=\"1\"><g/><![CDATA[<]]>&#x41;</svg>"));

	char *html = capture(flame_write_html_ex, t, &o, NULL);
	check_hostile_doc(html, 0);
	CHECK(html && strncmp(html, "<!DOCTYPE html>", 15) == 0);
	CHECK(html && strstr(html, "Content-Security-Policy") != NULL);
	/* the renderer is inline, nothing is loaded from elsewhere */
	CHECK(html && strstr(html, "src=\"") == NULL && strstr(html, "href=\"") == NULL);
	CHECK(svg && strstr(svg, "href=") == NULL);
	free(svg);
	free(html);

	/* NULL opts and an empty tree still produce a valid document */
	struct flame_tree *empty = flame_tree_new();
	svg = capture(flame_write_svg_ex, empty, NULL, NULL);
	CHECK(svg && xml_well_formed(svg));
	CHECK(svg && strstr(svg, "\"total\":0,") != NULL);
	free(svg);
	flame_tree_free(empty);
	flame_tree_free(t);
}

static void test_render_pruning(void)
{
	struct flame_tree *t = flame_tree_new();
	ADD(t, 1000000, "main", "hot");
	char name[32];
	const char *stack[3] = { "main", "cold", name };
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "tiny_%d", i);
		CHECK(flame_tree_add(t, stack, 3, 1) == 0);
	}
	/* default: below 0.0001 of 1001000 (101) is merged; "cold" (1000) stays */
	char *svg = capture(flame_write_svg_ex, t, NULL, NULL);
	char *json = svg ? json_of(svg) : NULL;
	CHECK(json && strstr(json, "\"omitted\":1000,\"omittedBelow\":101,") != NULL);
	CHECK(json && strstr(json, "\"cold\"") != NULL);
	CHECK(json && strstr(json, "tiny_") == NULL);
	CHECK(json && strstr(json, "\"nodes\":[0,0,1001000,0,1,1001000,1,2,1000,1,3,1000000]") != NULL);
	free(json);
	free(svg);

	/* everything kept when asked */
	struct flame_render_limits all = { .min_fraction = 1e-12, .max_nodes = 1u << 20 };
	char *html = capture(flame_write_html_ex, t, NULL, &all);
	json = html ? json_of(html) : NULL;
	CHECK(json && strstr(json, "\"omitted\":0,\"omittedBelow\":0,") != NULL);
	CHECK(json && strstr(json, "\"tiny_999\"") != NULL);
	free(json);
	free(html);

	/* a node budget keeps the largest frames and stays a tree */
	struct flame_render_limits few = { .min_fraction = 1e-12, .max_nodes = 4 };
	svg = capture(flame_write_svg_ex, t, NULL, &few);
	json = svg ? json_of(svg) : NULL;
	CHECK(json && strstr(json, "\"nodes\":[0,0,1001000,0,1,1001000,1,2,1000,1,3,1000000]") != NULL);
	CHECK(json && strstr(json, "\"omitted\":1000,") != NULL);
	CHECK(svg && xml_well_formed(svg));
	free(json);
	free(svg);
	flame_tree_free(t);
}

static void test_render_big(void)
{
	/* 100k+ distinct frames: the writers must stay linear-ish and bounded */
	struct flame_tree *t = flame_tree_new();
	char a[32], b[32];
	const char *stack[3] = { "main", a, b };
	for (unsigned i = 0; i < 60000; i++) {
		snprintf(a, sizeof(a), "mod_%u", i % 300);
		snprintf(b, sizeof(b), "fn_%u", i);
		if (flame_tree_add(t, stack, 3, 1 + i % 7) != 0)
			CHECK(0);
	}
	struct flame_render_limits lim = { .min_fraction = 1e-9, .max_nodes = 50000 };
	char *svg = capture(flame_write_svg_ex, t, NULL, &lim);
	char *json = svg ? json_of(svg) : NULL;
	size_t commas = 0;
	const char *nodes = json ? strstr(json, "\"nodes\":[") : NULL;
	for (const char *p = nodes; p && *p; p++)
		commas += *p == ',';
	CHECK(nodes != NULL);
	CHECK(commas + 1 <= 3 * 50000);
	CHECK(svg && xml_well_formed(svg));
	free(json);
	free(svg);
	flame_tree_free(t);
}

int main(void)
{
	test_known_stacks();
	test_deterministic_order();
	test_memory_bounded_by_stacks();
	test_wide_node();
	test_folded_hostile_names();
	test_render_hostile();
	test_render_pruning();
	test_render_big();
	return check_finish();
}
