/* Python + native stack merge and the dwarf-mode resolution pass; see
 * stack_merge.h for the rules.  The merge follows py-spy's
 * (src/native_stack_trace.rs: merge_native_stack, get_merge_strategy),
 * except that where py-spy reports a merge error this keeps every frame it
 * knows and says "[lost]" where the pairing is unknown. */
#include "stack_merge.h"
#include "events.h"
#include "hmap.h"
#include "pyframes.h"
#include "strpool.h"
#include "symbolize.h"
#include "trace_set.h"
#include "unwind_trace.h"

#include <stdlib.h>
#include <string.h>

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

/* ---- resolution during the decode pass --------------------------------------- */

struct sm_resolver {
	struct symbolizer *sym;
	struct strpool *names;
	struct trace_file *f;
	uint32_t file_index;
	struct uw_trace *uw;
	struct hmap py_names;   /* (py_code address, instr_off) -> pooled name */
	struct hmap native_names; /* (lookup address, pid) -> pooled name: the
				     symbolizer formats unnamed ones each time */
	const char *lost;
	struct uw_frame frames[UW_MAX_FRAMES];
	const char *native[UW_MAX_FRAMES];
	struct sm_py py[FR_MAX_PY_FRAMES];
	const char *merged[UW_MAX_FRAMES + FR_MAX_PY_FRAMES + 2];
};

struct sm_resolver *sm_resolver_new(struct symbolizer *sym, struct strpool *names,
				    struct trace_file *f, uint32_t file_index)
{
	struct sm_resolver *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->sym = sym;
	c->names = names;
	c->f = f;
	c->file_index = file_index;
	hmap_init(&c->py_names);
	hmap_init(&c->native_names);
	c->uw = uw_trace_new(f, f->ustacks);
	c->lost = strpool_intern_cstr(names, SM_LOST);
	if (!c->uw || !c->lost) {
		sm_resolver_free(c);
		return NULL;
	}
	return c;
}

void sm_resolver_free(struct sm_resolver *c)
{
	if (!c)
		return;
	uw_trace_free(c->uw);
	hmap_free(&c->py_names);
	hmap_free(&c->native_names);
	free(c);
}

static const char *python_name(struct sm_resolver *c, const struct uw_raw *r,
			       struct fr_py_frame pf)
{
	const struct py_code *code = py_table_find(c->f->pycodes, r->pid, pf.code, r->seq,
						   pf.fingerprint);
	uint64_t key_a = (uint64_t)(uintptr_t)code, key_b = pf.instr_off;
	uint64_t cached;
	if (code && hmap_get(&c->py_names, key_a, key_b, &cached))
		return (const char *)(uintptr_t)cached;
	char buf[600];
	const char *name = strpool_intern_cstr(c->names, py_frame_name(code, pf.instr_off, buf,
									sizeof(buf)));
	if (name && code && hmap_put(&c->py_names, key_a, key_b, (uint64_t)(uintptr_t)name))
		return NULL;
	return name;
}

int64_t sm_resolve(struct sm_resolver *c, const struct uw_raw *r, const uint8_t *py,
		   const uint8_t *stack, const char *const **names)
{
	struct trace_file *f = c->f;
	enum uw_end end;
	*names = c->merged;
	size_t n = uw_trace_unwind_raw(c->uw, r, stack, c->frames, UW_MAX_FRAMES, &end);
	for (size_t k = 0; k < n; k++) {
		uint64_t pc = c->frames[k].pc - (c->frames[k].activation ? 0 : 1);
		uint64_t cached;
		if (hmap_get(&c->native_names, pc, r->pid, &cached)) {
			c->native[k] = (const char *)(uintptr_t)cached;
			continue;
		}
		const char *shown = symbolize_ip(c->sym, c->file_index, r->pid, pc);
		if (!shown || !(c->native[k] = strpool_intern_cstr(c->names, shown)) ||
		    hmap_put(&c->native_names, pc, r->pid, (uint64_t)(uintptr_t)c->native[k]))
			return -1;
	}
	size_t n_py = r->n_py < FR_MAX_PY_FRAMES ? r->n_py : FR_MAX_PY_FRAMES;
	for (size_t k = 0; k < n_py; k++) {
		struct fr_py_frame pf;
		memcpy(&pf, py + k * sizeof(pf), sizeof(pf));
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
	if (end != UW_END_OUTERMOST)
		f->dwarf_stats.stopped_early++;
	if (how == SM_NATIVE_SHORT || how == SM_PYTHON_SHORT || how == SM_MISMATCH)
		f->dwarf_stats.merge_lost++;
	return (int64_t)m;
}
