/* The MCP server's tools (mcp_tools.h): arguments checked against each
 * tool's spec, the command run with the matching argv, its output served
 * by mcp_result.c. */
#include "mcp_tools.h"
#include "commands.h"
#include "mcp_json.h"
#include "mcp_redact.h"
#include "mcp_result.h"
#include "mcp_tool_defs.h"
#include "out_common.h"
#include "frame_pick.h"
#include "func_story.h"

#include <inttypes.h>

#include <stdlib.h>
#include <string.h>

/* ---- running a command into memory ------------------------------------ */

struct run {
	int rc;
	char *out, *err;
	size_t out_len, err_len;
};

typedef int (*cmd_fn)(int argc, char **argv, FILE *out, FILE *errout);

/* --redact: the copies' paths in what a command printed become the
 * client's names for the traces. */
static int rename_copies(const struct mcp_redact *m, char **text, size_t *len)
{
	size_t n;
	int json = *len && (**text == '{' || **text == '[');
	char *named = mcp_redact_names(m, *text, *len, json, &n);
	if (!named)
		return -1;
	free(*text);
	*text = named;
	*len = n;
	return 0;
}

static int run_cmd(const struct mcp_ctx *c, cmd_fn cmd, char **argv, struct run *r)
{
	memset(r, 0, sizeof(*r));
	int argc = 0;
	while (argv[argc])
		argc++;
	FILE *o = open_memstream(&r->out, &r->out_len), *e = open_memstream(&r->err, &r->err_len);
	if (!o || !e) {
		if (o)
			fclose(o);
		if (e)
			fclose(e);
		free(r->out);
		free(r->err);
		return -1;
	}
	r->rc = cmd(argc, argv, o, e);
	fclose(o);
	fclose(e);
	if (c->redact && (rename_copies(c->redact, &r->out, &r->out_len) ||
			  rename_copies(c->redact, &r->err, &r->err_len))) {
		free(r->out);
		free(r->err);
		return -1;
	}
	return 0;
}

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

/* ---- argv ---------------------------------------------------------------- */

struct argv {
	char **v;
	size_t n, cap;
	int oom;
};

static void push(struct argv *a, const char *s)
{
	if (a->oom)
		return;
	if (a->n + 2 > a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 16;
		char **grown = realloc(a->v, cap * sizeof(*grown));
		if (!grown) {
			a->oom = 1;
			return;
		}
		a->v = grown;
		a->cap = cap;
	}
	if (!(a->v[a->n] = strdup(s)))
		a->oom = 1;
	else
		a->v[++a->n] = NULL;
}

static void argv_free(struct argv *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
}

/* ---- arguments ----------------------------------------------------------- */

struct call {
	const struct mcp_ctx *c;
	const struct tool_def *def;
	const struct mj *args;
	char why[600];     /* a bad argument, for the isError text */
	unsigned max_tokens;
	size_t cursor;
};

static const struct mj *arg(const struct call *k, const char *name)
{
	return mj_get(k->args, name);
}

static int bad(struct call *k, const char *fmt, const char *a, const char *b)
{
	snprintf(k->why, sizeof(k->why), fmt, a, b);
	return -1;
}

/* Every argument known and of its type; max_tokens and cursor read. */
static int check_args(struct call *k)
{
	k->max_tokens = MCP_DEFAULT_TOKENS < k->c->cap_tokens ? MCP_DEFAULT_TOKENS : k->c->cap_tokens;
	if (k->args && k->args->type != MJ_OBJ)
		return bad(k, "arguments must be an object%s%s", "", "");
	for (size_t i = 0; k->args && i < k->args->n; i++) {
		const char *name = k->args->keys[i];
		const struct arg_def *d = NULL;
		for (size_t j = 0; k->def->args[j].name && !d; j++)
			if (!strcmp(k->def->args[j].name, name))
				d = &k->def->args[j];
		if (!d)
			return bad(k, "unknown argument '%.100s'; this tool takes: %s", name,
				   k->def->arg_list);
		const struct mj *v = k->args->items[i];
		int ok = d->type == ARG_STR ? v->type == MJ_STR
			: d->type == ARG_INT ? v->type == MJ_NUM && v->num == (double)(long long)v->num &&
						  v->num >= d->min && v->num <= d->max
			: d->type == ARG_BOOL ? v->type == MJ_BOOL
			: v->type == MJ_ARR && v->n >= 1 && v->n <= 4096;
		for (size_t j = 0; ok && d->type == ARG_PATHS && j < v->n; j++)
			ok = v->items[j]->type == MJ_STR;
		if (ok && d->choices) {
			char padded[80];
			snprintf(padded, sizeof(padded), "|%.60s|", v->str);
			ok = strstr(d->choices, padded) != NULL;
		}
		if (!ok)
			return bad(k, "argument '%s' must be %s", name, d->expect);
	}
	for (size_t j = 0; k->def->args[j].name; j++)
		if (k->def->args[j].required && !arg(k, k->def->args[j].name))
			return bad(k, "missing argument '%s' (%s)", k->def->args[j].name,
				   k->def->args[j].expect);
	const struct mj *mt = arg(k, "max_tokens");
	if (mt)
		k->max_tokens = (unsigned)mt->num < k->c->cap_tokens ? (unsigned)mt->num : k->c->cap_tokens;
	const struct mj *cur = arg(k, "cursor");
	if (cur) {
		char *end;
		unsigned long long v = strtoull(cur->str, &end, 10);
		if (!cur->str[0] || *end)
			return bad(k, "cursor '%.40s' is not one this server gave%s", cur->str, "");
		k->cursor = (size_t)v;
	}
	return 0;
}

/* The resolved paths of a paths argument pushed onto a. */
static int push_paths(struct call *k, struct argv *a, const char *name)
{
	const struct mj *v = arg(k, name);
	for (size_t i = 0; v && i < v->n; i++) {
		char *real = mcp_resolve(k->c->roots, v->items[i]->str);
		if (!real)
			return bad(k, "'%.200s' is not a trace file under the allowed roots (list_traces "
				   "lists them)%s", v->items[i]->str, "");
		if (!k->c->redact) {
			push(a, real);
			free(real);
			continue;
		}
		size_t n = 0;
		const char *const *copies = mcp_redact_copy(k->c->redact, real, &n, k->why, sizeof(k->why));
		free(real);
		if (!copies)
			return -1;
		for (size_t j = 0; j < n; j++)
			push(a, copies[j]);
	}
	return 0;
}

static void push_int(struct argv *a, const char *flag, const struct mj *v)
{
	char buf[32];
	if (!v)
		return;
	snprintf(buf, sizeof(buf), "%lld", (long long)v->num);
	push(a, flag);
	push(a, buf);
}

/* ---- the tools ------------------------------------------------------------ */

static struct mj *served(struct call *k, const char *text, struct mj *data)
{
	return mcp_result(k->def->name, text, k->cursor, data, k->max_tokens, k->c->structured);
}

static struct mj *parse_json(const char *s, size_t len)
{
	char err[128];
	return mj_parse(s, len, err, sizeof(err));
}

/* A command run twice, text and JSON (json_flag appended), served. */
static struct mj *text_and_json(struct call *k, cmd_fn cmd, struct argv *a, const char *json_a,
				const char *json_b)
{
	struct run t, j;
	struct argv aj = { 0 };
	for (size_t i = 0; i < a->n; i++)
		push(&aj, a->v[i]);
	push(&aj, json_a);
	if (json_b)
		push(&aj, json_b);
	if (a->oom || aj.oom || run_cmd(k->c, cmd, a->v, &t)) {
		argv_free(&aj);
		return NULL;
	}
	if (t.rc || run_cmd(k->c, cmd, aj.v, &j)) {
		struct mj *e = mcp_error_result(k->def->name, t.err[0] ? t.err : "the command failed", 0);
		run_free(&t);
		argv_free(&aj);
		return e;
	}
	argv_free(&aj);
	struct mj *data = j.rc ? NULL : parse_json(j.out, j.out_len);
	struct mj *r = data || j.rc ? served(k, t.out, data)
				    : mcp_error_result(k->def->name, "internal: the command's JSON "
							   "did not parse", 0);
	run_free(&t);
	run_free(&j);
	return r;
}


/* Row paging: the cursor counts rows, not text bytes. */
static size_t take_row_cursor(struct call *k)
{
	size_t at = k->cursor;
	k->cursor = 0;
	return at;
}

static unsigned limit_of(struct call *k, unsigned dflt)
{
	const struct mj *v = arg(k, "limit");
	return v ? (unsigned)v->num : dflt;
}

static struct mj *t_list_traces(struct call *k)
{
	struct mcp_listing *v = NULL;
	long n = mcp_list(k->c->roots, &v);
	if (n < 0)
		return NULL;
	size_t from = take_row_cursor(k), limit = limit_of(k, 50);
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	struct mj *list = mj_new(MJ_ARR);
	if (m)
		fprintf(m, "%ld trace files under the roots", n);
	size_t shown = 0;
	for (size_t i = from; m && i < (size_t)n && shown < limit; i++, shown++) {
		fprintf(m, "%s%s\t%llu B\t%s", shown ? "\n" : ":\n", v[i].kind, v[i].bytes, v[i].name);
		struct mj *t = mj_new(MJ_OBJ);
		t = mj_add(t, "path", mj_string(v[i].name));
		t = mj_add(t, "bytes", mj_number((double)v[i].bytes));
		t = mj_add(t, "kind", mj_string(v[i].kind));
		list = mj_add(list, NULL, t);
	}
	if (m)
		fputc('\n', m);
	char next[32];
	snprintf(next, sizeof(next), "%zu", from + shown);
	struct mj *data = mj_new(MJ_OBJ);
	data = mj_add(data, "total", mj_number((double)n));
	data = mj_add(data, "offset", mj_number((double)from));
	data = mj_add(data, "traces", list);
	data = mj_add(data, "next_cursor", from + shown < (size_t)n ? mj_string(next) : mj_new(MJ_NULL));
	mcp_listing_free(v, n);
	if (!m) {
		mj_free(data);
		return NULL;
	}
	fclose(m);
	struct mj *r = data ? served(k, text, data) : NULL;
	free(text);
	return r;
}

static struct mj *t_open_traces(struct call *k)
{
	struct argv a = { 0 };
	push(&a, "info");
	if (push_paths(k, &a, "traces")) {
		argv_free(&a);
		return NULL;
	}
	struct mj *r = text_and_json(k, cmd_info, &a, "--json", NULL);
	argv_free(&a);
	return r;
}

static struct mj *t_get_summary(struct call *k)
{
	struct argv a = { 0 };
	push(&a, "summary");
	if (push_paths(k, &a, "traces")) {
		argv_free(&a);
		return NULL;
	}
	struct mj *r = text_and_json(k, cmd_summary, &a, "--format", "json");
	argv_free(&a);
	return r;
}

/* findings' text for finding n: from "\nN. " to the next blank line. */
static char *finding_text(const char *text, unsigned n)
{
	char head[32];
	snprintf(head, sizeof(head), "\n%u. ", n);
	const char *p = strstr(text, head);
	if (!p)
		return strdup("");
	p++;
	const char *end = strstr(p, "\n\n");
	return strndup(p, end ? (size_t)(end - p + 1) : strlen(p));
}

static struct mj *t_list_findings(struct call *k)
{
	struct argv a = { 0 };
	push(&a, "findings");
	if (push_paths(k, &a, "traces")) {
		argv_free(&a);
		return NULL;
	}
	const struct mj *num = arg(k, "number");
	if (!num) {
		struct mj *r = text_and_json(k, cmd_findings, &a, "--json", NULL);
		argv_free(&a);
		return r;
	}
	struct run t, j;
	push(&a, "--json");
	if (a.oom || run_cmd(k->c, cmd_findings, a.v, &j)) {
		argv_free(&a);
		return NULL;
	}
	a.n--;
	free(a.v[a.n]);
	a.v[a.n] = NULL;
	if (j.rc || run_cmd(k->c, cmd_findings, a.v, &t)) {
		struct mj *e = mcp_error_result(k->def->name, j.err, 0);
		run_free(&j);
		argv_free(&a);
		return e;
	}
	argv_free(&a);
	struct mj *all = parse_json(j.out, j.out_len), *r = NULL;
	const struct mj *list = mj_get(all, "findings");
	unsigned n = (unsigned)num->num;
	if (all && list && list->type == MJ_ARR && n >= 1 && n <= list->n) {
		struct mj *data = mj_new(MJ_OBJ);
		data = mj_add(data, "number", mj_number(n));
		data = mj_add(data, "of", mj_number((double)list->n));
		struct mj *one = list->items[n - 1];
		list->items[n - 1] = mj_new(MJ_NULL);
		data = mj_add(data, "finding", one);
		char *text = finding_text(t.out, n);
		r = data && text ? served(k, text, data) : NULL;
		free(text);
	} else if (all) {
		char why[160];
		snprintf(why, sizeof(why), "no finding number %u: the recording has %zu (list_findings "
			 "without number lists them)", n, list && list->type == MJ_ARR ? list->n : 0);
		r = mcp_error_result(k->def->name, why, 0);
	}
	mj_free(all);
	run_free(&t);
	run_free(&j);
	return r;
}

struct path_row {
	char *stack;
	uint64_t value;
};

static int path_order(const void *pa, const void *pb)
{
	const struct path_row *a = pa, *b = pb;
	if (a->value != b->value)
		return a->value > b->value ? -1 : 1;
	return strcmp(a->stack, b->stack);
}

static int path_text_order(const void *pa, const void *pb)
{
	return strcmp(((const struct path_row *)pa)->stack, ((const struct path_row *)pb)->stack);
}

/* Folded lines -> rows through the frame (if any), each stack as
 * frame_pick.h shows it, equal ones merged. */
static struct path_row *fold_rows(char *folded, const char *through, size_t keep, size_t *n,
				  uint64_t *total, uint64_t *kept)
{
	struct path_row *rows = NULL;
	size_t cap = 0;
	const char **frames = NULL;
	size_t fcap = 0;
	*n = 0;
	*total = *kept = 0;
	char buf[4096];
	for (char *save, *line = strtok_r(folded, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' ');
		if (!sp)
			continue;
		*sp = '\0';
		uint64_t v = strtoull(sp + 1, NULL, 10);
		*total += v;
		size_t nf = 0;
		int hit = !through;
		for (char *s2, *f = strtok_r(line, ";", &s2); f; f = strtok_r(NULL, ";", &s2)) {
			if (nf == fcap) {
				fcap = fcap ? fcap * 2 : 64;
				const char **g = realloc(frames, fcap * sizeof(*g));
				if (!g)
					goto oom;
				frames = g;
			}
			frames[nf++] = f;
			hit |= through && func_frame_matches(f, through);
		}
		if (!hit)
			continue;
		*kept += v;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			struct path_row *g = realloc(rows, cap * sizeof(*g));
			if (!g)
				goto oom;
			rows = g;
		}
		rows[*n].stack = strdup(frame_pick_text(NULL, frames, nf, keep, buf, sizeof(buf)));
		rows[*n].value = v;
		if (!rows[(*n)++].stack)
			goto oom;
	}
	free(frames);
	if (*n)
		qsort(rows, *n, sizeof(*rows), path_text_order);
	size_t m = 0;
	for (size_t i = 0; i < *n; i++) {
		if (m && !strcmp(rows[m - 1].stack, rows[i].stack)) {
			rows[m - 1].value += rows[i].value;
			free(rows[i].stack);
		} else {
			rows[m++] = rows[i];
		}
	}
	*n = m;
	if (m)
		qsort(rows, m, sizeof(*rows), path_order);
	return rows ? rows : calloc(1, sizeof(*rows));
oom:
	free(frames);
	for (size_t i = 0; i < *n; i++)
		free(rows[i].stack);
	free(rows);
	return NULL;
}

static struct mj *t_hot_paths(struct call *k)
{
	struct argv a = { 0 };
	const char *kind = mj_str(k->args, "kind") ? mj_str(k->args, "kind") : "cpu";
	push(&a, "flame");
	if (push_paths(k, &a, "traces")) {
		argv_free(&a);
		return NULL;
	}
	push(&a, "--kind");
	push(&a, kind);
	push_int(&a, "--pid", arg(k, "pid"));
	push(&a, "-o");
	push(&a, "-");
	struct run f;
	if (a.oom || run_cmd(k->c, cmd_flame, a.v, &f)) {
		argv_free(&a);
		return NULL;
	}
	argv_free(&a);
	if (f.rc) {
		struct mj *e = mcp_error_result(k->def->name, f.err, 0);
		run_free(&f);
		return e;
	}
	const struct mj *fr = arg(k, "frames");
	size_t n, from = take_row_cursor(k), limit = limit_of(k, 15);
	uint64_t total, kept;
	struct path_row *rows = fold_rows(f.out, mj_str(k->args, "through"), fr ? (size_t)fr->num : 8,
					  &n, &total, &kept);
	run_free(&f);
	if (!rows)
		return NULL;
	const char *unit = strcmp(kind, "cpu") ? "bytes" : "samples";
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	struct mj *list = mj_new(MJ_ARR);
	if (m)
		fprintf(m, "%s: %" PRIu64 " %s in all, %" PRIu64 " through the filter, %zu merged stacks"
			" (frames an agent can act on; [+N]: N frames collapsed)\nrank\tshare\t%s\tstack\n",
			kind, total, unit, kept, n, unit);
	size_t shown = 0;
	for (size_t i = from; i < n && shown < limit; i++, shown++) {
		double share = total ? (double)rows[i].value / (double)total : 0;
		if (m)
			fprintf(m, "%zu\t%.1f%%\t%" PRIu64 "\t%s\n", i + 1, 100 * share, rows[i].value,
				rows[i].stack);
		struct mj *row = mj_new(MJ_OBJ);
		row = mj_add(row, "rank", mj_number((double)i + 1));
		row = mj_add(row, "value", mj_number((double)rows[i].value));
		row = mj_add(row, "share", mj_number(share));
		row = mj_add(row, "stack", mj_string(rows[i].stack));
		list = mj_add(list, NULL, row);
	}
	char next[32];
	snprintf(next, sizeof(next), "%zu", from + shown);
	struct mj *data = mj_new(MJ_OBJ);
	data = mj_add(data, "kind", mj_string(kind));
	data = mj_add(data, "unit", mj_string(unit));
	data = mj_add(data, "total", mj_number((double)total));
	data = mj_add(data, "through_total", mj_number((double)kept));
	data = mj_add(data, "stacks", mj_number((double)n));
	data = mj_add(data, "rows", list);
	data = mj_add(data, "next_cursor", from + shown < n ? mj_string(next) : mj_new(MJ_NULL));
	for (size_t i = 0; i < n; i++)
		free(rows[i].stack);
	free(rows);
	if (!m) {
		mj_free(data);
		return NULL;
	}
	fclose(m);
	struct mj *r = data ? served(k, text, data) : NULL;
	free(text);
	return r;
}

static struct mj *t_explain(struct call *k)
{
	struct argv a = { 0 };
	push(&a, "explain");
	push(&a, mj_str(k->args, "function"));
	if (push_paths(k, &a, "traces")) {
		argv_free(&a);
		return NULL;
	}
	push_int(&a, "--pid", arg(k, "pid"));
	push_int(&a, "--top", arg(k, "limit"));
	struct run t;
	if (a.oom || run_cmd(k->c, cmd_explain, a.v, &t)) {
		argv_free(&a);
		return NULL;
	}
	struct mj *r;
	if (t.rc == 1 && t.out_len) { /* no such frame: the candidates are the answer */
		r = mcp_error_result(k->def->name, t.out, 0);
	} else {
		r = text_and_json(k, cmd_explain, &a, "--json", NULL);
	}
	run_free(&t);
	argv_free(&a);
	return r;
}

static struct mj *t_get_report(struct call *k)
{
	static const struct { const char *section; cmd_fn cmd; const char *top; } sections[] = {
		{ "memory", cmd_memory, "--rows" }, { "cuda", cmd_cuda, "--top" },
		{ "stragglers", cmd_stragglers, NULL }, { "rdma", cmd_rdma, NULL },
	};
	const char *section = mj_str(k->args, "section");
	size_t s = 0;
	while (s < 3 && strcmp(sections[s].section, section))
		s++;
	struct argv a = { 0 };
	push(&a, section);
	if (push_paths(k, &a, "traces")) {
		argv_free(&a);
		return NULL;
	}
	push_int(&a, "--pid", arg(k, "pid"));
	if (sections[s].top)
		push_int(&a, sections[s].top, arg(k, "limit"));
	struct mj *r = text_and_json(k, sections[s].cmd, &a, "--json", NULL);
	argv_free(&a);
	return r;
}

static struct mj *t_diff(struct call *k)
{
	struct argv a = { 0 };
	push(&a, "diff");
	if (push_paths(k, &a, "before")) {
		argv_free(&a);
		return NULL;
	}
	push(&a, "--");
	if (push_paths(k, &a, "after")) {
		argv_free(&a);
		return NULL;
	}
	push_int(&a, "--top", arg(k, "limit"));
	struct mj *r = text_and_json(k, cmd_diff, &a, "--json", NULL);
	argv_free(&a);
	return r;
}

static struct mj *t_query_events(struct call *k)
{
	struct argv a = { 0 };
	push(&a, "dump");
	if (push_paths(k, &a, "traces")) {
		argv_free(&a);
		return NULL;
	}
	if (mj_str(k->args, "types")) {
		push(&a, "--type");
		push(&a, mj_str(k->args, "types"));
	}
	push_int(&a, "--pid", arg(k, "pid"));
	const struct mj *stacks = arg(k, "stacks");
	if (!stacks || !stacks->boolean)
		push(&a, "--no-stacks");
	struct run d;
	if (a.oom || run_cmd(k->c, cmd_dump, a.v, &d)) {
		argv_free(&a);
		return NULL;
	}
	argv_free(&a);
	if (d.rc) {
		struct mj *e = mcp_error_result(k->def->name, d.err, 0);
		run_free(&d);
		return e;
	}
	const char *name = mj_str(k->args, "name");
	size_t from = take_row_cursor(k), limit = limit_of(k, 50), matched = 0, shown = 0;
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	struct mj *events = mj_new(MJ_ARR);
	for (char *save, *line = strtok_r(d.out, "\n", &save); m && line;
	     line = strtok_r(NULL, "\n", &save)) {
		struct mj *ev = parse_json(line, strlen(line));
		const char *en = mj_str(ev, "name");
		if (!ev || (name && (!en || !strstr(en, name)))) {
			mj_free(ev);
			continue;
		}
		if (matched++ < from || shown >= limit) {
			mj_free(ev);
			continue;
		}
		shown++;
		fprintf(m, "%s\n", line);
		events = mj_add(events, NULL, ev);
	}
	run_free(&d);
	char next[32];
	snprintf(next, sizeof(next), "%zu", from + shown);
	struct mj *data = mj_new(MJ_OBJ);
	data = mj_add(data, "matched", mj_number((double)matched));
	data = mj_add(data, "offset", mj_number((double)from));
	data = mj_add(data, "events", events);
	data = mj_add(data, "next_cursor", from + shown < matched ? mj_string(next) : mj_new(MJ_NULL));
	if (!m) {
		mj_free(data);
		return NULL;
	}
	fclose(m);
	struct mj *r = data ? served(k, text, data) : NULL;
	free(text);
	return r;
}

/* ---- the table ------------------------------------------------------------ */

#define A_TRACES { "traces", ARG_PATHS, 1, 0, 0, NULL, "an array of 1-4096 trace paths", \
		   "trace files or archives, relative to a root or absolute inside one" }
#define A_BUDGET { "max_tokens", ARG_INT, 0, 256, 8000, NULL, "an integer 256-8000", \
		   "token budget of this result, counted as bytes/4 (default 2000)" }, \
		 { "cursor", ARG_STR, 0, 0, 0, NULL, "a cursor a result of this tool gave", \
		   "continue a result that was cut (next_cursor)" }
#define A_PID { "pid", ARG_INT, 0, 1, 4294967295.0, NULL, "a process id", "only this process" }
#define A_LIMIT(d) { "limit", ARG_INT, 0, 1, 500, NULL, "an integer 1-500", "rows per list (" d ")" }

static const struct tool_def tool_defs[] = {
	{ "list_traces", "List traces", "The trace files and archives under the server's roots, "
	  "by name, with sizes. Start here; pass the names to the other tools.",
	  "limit, max_tokens, cursor", { A_LIMIT("50"), A_BUDGET }, t_list_traces },
	{ "open_traces", "Open traces", "What traces hold: per file the host, command, time "
	  "range, processes, probes with their event and drop counts, status (intact, damaged ...).",
	  "traces, max_tokens, cursor", { A_TRACES, A_BUDGET }, t_open_traces },
	{ "get_summary", "Summary", "The whole recording in at most 2,000 tokens: findings (why the "
	  "GPUs wait, cost, fix), CPU hot stacks, GPU memory, stragglers, RDMA, drops. Call first.",
	  "traces, max_tokens, cursor", { A_TRACES, A_BUDGET }, t_get_summary },
	{ "list_findings", "Findings", "Why the GPUs wait: each cause with its cost in ms of GPU "
	  "idle (total and per step), where (innermost frames), evidence and fix. With number: "
	  "that finding alone.", "traces, number, max_tokens, cursor",
	  { A_TRACES, { "number", ARG_INT, 0, 1, 1000, NULL, "an integer 1-1000",
		       "one finding, as list_findings numbers them" }, A_BUDGET }, t_list_findings },
	{ "hot_paths", "Hot paths", "The heaviest stacks of CPU samples or GPU memory (in use at "
	  "the peak, or allocated), shown by the frames a person can act on, optionally only those "
	  "through one frame.", "traces, kind, through, pid, frames, limit, max_tokens, cursor",
	  { A_TRACES, { "kind", ARG_STR, 0, 0, 0, "|cpu|mem-inuse|mem-alloc|",
			"one of cpu, mem-inuse, mem-alloc", "what the stacks weigh (default cpu)" },
	    { "through", ARG_STR, 0, 0, 0, NULL, "a frame name", "only stacks holding this frame" },
	    A_PID, { "frames", ARG_INT, 0, 1, 64, NULL, "an integer 1-64",
		     "picked frames kept per stack (default 8)" }, A_LIMIT("15"), A_BUDGET },
	  t_hot_paths },
	{ "explain", "Explain a function", "One function's whole story: CPU share (self, total), "
	  "callers, callees, CUDA calls and system calls under it, GPU memory it allocated, "
	  "findings naming it, processes, module and offset or Python file and line.",
	  "traces, function, pid, limit, max_tokens, cursor",
	  { A_TRACES, { "function", ARG_STR, 1, 0, 0, NULL, "a frame name",
			"a frame name as hot_paths shows it (a Python function matches every line)" },
	    A_PID, A_LIMIT("10"), A_BUDGET }, t_explain },
	{ "get_report", "Report section", "One analysis in full: memory (peak, holders, failed "
	  "allocations, leaks), cuda (time per call, copies), stragglers (verdict, per rank), rdma "
	  "(per connection latency and errors).", "traces, section, pid, limit, max_tokens, cursor",
	  { A_TRACES, { "section", ARG_STR, 1, 0, 0, "|memory|cuda|stragglers|rdma|",
			"one of memory, cuda, stragglers, rdma", "which analysis" },
	    A_PID, A_LIMIT("5 or 20"), A_BUDGET }, t_get_report },
	{ "diff", "Compare recordings", "Two recordings compared (before and after a change): step "
	  "time, GPU idle, each finding's cost per step, the functions and stacks whose CPU, CUDA "
	  "time or GPU memory changed most, and whether the two are comparable.",
	  "before, after, limit, max_tokens, cursor",
	  { { "before", ARG_PATHS, 1, 0, 0, NULL, "an array of trace paths", "the recording before" },
	    { "after", ARG_PATHS, 1, 0, 0, NULL, "an array of trace paths", "the recording after" },
	    A_LIMIT("10"), A_BUDGET }, t_diff },
	{ "query_events", "Query events", "Events one by one, read-only, filtered by type, process "
	  "and name, paged: for questions the other tools do not answer.",
	  "traces, types, pid, name, stacks, limit, max_tokens, cursor",
	  { A_TRACES, { "types", ARG_STR, 0, 0, 0, NULL, "comma-separated event types",
			"only these types (syscall, cuda, cpu_sample, nccl ...)" },
	    A_PID, { "name", ARG_STR, 0, 0, 0, NULL, "a string", "only events whose name holds it" },
	    { "stacks", ARG_BOOL, 0, 0, 0, NULL, "true or false", "with symbolized stacks" },
	    A_LIMIT("50"), A_BUDGET }, t_query_events },
};
#define N_TOOL_DEFS (sizeof(tool_defs) / sizeof(tool_defs[0]))

static void write_schema(FILE *out, const struct tool_def *d)
{
	fputs("{\"type\":\"object\",\"properties\":{", out);
	for (size_t i = 0; d->args[i].name; i++) {
		const struct arg_def *a = &d->args[i];
		fprintf(out, "%s\"%s\":{", i ? "," : "", a->name);
		switch (a->type) {
		case ARG_STR:
			fputs("\"type\":\"string\"", out);
			if (a->choices) {
				fputs(",\"enum\":[", out);
				int first = 1;
				for (const char *p = a->choices + 1; *p; ) {
					const char *e = strchr(p, '|');
					fprintf(out, "%s\"%.*s\"", first ? "" : ",", (int)(e - p), p);
					first = 0;
					p = e + 1;
				}
				fputc(']', out);
			}
			break;
		case ARG_INT:
			fprintf(out, "\"type\":\"integer\",\"minimum\":%.0f,\"maximum\":%.0f", a->min, a->max);
			break;
		case ARG_BOOL:
			fputs("\"type\":\"boolean\"", out);
			break;
		case ARG_PATHS:
			fputs("\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":1,"
			      "\"maxItems\":4096", out);
			break;
		}
		fputs(",\"description\":", out);
		out_json_str(out, a->description);
		fputc('}', out);
	}
	fputs("},\"required\":[", out);
	int first = 1;
	for (size_t i = 0; d->args[i].name; i++) {
		if (d->args[i].required) {
			fprintf(out, "%s\"%s\"", first ? "" : ",", d->args[i].name);
			first = 0;
		}
	}
	fputs("],\"additionalProperties\":false}", out);
}

static const char output_schema[] =
	"{\"type\":\"object\",\"properties\":{\"tool\":{\"type\":\"string\"},"
	"\"truncated\":{\"type\":\"boolean\"},\"next_cursor\":{\"type\":[\"string\",\"null\"]},"
	"\"untrusted\":{\"type\":\"string\"},\"suspicious_strings\":{\"type\":\"integer\"},"
	"\"budget\":{\"type\":\"object\",\"properties\":{\"rule\":{\"type\":\"string\"},"
	"\"max_tokens\":{\"type\":\"integer\"},\"est_tokens\":{\"type\":\"integer\"},"
	"\"trimmed\":{\"type\":\"array\"}},\"required\":[\"rule\",\"max_tokens\",\"est_tokens\"]},"
	"\"data\":{\"type\":\"object\"}},"
	"\"required\":[\"tool\",\"truncated\",\"budget\",\"data\"]}";

void mcp_tools_write(FILE *out, int with_output_schema)
{
	fputc('[', out);
	for (size_t i = 0; i < N_TOOL_DEFS; i++) {
		const struct tool_def *d = &tool_defs[i];
		fprintf(out, "%s{\"name\":\"%s\",\"title\":", i ? "," : "", d->name);
		out_json_str(out, d->title);
		fputs(",\"description\":", out);
		out_json_str(out, d->description);
		fputs(",\"inputSchema\":", out);
		write_schema(out, d);
		if (with_output_schema)
			fprintf(out, ",\"outputSchema\":%s", output_schema);
		fputs(",\"annotations\":{\"readOnlyHint\":true,\"destructiveHint\":false,"
		      "\"idempotentHint\":true,\"openWorldHint\":true}}", out);
	}
	fputc(']', out);
}

int mcp_tool_call(const struct mcp_ctx *c, const char *name, const struct mj *args,
		  struct mj **result)
{
	const struct tool_def *def = NULL;
	for (size_t i = 0; i < N_TOOL_DEFS && !def; i++)
		if (!strcmp(tool_defs[i].name, name))
			def = &tool_defs[i];
	if (!def)
		return 1;
	struct call k = { .c = c, .def = def, .args = args };
	if (check_args(&k)) {
		*result = mcp_error_result(name, k.why, c->structured);
		return *result ? 0 : -1;
	}
	*result = def->run(&k);
	if (!*result && k.why[0])
		*result = mcp_error_result(name, k.why, c->structured);
	return *result ? 0 : -1;
}
