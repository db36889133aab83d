/* Two recordings compared (trace_diff.h): each list is gathered as
 * (key, side, value) entries from both sides, sorted by key and merged,
 * so memory follows distinct keys and the result is deterministic. */
#include "trace_diff.h"
#include "cuda_funcs.h"
#include "flame_tree.h"
#include "frame_pick.h"
#include "model_cpu.h"
#include "model_cuda.h"
#include "model_mem.h"
#include "model_nccl.h"
#include "model_stack_calls.h"
#include "model_stragglers.h"
#include "symbolize.h"
#include "trace_set.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *diff_family_name(unsigned fam)
{
	static const char *const names[DIFF_FAMS] = { "cpu", "syscalls", "cuda", "nccl", "rdma" };
	return fam < DIFF_FAMS ? names[fam] : "?";
}

struct entry {
	char *key;
	int side, slot;
	double value;
};

struct entries {
	struct entry *v;
	size_t n, cap;
};

static int entries_add(struct entries *e, const char *key, int side, int slot, double value)
{
	if (e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 256;
		struct entry *grown = realloc(e->v, cap * sizeof(*grown));
		if (!grown)
			return -1;
		e->v = grown;
		e->cap = cap;
	}
	char *k = strdup(key);
	if (!k)
		return -1;
	e->v[e->n++] = (struct entry){ k, side, slot, value };
	return 0;
}

static int entry_order(const void *pa, const void *pb)
{
	return strcmp(((const struct entry *)pa)->key, ((const struct entry *)pb)->key);
}

/* Merges equal keys into rows; frees the entries. */
static int entries_merge(struct entries *e, struct diff_row **rows, size_t *n_rows)
{
	*rows = NULL;
	*n_rows = 0;
	int rc = 0;
	if (e->n)
		qsort(e->v, e->n, sizeof(*e->v), entry_order);
	size_t distinct = 0;
	for (size_t i = 0; i < e->n; i++)
		distinct += !i || strcmp(e->v[i].key, e->v[i - 1].key);
	if (distinct && !(*rows = calloc(distinct, sizeof(**rows))))
		rc = -1;
	for (size_t i = 0; i < e->n; i++) {
		if (!rc && (!*n_rows || strcmp(e->v[i].key, (*rows)[*n_rows - 1].key))) {
			(*rows)[(*n_rows)++].key = e->v[i].key; /* the row owns it now */
			e->v[i].key = NULL;
		}
		if (!rc)
			(*rows)[*n_rows - 1].v[e->v[i].side][e->v[i].slot] += e->v[i].value;
		free(e->v[i].key);
	}
	free(e->v);
	*e = (struct entries){ 0 };
	return rc;
}

static const struct diff_row *sort_rows; /* qsort has no context argument */
static int sort_slot;
static const unsigned char *sort_later; /* rows listed after the others; may be NULL */

static int order_cmp(const void *pa, const void *pb)
{
	size_t ia = *(const size_t *)pa, ib = *(const size_t *)pb;
	if (sort_later && sort_later[ia] != sort_later[ib])
		return sort_later[ia] ? 1 : -1;
	const struct diff_row *a = &sort_rows[ia], *b = &sort_rows[ib];
	double da = fabs(a->v[1][sort_slot] - a->v[0][sort_slot]);
	double db = fabs(b->v[1][sort_slot] - b->v[0][sort_slot]);
	if (da != db)
		return da > db ? -1 : 1;
	return strcmp(a->key, b->key);
}

static int order_by_later(const struct diff_row *rows, size_t n, int slot,
			  const unsigned char *later, struct diff_order *o)
{
	o->n = 0;
	o->idx = n ? malloc(n * sizeof(*o->idx)) : NULL;
	if (n && !o->idx)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (fabs(rows[i].v[1][slot] - rows[i].v[0][slot]) > 1e-12)
			o->idx[o->n++] = i;
	sort_rows = rows;
	sort_slot = slot;
	sort_later = later;
	if (o->n)
		qsort(o->idx, o->n, sizeof(*o->idx), order_cmp);
	sort_later = NULL;
	return 0;
}

static int order_by(const struct diff_row *rows, size_t n, int slot, struct diff_order *o)
{
	return order_by_later(rows, n, slot, NULL, o);
}

static int row_key_cmp(const void *key, const void *row)
{
	return strcmp(key, ((const struct diff_row *)row)->key);
}

static const struct diff_row *row_of(const struct diff_row *rows, size_t n, const char *key)
{
	return n ? bsearch(key, rows, n, sizeof(*rows), row_key_cmp) : NULL;
}

/* The CPU list names the function that changed, not every caller above
 * it: a function whose time was there on both sides, and half of whose
 * change (same sign) a function under it in either tree makes, is listed
 * after the others (main and train_step grow by what the new load_batch
 * under them takes, and by noise besides).  A function absent on a side
 * is never moved: it is the change.  A function that only got slower
 * passes its place to the callee the time went to, down to where it is
 * spent. */
static void explained_by_callee(const struct flame_tree *t, const struct diff_row *rows, size_t n,
				unsigned char *later)
{
	size_t count = t ? flame_tree_count(t) : 0;
	for (uint32_t i = 1; i < count; i++) {
		const struct flame_node *nd = flame_tree_node(t, i);
		const struct diff_row *d = row_of(rows, n, nd->name);
		double dd = d ? d->v[1][DF_CPU_MS] - d->v[0][DF_CPU_MS] : 0;
		if (!d || fabs(dd) < 1e-12)
			continue;
		for (uint32_t p = nd->parent; p; p = flame_tree_node(t, p)->parent) {
			const struct diff_row *a = row_of(rows, n, flame_tree_node(t, p)->name);
			if (!a || a == d || a->v[0][DF_CPU_MS] <= 0 || a->v[1][DF_CPU_MS] <= 0)
				continue;
			double da = a->v[1][DF_CPU_MS] - a->v[0][DF_CPU_MS];
			if (da * dd > 0 && fabs(dd) >= 0.5 * fabs(da))
				later[a - rows] = 1;
		}
	}
}

/* cudaMalloc, cuMemcpyAsync_ptsz ...: a frame that is the API itself. */
static int is_cuda_api(const char *name)
{
	if (name[0] != 'c' || name[1] != 'u')
		return 0;
	for (uint16_t f = 0; f < CUDA_FUNC_LIMIT; f++) {
		const char *api = cuda_func_name(f);
		size_t n = api ? strlen(api) : 0;
		if (n && !strncmp(name, api, n) &&
		    (!name[n] || !strcmp(name + n, "_ptsz") || !strcmp(name + n, "_ptds")))
			return 1;
	}
	return 0;
}

/* frames[0..n) joined by ';' into a grown buffer. */
static const char *joined(const char *const *frames, size_t n, char **buf, size_t *cap)
{
	size_t len = 1;
	for (size_t i = 0; i < n; i++)
		len += strlen(frames[i]) + 1;
	if (len > *cap) {
		char *grown = realloc(*buf, len);
		if (!grown)
			return NULL;
		*buf = grown;
		*cap = len;
	}
	char *p = *buf;
	*p = '\0';
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(frames[i]);
		if (i)
			*p++ = ';';
		memcpy(p, frames[i], l);
		p += l;
	}
	*p = '\0';
	return *buf;
}

struct scratch {
	const char **frames;
	size_t cap;
	char *buf;
	size_t buf_cap;
};

/* A tree node's frames, root first. */
static size_t node_frames(const struct flame_tree *t, uint32_t i, struct scratch *sc)
{
	size_t n = flame_tree_node(t, i)->depth;
	if (n > sc->cap) {
		const char **grown = realloc(sc->frames, n * sizeof(*grown));
		if (!grown)
			return SIZE_MAX;
		sc->frames = grown;
		sc->cap = n;
	}
	for (size_t k = n; k-- > 0; i = flame_tree_node(t, i)->parent)
		sc->frames[k] = flame_tree_node(t, i)->name;
	return n;
}

/* ms_per_sample: 1000 / the rate over the unit count (or 1 / the unit
 * count when the rate is unknown). */
static int side_cpu(const struct flame_tree *t, int side, double ms_per_sample,
		    struct entries *funcs, struct entries *stacks, struct scratch *sc)
{
	size_t n = t ? flame_tree_count(t) : 0;
	double total = t ? (double)flame_tree_total(t) : 0;
	for (uint32_t i = 1; i < n; i++) {
		const struct flame_node *nd = flame_tree_node(t, i);
		int nested = 0; /* names are interned by the tree: equal names, equal pointers */
		for (uint32_t p = nd->parent; p && !nested; p = flame_tree_node(t, p)->parent)
			nested = flame_tree_node(t, p)->name == nd->name;
		/* interpreter internals, unnamed offsets and the kernel's own
		 * functions name nothing the job can change (its stacks keep them) */
		enum frame_class c = frame_classify(NULL, nd->name);
		int named = c != FC_INTERP && c != FC_UNNAMED && c != FC_KERNEL;
		if (named && !nested &&
		    (entries_add(funcs, nd->name, side, DF_CPU_TOTAL, nd->total / total) ||
		     entries_add(funcs, nd->name, side, DF_CPU_MS, nd->total * ms_per_sample)))
			return -1;
		if (!nd->self)
			continue;
		if (named && entries_add(funcs, nd->name, side, DF_CPU_SELF, nd->self / total))
			return -1;
		size_t k = node_frames(t, i, sc);
		const char *path = k == SIZE_MAX ? NULL : joined(sc->frames, k, &sc->buf, &sc->buf_cap);
		if (!path || entries_add(stacks, path, side, DS_CPU, nd->self / total) ||
		    entries_add(stacks, path, side, DS_CPU_MS, nd->self * ms_per_sample))
			return -1;
	}
	return 0;
}

static int side_mem(const struct flame_tree *t, int side, struct entries *funcs,
		    struct entries *stacks, struct scratch *sc)
{
	size_t n = t ? flame_tree_count(t) : 0;
	for (uint32_t i = 1; i < n; i++) {
		const struct flame_node *nd = flame_tree_node(t, i);
		if (!nd->self)
			continue;
		size_t k = node_frames(t, i, sc);
		const char *path = k == SIZE_MAX ? NULL : joined(sc->frames, k, &sc->buf, &sc->buf_cap);
		if (!path || entries_add(stacks, path, side, DS_MEM_BYTES, (double)nd->self))
			return -1;
		size_t c = k;
		while (c > 1 && is_cuda_api(sc->frames[c - 1]))
			c--;
		if (entries_add(funcs, sc->frames[c - 1], side, DF_MEM_BYTES, (double)nd->self))
			return -1;
	}
	return 0;
}

static int side_cuda(struct trace_set *ts, const struct stack_calls_result *calls, double per,
		     int side, struct entries *funcs, struct entries *stacks, struct entries *apis,
		     struct scratch *sc, struct frec_error *err)
{
	struct symbolizer *sym = trace_set_symbolizer(ts, err);
	if (!sym)
		return -1;
	for (size_t i = 0; calls && i < calls->n_rows; i++) {
		const struct sc_row *r = &calls->rows[i];
		if (r->kind != SC_CUDA)
			continue;
		char name[48];
		double ms = (double)r->total_ns / 1e6 / per;
		const char *api = sc_func_name(r, name, sizeof(name));
		if (entries_add(apis, api, side, DC_CALLS, (double)r->count / per) ||
		    entries_add(apis, api, side, DC_MS, ms) ||
		    entries_add(apis, api, side, DC_ERRORS, (double)r->errors / per))
			return -1;
		size_t n = symbolize_frames(sym, trace_set_file(ts, r->file), r->file, r->stack_id,
					    &sc->frames, &sc->cap, NULL);
		const char *path = n == SIZE_MAX ? NULL : joined(sc->frames, n, &sc->buf, &sc->buf_cap);
		if (!path || entries_add(stacks, path, side, DS_CUDA_MS, ms))
			return -1;
		size_t c = n;
		while (c > 1 && is_cuda_api(sc->frames[c - 1]))
			c--;
		if (entries_add(funcs, sc->frames[c - 1], side, DF_CUDA_MS, ms))
			return -1;
	}
	return 0;
}

static void side_summary(const struct diff_input *in, struct diff_side *s)
{
	const struct findings_result *fx = in->findings;
	memset(s, 0, sizeof(*s));
	s->files = trace_set_count(in->ts);
	s->gpu_procs = fx->n_procs;
	s->steps_from = fx->steps_from ? fx->steps_from : "none";
	s->steps = strcmp(s->steps_from, "none") ? fx->steps : 0;
	s->wall_s = fx->wall_ms / 1e3;
	for (size_t i = 0; i < s->files && s->wall_s <= 0; i++) {
		int exact;
		double d = (double)trace_file_duration_ns(trace_set_file(in->ts, i), &exact) / 1e9;
		if (d > s->wall_s)
			s->wall_s = d;
	}
	s->step_ms = s->steps ? s->wall_s * 1e3 / (double)s->steps : -1;
	for (size_t i = 0; i < fx->n_procs; i++)
		s->gpu_idle_ms += fx->procs[i].idle_ms;
	s->gpu_idle_share = fx->n_procs && s->wall_s > 0
		? s->gpu_idle_ms / (s->wall_s * 1e3 * (double)fx->n_procs) : -1;
	s->cpu_samples = in->cpu && in->cpu->tree ? flame_tree_total(in->cpu->tree) : 0;
	s->sample_hz = in->calls ? in->calls->sample_hz : 0;
	for (size_t i = 0; in->mem && i < in->mem->n_files; i++)
		if (in->mem->files[i].peak_bytes > s->mem_peak_bytes)
			s->mem_peak_bytes = in->mem->files[i].peak_bytes;
	static const uint16_t types[DIFF_FAMS] = { FR_EV_CPU_SAMPLE, FR_EV_SYSCALL, FR_EV_CUDA,
						   FR_EV_NCCL, FR_EV_RDMA_POST };
	for (unsigned f = 0; f < DIFF_FAMS; f++)
		if (trace_set_events_of(in->ts, types[f]) ||
		    (f == DIFF_FAM_RDMA && trace_set_events_of(in->ts, FR_EV_RDMA_CTRL)))
			s->families |= 1u << f;
	/* ranks: distinct launcher ranks of the processes */
	int32_t seen[4096];
	size_t n_seen = 0;
	for (size_t i = 0; i < s->files; i++) {
		const struct trace_file *f = trace_set_file(in->ts, i);
		for (size_t p = 0; p < f->n_procs; p++) {
			int32_t r = f->procs[p].rank;
			int dup = r < 0;
			for (size_t k = 0; k < n_seen && !dup; k++)
				dup = seen[k] == r;
			if (!dup && n_seen < sizeof(seen) / sizeof(seen[0]))
				seen[n_seen++] = r;
		}
	}
	s->ranks = n_seen;
	const struct stragglers_result *st = in->stragglers;
	if (st && st->verdict.found && st->nccl && st->verdict.rank_index < st->nccl->n_ranks) {
		s->straggler = 1;
		s->straggler_rank = st->nccl->ranks[st->verdict.rank_index].rank;
		s->straggler_cost_ms_per_step = st->verdict.cost_ms_per_step;
	}
}

__attribute__((format(printf, 3, 4)))
static void note(struct trace_diff *d, int breaks, const char *fmt, ...)
{
	if (breaks)
		d->comparable = 0;
	if (d->n_notes == DIFF_MAX_NOTES)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->notes[d->n_notes++], sizeof(d->notes[0]), fmt, ap);
	va_end(ap);
}

static void comparability(struct trace_diff *d)
{
	const struct diff_side *b = &d->side[0], *a = &d->side[1];
	for (unsigned f = 0; f < DIFF_FAMS; f++) {
		unsigned bit = 1u << f;
		if ((b->families & bit) != (a->families & bit))
			note(d, 1, "probes differ: %s events %s only", diff_family_name(f),
			     b->families & bit ? "before" : "after");
	}
	if (b->sample_hz > 0 && a->sample_hz > 0 &&
	    (b->sample_hz > 1.25 * a->sample_hz || a->sample_hz > 1.25 * b->sample_hz))
		note(d, 1, "sampling rates differ: about %.0f Hz before, %.0f Hz after (read from "
		     "the gaps between a thread's samples)", b->sample_hz, a->sample_hz);
	if (b->ranks != a->ranks)
		note(d, 1, "ranks differ: %zu before, %zu after", b->ranks, a->ranks);
	if (b->files != a->files)
		note(d, 0, "files (nodes) differ: %zu before, %zu after", b->files, a->files);
	if (!b->steps != !a->steps)
		note(d, 0, "steps known %s only: deltas per second", b->steps ? "before" : "after");
}

int trace_diff_build(const struct diff_input *before, const struct diff_input *after,
		     struct trace_diff *out, struct frec_error *err)
{
	memset(out, 0, sizeof(*out));
	const struct diff_input *in[2] = { before, after };
	side_summary(before, &out->side[0]);
	side_summary(after, &out->side[1]);
	int by_step = out->side[0].steps && out->side[1].steps;
	out->unit = by_step ? "step" : "second";
	out->comparable = 1;
	for (int s = 0; s < 2; s++) {
		struct diff_side *sd = &out->side[s];
		sd->per = by_step ? (double)sd->steps : sd->wall_s;
		if (sd->per <= 0)
			sd->per = 1;
	}
	comparability(out);

	/* findings: every kind listed or costed on either side */
	for (int k = 0; k < FIND_KINDS; k++) {
		struct diff_finding f = { .kind = (enum finding_kind)k };
		int any = 0;
		for (int s = 0; s < 2; s++) {
			const struct findings_result *fx = in[s]->findings;
			for (size_t i = 0; i < fx->n_findings; i++) {
				if (fx->findings[i].kind != (enum finding_kind)k)
					continue;
				f.listed[s] = any = 1;
				f.has_cost |= fx->findings[i].has_cost;
				f.cost[s] += fx->findings[i].cost_ms / out->side[s].per;
			}
			for (size_t i = 0; i < fx->n_below; i++) {
				if (fx->below[i].kind != (enum finding_kind)k || !fx->below[i].has_cost)
					continue;
				f.has_cost = 1;
				f.cost[s] += fx->below[i].cost_ms / out->side[s].per;
				any |= fx->below[i].cost_ms > 0;
			}
		}
		if (any)
			out->findings[out->n_findings++] = f;
	}

	struct entries funcs = { 0 }, stacks = { 0 }, apis = { 0 };
	struct scratch sc = { 0 };
	int rc = 0;
	for (int s = 0; s < 2 && !rc; s++) {
		const struct diff_side *sd = &out->side[s];
		double ms_per_sample = sd->sample_hz > 0 ? 1000.0 / sd->sample_hz / sd->per
							 : 1.0 / sd->per;
		rc = side_cpu(in[s]->cpu ? in[s]->cpu->tree : NULL, s, ms_per_sample, &funcs, &stacks,
			      &sc) ||
		     side_mem(in[s]->mem ? in[s]->mem->inuse : NULL, s, &funcs, &stacks, &sc) ||
		     side_cuda(in[s]->ts, in[s]->calls, out->side[s].per, s, &funcs, &stacks, &apis,
			       &sc, err);
	}
	rc = rc | entries_merge(&funcs, &out->funcs, &out->n_funcs) |
	     entries_merge(&stacks, &out->stacks, &out->n_stacks) |
	     entries_merge(&apis, &out->calls, &out->n_calls);
	free(sc.frames);
	free(sc.buf);
	if (!rc) {
		unsigned char *later = out->n_funcs ? calloc(out->n_funcs, 1) : NULL;
		if (out->n_funcs && !later) {
			rc = -1;
			goto done;
		}
		for (int s = 0; s < 2; s++)
			explained_by_callee(in[s]->cpu ? in[s]->cpu->tree : NULL, out->funcs, out->n_funcs,
					    later);
		rc = order_by_later(out->funcs, out->n_funcs, DF_CPU_MS, later, &out->by_cpu);
		free(later);
		rc = rc ||
		     order_by(out->funcs, out->n_funcs, DF_CUDA_MS, &out->by_cuda) ||
		     order_by(out->funcs, out->n_funcs, DF_MEM_BYTES, &out->by_mem) ||
		     order_by(out->stacks, out->n_stacks, DS_CPU_MS, &out->stacks_cpu) ||
		     order_by(out->stacks, out->n_stacks, DS_CUDA_MS, &out->stacks_cuda) ||
		     order_by(out->stacks, out->n_stacks, DS_MEM_BYTES, &out->stacks_mem) ||
		     order_by(out->calls, out->n_calls, DC_MS, &out->calls_ms);
	}
done:
	if (rc && !err->what[0])
		frec_error_set(err, "flightrec-analyze", -1, ENOMEM, "diff: out of memory");
	return rc ? -1 : 0;
}

static void rows_free(struct diff_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(rows[i].key);
	free(rows);
}

void trace_diff_free(struct trace_diff *d)
{
	rows_free(d->funcs, d->n_funcs);
	rows_free(d->stacks, d->n_stacks);
	rows_free(d->calls, d->n_calls);
	struct diff_order *o[] = { &d->by_cpu, &d->by_cuda, &d->by_mem, &d->stacks_cpu,
				   &d->stacks_cuda, &d->stacks_mem, &d->calls_ms };
	for (size_t i = 0; i < sizeof(o) / sizeof(o[0]); i++)
		free(o[i]->idx);
	memset(d, 0, sizeof(*d));
}
