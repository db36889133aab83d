/* Python + native stack merge and the dwarf-mode resolution pass; see
 * stack_merge.h for the rules.  The merge follows py-spy's
 * (src/native_stack_trace.rs: merge_native_stack, get_merge_strategy),
 * except that where py-spy reports a merge error this keeps every frame it
 * knows and says "[lost]" where the pairing is unknown. */
#include "stack_merge.h"
#include "events.h"
#include "hmap.h"
#include "pyframes.h"
#include "symbolize.h"
#include "trace_set.h"
#include "unwind.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int sm_is_eval_frame(const char *name)
{
	static const char eval[] = "_PyEval_EvalFrameDefault";
	if (!name || strncmp(name, eval, sizeof(eval) - 1))
		return 0;
	name += sizeof(eval) - 1;
	return !name[0] || !strncmp(name, ".cold", 5);
}

struct sm_seg { size_t first, n; }; /* py[first .. first + n), leaf first */

/* Splits py into activations; returns how many (at most n_py + 1). */
static size_t segments(const struct sm_py *py, size_t n_py, struct sm_seg *segs)
{
	size_t n = 0, first = 0;
	for (size_t i = 0; i < n_py; i++) {
		if (py[i].flags & FR_PYF_SHIM) {
			segs[n++] = (struct sm_seg){ first, i - first };
			first = i + 1;
		} else if (py[i].flags & FR_PYF_ENTRY) {
			segs[n++] = (struct sm_seg){ first, i + 1 - first };
			first = i + 1;
		}
	}
	if (first < n_py)
		segs[n++] = (struct sm_seg){ first, n_py - first };
	return n;
}

/* A leaf-first builder that stops at cap. */
struct sm_out { const char **v; size_t n, cap; };

static void put(struct sm_out *o, const char *name)
{
	if (o->n < o->cap)
		o->v[o->n++] = name;
}

static void put_seg(struct sm_out *o, const struct sm_py *py, const struct sm_seg *s)
{
	for (size_t k = 0; k < s->n; k++)
		if (!(py[s->first + k].flags & FR_PYF_SHIM))
			put(o, py[s->first + k].name);
}

size_t stack_merge(const char *const *native, size_t n_native, int native_complete,
		   const struct sm_py *py, size_t n_py, int py_cut, const char *lost,
		   const char **out, size_t cap, enum sm_outcome *outcome)
{
	struct sm_seg *segs = n_py ? malloc((n_py + 1) * sizeof(*segs)) : NULL;
	size_t n_segs = segs ? segments(py, n_py, segs) : 0;
	size_t n_eval = 0;
	for (size_t i = 0; i < n_native; i++)
		n_eval += sm_is_eval_frame(native[i]);
	struct sm_out o = { out, 0, cap };
	enum sm_outcome how;

	if (!n_segs)
		how = SM_NATIVE_ONLY;
	else if (n_eval == n_segs)
		how = SM_EXACT;
	else if (n_eval == n_segs + 1 && !py_cut)
		how = SM_ONE_EXTRA;
	else if (n_eval < n_segs && !native_complete)
		how = SM_NATIVE_SHORT;
	else if (n_eval > n_segs && py_cut)
		how = SM_PYTHON_SHORT;
	else
		how = SM_MISMATCH;

	/* leaf first into out, reversed at the end */
	size_t seg = 0, skip_first = how == SM_ONE_EXTRA;
	for (size_t i = 0; i < n_native; i++) {
		if (how == SM_NATIVE_ONLY || !sm_is_eval_frame(native[i])) {
			put(&o, native[i]);
		} else if (how == SM_MISMATCH) {
			continue; /* the Python frames go at the root */
		} else if (skip_first) {
			skip_first = 0;
			put(&o, native[i]);
		} else if (seg < n_segs) {
			put_seg(&o, py, &segs[seg++]);
		} else {
			put(&o, lost); /* SM_PYTHON_SHORT: no frames left for it */
		}
	}
	if (how == SM_NATIVE_SHORT || how == SM_MISMATCH) {
		put(&o, lost);
		for (size_t s = how == SM_MISMATCH ? 0 : seg; s < n_segs; s++)
			put_seg(&o, py, &segs[s]);
	}
	free(segs);
	for (size_t i = 0, j = o.n; i + 1 < j; i++, j--) {
		const char *t = out[i];
		out[i] = out[j - 1];
		out[j - 1] = t;
	}
	if (outcome)
		*outcome = how;
	return o.n;
}

/* ---- the resolution pass --------------------------------------------------- */

struct sm_ctx {
	struct symbolizer *sym;
	struct trace_file *f;
	uint32_t file_index;
	struct uw_trace *uw;
	struct hmap py_names;   /* (py_code address, instr_off) -> interned name */
	struct hmap native_names; /* (lookup address, pid) -> interned name: the
				     symbolizer formats unnamed ones each time */
	const char *lost;
	size_t names_cap;       /* of f->ustack_names */
	struct uw_frame frames[UW_MAX_FRAMES];
	const char *native[UW_MAX_FRAMES];
	struct sm_py py[FR_MAX_PY_FRAMES];
	const char *merged[UW_MAX_FRAMES + FR_MAX_PY_FRAMES + 2];
};

static const char *python_name(struct sm_ctx *c, const struct uw_raw *r, struct fr_py_frame pf)
{
	const struct py_code *code = py_table_find(c->f->pycodes, r->pid, pf.code, r->seq,
						   pf.fingerprint);
	uint64_t key_a = (uint64_t)(uintptr_t)code, key_b = pf.instr_off;
	uint64_t cached;
	if (code && hmap_get(&c->py_names, key_a, key_b, &cached))
		return (const char *)(uintptr_t)cached;
	char buf[600];
	const char *name = symbolizer_intern(c->sym, py_frame_name(code, pf.instr_off, buf,
								    sizeof(buf)));
	if (name && code && hmap_put(&c->py_names, key_a, key_b, (uint64_t)(uintptr_t)name))
		return NULL;
	return name;
}

/* Frame names of raw stack i, root first, appended to f->ustack_names. */
static int resolve_one(struct sm_ctx *c, size_t i)
{
	struct trace_file *f = c->f;
	struct uw_raw *r = uw_store_raw(f->ustacks, i);
	enum uw_end end;
	size_t n = uw_trace_unwind(c->uw, i, c->frames, UW_MAX_FRAMES, &end);
	for (size_t k = 0; k < n; k++) {
		uint64_t pc = c->frames[k].pc - (c->frames[k].activation ? 0 : 1);
		uint64_t cached;
		if (hmap_get(&c->native_names, pc, r->pid, &cached)) {
			c->native[k] = (const char *)(uintptr_t)cached;
			continue;
		}
		if (!(c->native[k] = symbolize_ip(c->sym, c->file_index, r->pid, pc)) ||
		    hmap_put(&c->native_names, pc, r->pid, (uint64_t)(uintptr_t)c->native[k]))
			return -1;
	}
	size_t n_py = r->n_py < FR_MAX_PY_FRAMES ? r->n_py : FR_MAX_PY_FRAMES;
	for (size_t k = 0; k < n_py; k++) {
		struct fr_py_frame pf = uw_store_py(f->ustacks, r, k);
		c->py[k].flags = pf.flags;
		c->py[k].name = NULL;
		if (!(pf.flags & FR_PYF_SHIM) && !(c->py[k].name = python_name(c, r, pf)))
			return -1;
	}
	int py_cut = (r->flags & (FR_USTACK_PY_TRUNCATED | FR_USTACK_PY_ERROR)) ||
		     r->n_py > FR_MAX_PY_FRAMES;
	enum sm_outcome how;
	size_t m = stack_merge(c->native, n, end == UW_END_OUTERMOST, c->py, n_py, py_cut,
			       c->lost, c->merged, sizeof(c->merged) / sizeof(c->merged[0]), &how);
	if (f->n_ustack_names + m > c->names_cap) {
		size_t cap = c->names_cap ? 2 * c->names_cap : 4096;
		while (cap < f->n_ustack_names + m)
			cap *= 2;
		const char **grown = realloc(f->ustack_names, cap * sizeof(*grown));
		if (!grown)
			return -1;
		f->ustack_names = grown;
		c->names_cap = cap;
	}
	memcpy(f->ustack_names + f->n_ustack_names, c->merged, m * sizeof(*c->merged));
	r->names_at = f->n_ustack_names;
	r->n_names = (uint32_t)m;
	r->resolved = 1;
	f->n_ustack_names += m;
	f->dwarf_stats.distinct++;
	if (end != UW_END_OUTERMOST)
		f->dwarf_stats.stopped_early++;
	if (how == SM_NATIVE_SHORT || how == SM_PYTHON_SHORT || how == SM_MISMATCH)
		f->dwarf_stats.merge_lost++;
	return 0;
}

static int resolve_file(struct symbolizer *sym, struct trace_file *f, uint32_t file_index)
{
	struct sm_ctx *c = calloc(1, sizeof(*c));
	if (!c)
		return -1;
	c->sym = sym;
	c->f = f;
	c->file_index = file_index;
	hmap_init(&c->py_names);
	hmap_init(&c->native_names);
	c->uw = uw_trace_new(f, f->ustacks);
	c->lost = symbolizer_intern(sym, SM_LOST);
	c->names_cap = f->n_ustack_names;
	int rc = c->uw && c->lost ? 0 : -1;
	for (size_t i = 0; !rc && i < uw_store_count(f->ustacks); i++)
		rc = resolve_one(c, i);
	for (size_t i = 0; !rc && i < f->n_stacks; i++) {
		struct ts_stack *st = &f->stacks[i];
		struct uw_raw *r = st->ustack ? uw_store_raw(f->ustacks, st->ustack - 1) : NULL;
		if (!r || !r->resolved)
			continue;
		st->names_at = r->names_at;
		st->n_user = (uint16_t)r->n_names;
	}
	uw_trace_free(c->uw);
	hmap_free(&c->py_names);
	hmap_free(&c->native_names);
	free(c);
	if (!rc)
		uw_store_drop_stacks(f->ustacks);
	return rc;
}

int stack_merge_resolve(struct trace_set *ts, struct frec_error *err)
{
	struct symbolizer *sym = NULL;
	for (size_t i = 0; i < trace_set_count(ts); i++) {
		struct trace_file *f = trace_set_file(ts, i);
		if (!f->ustacks || !uw_store_count(f->ustacks))
			continue;
		if (!sym && !(sym = trace_set_symbolizer(ts, err)))
			return -1;
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		int rc = resolve_file(sym, f, (uint32_t)i);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		f->dwarf_stats.resolve_ns += (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000ll +
							(t1.tv_nsec - t0.tv_nsec));
		if (rc) {
			frec_error_set(err, f->path, -1, ENOMEM,
				       "out of memory unwinding dwarf-mode stacks");
			return -1;
		}
	}
	return 0;
}
