/* One function's story: walks of the models' trees and rows, nothing
 * recounted (func_story.h says what each number is). */
#include "func_story.h"
#include "flame_tree.h"
#include "frame_pick.h"
#include "hmap.h"
#include "model_cpu.h"
#include "model_findings.h"
#include "model_mem.h"
#include "symbolize.h"
#include "trace_set.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int func_frame_matches(const char *frame, const char *fn)
{
	size_t n = strlen(fn);
	return n && !strncmp(frame, fn, n) && (!frame[n] || (frame[n] == ' ' && frame[n + 1] == '('));
}

/* A list of (name, samples) that merges equal names: small, so linear. */
struct edges {
	struct story_edge *v;
	size_t n, cap;
};

static int edges_add(struct edges *e, const char *name, uint64_t samples)
{
	for (size_t i = 0; i < e->n; i++) {
		if (!strcmp(e->v[i].name, name)) {
			e->v[i].samples += samples;
			return 0;
		}
	}
	if (e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 8;
		struct story_edge *grown = realloc(e->v, cap * sizeof(*grown));
		if (!grown)
			return -1;
		e->v = grown;
		e->cap = cap;
	}
	e->v[e->n++] = (struct story_edge){ name, samples };
	return 0;
}

static int edge_order(const void *pa, const void *pb)
{
	const struct story_edge *a = pa, *b = pb;
	if (a->samples != b->samples)
		return a->samples > b->samples ? -1 : 1;
	return strcmp(a->name, b->name);
}

static void edges_sort(struct edges *e)
{
	if (e->n)
		qsort(e->v, e->n, sizeof(*e->v), edge_order);
}

/* The value under fn in a tree: nodes matching fn with no matching
 * ancestor (parents come before their children in a flame tree).
 * Callers and callees are the nearest frames that are not interpreter
 * internals or unnamed offsets (frame_pick.h): Linear.forward's caller is
 * Module._call_impl, not _PyObject_MakeTpCall; what ends in such frames
 * under fn is the callee STORY_COLLAPSED. */
static int tree_under(const struct flame_tree *t, const char *fn, uint64_t *under,
		      uint64_t *self, struct edges *callers, struct edges *callees,
		      struct edges *frames)
{
	size_t n = t ? flame_tree_count(t) : 0;
	*under = 0;
	if (self)
		*self = 0;
	if (n < 2)
		return 0;
	/* state bit 0: matches, bit 1: an ancestor matches, bit 2: collapsed */
	uint8_t *state = calloc(n, 1);
	uint32_t *anchor = calloc(n, sizeof(*anchor)); /* nearest ancestor not collapsed */
	int rc = state && anchor ? 0 : -1;
	for (uint32_t i = 1; i < n && !rc; i++) {
		const struct flame_node *nd = flame_tree_node(t, i);
		uint32_t p = nd->parent;
		uint8_t up = p ? state[p] : 0;
		int match = func_frame_matches(nd->name, fn);
		enum frame_class c = frame_classify(NULL, nd->name);
		state[i] = (uint8_t)((up & 3 ? 2 : 0) | (match ? 1 : 0) |
				     (!match && (c == FC_INTERP || c == FC_UNNAMED) ? 4 : 0));
		anchor[i] = p && (state[p] & 4) ? anchor[p] : p;
		uint32_t a = anchor[i];
		int under_match = a && (state[a] & 1);
		if (!match) {
			if (callees && under_match && !(state[i] & 4))
				rc = edges_add(callees, nd->name, nd->total);
			else if (callees && under_match && nd->self)
				rc = edges_add(callees, STORY_COLLAPSED, nd->self);
			continue;
		}
		if (self)
			*self += nd->self;
		if (frames)
			rc = edges_add(frames, nd->name, nd->total);
		if (state[i] & 2)
			continue;
		*under += nd->total;
		if (callers && !rc)
			rc = edges_add(callers, a ? flame_tree_node(t, a)->name : "[root]", nd->total);
	}
	free(state);
	free(anchor);
	return rc;
}

/* The frames of every stack the rows name, asked once per (file, stack). */
struct stack_memo {
	struct hmap seen; /* (file, stack) -> 1 not under fn, 2 under */
	struct symbolizer *sym;
	const char **frames;
	size_t cap;
};

static int stack_under(struct stack_memo *mm, struct trace_set *ts, struct func_story *out,
		       uint32_t file, uint32_t stack_id, const char *fn)
{
	uint64_t v;
	if (hmap_get(&mm->seen, file, stack_id, &v))
		return v == 2;
	const struct trace_file *f = trace_set_file(ts, file);
	size_t n = f ? symbolize_frames(mm->sym, f, file, stack_id, &mm->frames, &mm->cap, NULL) : 0;
	if (n == SIZE_MAX)
		return -1;
	int under = 0;
	for (size_t i = 0; i < n && !under; i++)
		under = func_frame_matches(mm->frames[i], fn);
	/* where the code is: the first frame-pointer stack that names it */
	const struct ts_stack *st = under && !out->module && stack_id ? trace_file_stack(f, stack_id) : NULL;
	if (st && !st->ustack) {
		const uint64_t *user = f->ips + st->ips_at + st->n_kernel;
		for (size_t i = 0; i < st->n_user && !out->module; i++) {
			uint64_t ip = user[i] - !(i == 0 && st->n_kernel == 0);
			const char *name = symbolize_ip(mm->sym, file, st->pid, ip);
			const char *path;
			uint64_t off, sym_off;
			int has_sym;
			if (name && func_frame_matches(name, fn) &&
			    symbolize_ip_where(mm->sym, file, st->pid, ip, &path, &off, &has_sym, &sym_off)) {
				out->module = path;
				out->has_offset = has_sym;
				out->offset = sym_off;
			}
		}
	}
	return hmap_put(&mm->seen, file, stack_id, under ? 2 : 1) ? -1 : under;
}

static int call_order(const void *pa, const void *pb)
{
	const struct story_call *a = pa, *b = pb;
	if (a->total_ns != b->total_ns)
		return a->total_ns > b->total_ns ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int calls_add(struct story_call **v, size_t *n, const struct sc_row *r)
{
	char buf[48];
	const char *name = sc_func_name(r, buf, sizeof(buf));
	for (size_t i = 0; i < *n; i++) {
		if (!strcmp((*v)[i].name, name)) {
			(*v)[i].count += r->count;
			(*v)[i].total_ns += r->total_ns;
			(*v)[i].errors += r->errors;
			return 0;
		}
	}
	struct story_call *grown = realloc(*v, (*n + 1) * sizeof(**v));
	if (!grown)
		return -1;
	*v = grown;
	struct story_call *c = &grown[(*n)++];
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->count = r->count;
	c->total_ns = r->total_ns;
	c->errors = r->errors;
	return 0;
}

static struct story_proc *proc_of(struct trace_set *ts, struct func_story *out, uint32_t file,
				  uint32_t pid)
{
	/* rows come by file, pid: a process is new or the last one */
	if (out->n_procs && out->procs[out->n_procs - 1].file == file &&
	    out->procs[out->n_procs - 1].pid == pid)
		return &out->procs[out->n_procs - 1];
	struct story_proc *grown = realloc(out->procs, (out->n_procs + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	out->procs = grown;
	const struct ts_process *p = trace_file_process(trace_set_file(ts, file), pid);
	struct story_proc *sp = &grown[out->n_procs++];
	*sp = (struct story_proc){ .file = file, .pid = pid, .rank = p ? p->rank : -1,
				   .comm = p ? p->comm : "" };
	return sp;
}

/* Where a frame whose stacks hold no ips (dwarf mode) is: a symbol of the
 * file's ELF objects named exactly fn. */
static void module_by_symbol(struct trace_set *ts, const char *fn, struct func_story *out)
{
	for (size_t fi = 0; fi < trace_set_count(ts) && !out->module; fi++) {
		const struct trace_file *f = trace_set_file(ts, fi);
		for (size_t d = 0; d < f->n_dsos && !out->module; d++) {
			const struct ts_dso *dso = &f->dsos[d];
			for (uint32_t k = 0; dso->kind == 0 && k < dso->nsyms; k++) {
				if (!strcmp(dso->strtab + dso->syms[k].name_off, fn)) {
					out->module = dso->path;
					out->has_offset = 1;
					out->offset = dso->syms[k].offset;
					break;
				}
			}
		}
	}
}

/* "forward (model.py:12)" -> source "model.py", line 12. */
static void source_of(const char *frame, const char *fn, struct func_story *out)
{
	size_t n = strlen(fn);
	if (strncmp(frame, fn, n) || frame[n] != ' ' || frame[n + 1] != '(')
		return;
	const char *file = frame + n + 2, *end = strrchr(file, ')');
	if (!end)
		return;
	const char *colon = end;
	while (colon > file && colon[-1] >= '0' && colon[-1] <= '9')
		colon--;
	size_t len = (size_t)(end - file);
	if (colon > file && colon[-1] == ':' && colon < end) {
		out->line = atoi(colon);
		len = (size_t)(colon - 1 - file);
	}
	snprintf(out->source, sizeof(out->source), "%.*s", (int)(len < 255 ? len : 255), file);
}

/* Frames whose names hold fn: the CPU tree's (with their samples), then
 * those only GPU memory or the CUDA and system calls' stacks name (0
 * samples: a function that spends no CPU but calls cudaMemcpy). */
static int candidates_of(const struct flame_tree *t, const struct flame_tree *mem,
			 const struct stack_calls_result *calls, struct stack_memo *mm,
			 struct trace_set *ts, const char *fn, struct func_story *out)
{
	struct edges c = { 0 };
	int rc = 0;
	const struct flame_tree *trees[] = { t, mem };
	for (int k = 0; k < 2 && !rc; k++) {
		size_t n = trees[k] ? flame_tree_count(trees[k]) : 0;
		for (uint32_t i = 1; i < n && !rc; i++) {
			const struct flame_node *nd = flame_tree_node(trees[k], i);
			if (strstr(nd->name, fn))
				rc = edges_add(&c, nd->name, k ? 0 : nd->total);
		}
	}
	struct hmap done;
	hmap_init(&done);
	for (size_t i = 0; calls && i < calls->n_rows && !rc; i++) {
		const struct sc_row *r = &calls->rows[i];
		uint64_t v;
		if (r->kind == SC_CPU || hmap_get(&done, r->file, r->stack_id, &v))
			continue;
		rc = hmap_put(&done, r->file, r->stack_id, 1);
		const struct trace_file *f = trace_set_file(ts, r->file);
		size_t n = f && !rc ? symbolize_frames(mm->sym, f, r->file, r->stack_id, &mm->frames,
						      &mm->cap, NULL) : 0;
		if (n == SIZE_MAX)
			rc = -1;
		for (size_t k = 0; k < n && n != SIZE_MAX && !rc; k++)
			if (strstr(mm->frames[k], fn))
				rc = edges_add(&c, mm->frames[k], 0);
	}
	hmap_free(&done);
	if (rc) {
		free(c.v);
		return -1;
	}
	edges_sort(&c);
	out->candidates = c.v;
	out->n_candidates = c.n < STORY_MAX_CANDIDATES ? c.n : STORY_MAX_CANDIDATES;
	return 0;
}

int func_story_build(struct trace_set *ts, const struct story_input *in, const char *fn,
		     struct func_story *out, struct frec_error *err)
{
	memset(out, 0, sizeof(*out));
	out->function = fn;
	struct edges callers = { 0 }, callees = { 0 }, frames = { 0 };
	struct stack_memo mm = { .sym = trace_set_symbolizer(ts, err) };
	hmap_init(&mm.seen);
	int rc = -1;
	if (!mm.sym)
		goto done;
	const struct flame_tree *cpu = in->cpu ? in->cpu->tree : NULL;
	out->samples = cpu ? flame_tree_total(cpu) : 0;
	if (tree_under(cpu, fn, &out->total, &out->self, &callers, &callees, &frames))
		goto oom;
	if (in->mem && in->mem->device_allocs) {
		out->has_mem = 1;
		out->mem_alloc_total = in->mem->alloc ? flame_tree_total(in->mem->alloc) : 0;
		out->mem_inuse_total = in->mem->inuse ? flame_tree_total(in->mem->inuse) : 0;
		if (tree_under(in->mem->alloc, fn, &out->mem_alloc_bytes, NULL, NULL, NULL, NULL) ||
		    tree_under(in->mem->inuse, fn, &out->mem_inuse_bytes, NULL, NULL, NULL, NULL))
			goto oom;
	}
	for (size_t i = 0; in->calls && i < in->calls->n_rows; i++) {
		const struct sc_row *r = &in->calls->rows[i];
		int under = stack_under(&mm, ts, out, r->file, r->stack_id, fn);
		if (under < 0)
			goto oom;
		if (!under)
			continue;
		struct story_proc *p = proc_of(ts, out, r->file, r->pid);
		if (!p)
			goto oom;
		if (r->kind == SC_CPU) {
			p->samples += r->count;
		} else if (r->kind == SC_CUDA) {
			p->cuda_calls += r->count;
			p->cuda_ns += r->total_ns;
			out->cuda_calls += r->count;
			out->cuda_ns += r->total_ns;
			out->cuda_errors += r->errors;
			if (calls_add(&out->cuda, &out->n_cuda, r))
				goto oom;
		} else {
			p->syscalls += r->count;
			out->syscall_calls += r->count;
			out->syscall_ns += r->total_ns;
			out->syscall_errors += r->errors;
			if (calls_add(&out->syscalls, &out->n_syscalls, r))
				goto oom;
		}
	}
	if (out->cuda)
		qsort(out->cuda, out->n_cuda, sizeof(*out->cuda), call_order);
	if (out->syscalls)
		qsort(out->syscalls, out->n_syscalls, sizeof(*out->syscalls), call_order);
	const struct findings_result *fx = in->findings;
	for (size_t i = 0; fx && i < fx->n_findings; i++) {
		int hit = 0;
		for (size_t k = 0; k < fx->findings[i].n_where && !hit; k++)
			hit = fx->findings[i].where[k] && func_frame_matches(fx->findings[i].where[k], fn);
		if (!hit)
			continue;
		size_t *grown = realloc(out->findings, (out->n_findings + 1) * sizeof(*grown));
		if (!grown)
			goto oom;
		out->findings = grown;
		grown[out->n_findings++] = i;
	}
	edges_sort(&callers);
	edges_sort(&callees);
	edges_sort(&frames);
	out->found = frames.n || out->n_procs || out->n_findings || out->mem_alloc_bytes ||
		     out->mem_inuse_bytes;
	if (frames.n)
		source_of(frames.v[0].name, fn, out);
	if (out->found && !out->module && !out->source[0])
		module_by_symbol(ts, fn, out);
	if (!out->found && candidates_of(cpu, in->mem ? in->mem->alloc : NULL, in->calls, &mm, ts, fn,
					 out))
		goto oom;
	rc = 0;
	goto done;
oom:
	frec_error_set(err, "flightrec-analyze", -1, ENOMEM, "explain: out of memory");
done:
	out->callers = callers.v;
	out->n_callers = callers.n;
	out->callees = callees.v;
	out->n_callees = callees.n;
	out->frames = frames.v;
	out->n_frames = frames.n;
	hmap_free(&mm.seen);
	free(mm.frames);
	return rc;
}

void func_story_free(struct func_story *s)
{
	free(s->callers);
	free(s->callees);
	free(s->frames);
	free(s->cuda);
	free(s->syscalls);
	free(s->findings);
	free(s->procs);
	free(s->candidates);
	memset(s, 0, sizeof(*s));
}
