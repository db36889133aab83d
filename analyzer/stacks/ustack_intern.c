/* Dwarf-mode stacks during pass 2: each FR_REC_USTACK unwound against
 * the trace's unwind images, named, merged with its Python frames and
 * interned into a canonical stack of its file (content-addressed), so the
 * models' tables grow with distinct stacks, not with records.  Not for
 * frame-pointer stacks (ts_meta.c).  In the stacks stage, not decode/: it
 * unwinds, names and merges (unwind/, symbolize.c, stack_merge.c); the
 * events pass calls it through trace_set_impl.h (ts_decode_ustack). */
#include "trace_set_impl.h"
#include "grow.h"
#include "stack_merge.h"
#include "strpool.h"
#include "symbolize.h"
#include "unwind.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static void free_resolver(void *p)
{
	sm_resolver_free(p);
}

static uint64_t canon_mix(uint64_t h, uint64_t v)
{
	h ^= v;
	h *= 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

/* The canonical stack of (pid, kernel ips, merged user frames): found by
 * content, or made.  Returns its id, 0 when memory runs out. */
static uint32_t intern_canonical(struct trace_file *f, uint32_t pid, const uint8_t *kernel,
				 uint16_t n_kernel, const char *const *names, size_t n_names)
{
	uint64_t h = canon_mix(0x243f6a8885a308d3ull, (uint64_t)n_kernel << 32 | n_names);
	for (size_t i = 0; i < n_kernel; i++) {
		uint64_t ip;
		memcpy(&ip, kernel + 8 * i, 8);
		h = canon_mix(h, ip);
	}
	for (size_t i = 0; i < n_names; i++)
		h = canon_mix(h, (uint64_t)(uintptr_t)names[i]);
	uint64_t k = 0;
	for (;; k++) {
		uint64_t at;
		if (!hmap_get(&f->canon_by_hash, h + k, pid, &at))
			break;
		const struct ts_stack *st = at < f->n_stacks ? &f->stacks[at] : NULL;
		if (st && st->pid == pid && st->n_kernel == n_kernel && st->n_user == n_names &&
		    (!n_kernel || !memcmp(f->ips + st->ips_at, kernel, (size_t)n_kernel * 8)) &&
		    (!n_names || !memcmp(f->ustack_names + st->names_at, names,
					 n_names * sizeof(*names))))
			return st->stack_id;
	}
	/* a new canonical stack: the next id no fp STACK record took */
	uint32_t id;
	uint64_t taken;
	do {
		if (f->next_canon >= TS_CANON_STACK_BIT - 1)
			return 0;
		id = TS_CANON_STACK_BIT | ++f->next_canon;
	} while (hmap_get(&f->stack_by_id, id, 0, &taken));
	if (f->n_ustack_names + n_names > f->cap_ustack_names) {
		size_t cap = f->cap_ustack_names ? 2 * f->cap_ustack_names : 4096;
		while (cap < f->n_ustack_names + n_names)
			cap *= 2;
		const char **grown = realloc(f->ustack_names, cap * sizeof(*grown));
		if (!grown)
			return 0;
		f->ustack_names = grown;
		f->cap_ustack_names = cap;
	}
	if (grow_array((void **)&f->stacks, &f->cap_stacks, f->n_stacks + 1, sizeof(*f->stacks),
		       1024) ||
	    grow_array((void **)&f->ips, &f->cap_ips, f->n_ips + n_kernel + 1, sizeof(*f->ips),
		       16384))
		return 0;
	struct ts_stack *stacks = f->stacks;
	uint64_t *ips = f->ips;
	if (hmap_put(&f->stack_by_id, id, 0, f->n_stacks) ||
	    hmap_put(&f->canon_by_hash, h + k, pid, f->n_stacks))
		return 0;
	memcpy(ips + f->n_ips, kernel, (size_t)n_kernel * 8);
	if (n_names)
		memcpy(f->ustack_names + f->n_ustack_names, names, n_names * sizeof(*names));
	stacks[f->n_stacks++] = (struct ts_stack){
		.stack_id = id, .pid = pid, .n_kernel = n_kernel, .n_user = (uint16_t)n_names,
		.ips_at = f->n_ips, .ustack = 1, .names_at = f->n_ustack_names,
	};
	f->n_ips += n_kernel;
	f->n_ustack_names += n_names;
	f->dwarf_stats.distinct++;
	return id;
}

/* A dwarf-mode stack: registers, kernel ips, Python frames and the copied
 * user stack.  Unwound, named and merged now (pass 2: every file's
 * metadata is known), interned into a canonical stack with the kernel ips,
 * and forgotten but for its id's entry in f->ustack_ids. */
int ts_decode_ustack(struct trace_set *ts, uint32_t file_index, const struct ts_where *w,
			 const uint8_t *p, uint32_t size, struct frec_error *err)
{
	struct trace_file *f = w->f;
	struct fr_rec_ustack r;
	memcpy(&r, p, sizeof(r));
	uint64_t py_bytes = (uint64_t)r.n_py * sizeof(struct fr_py_frame);
	if ((uint64_t)r.n_kernel * 8 + py_bytes + r.stack_len > size - sizeof(r)) {
		PROBLEM(w, "ustack %u: %u kernel ips, %u Python frames and %u stack bytes do not fit in the record (%u bytes)",
			r.stack_id, r.n_kernel, r.n_py, r.stack_len, size);
		return 0;
	}
	if (r.stack_id == FR_STACK_NONE) {
		PROBLEM(w, "ustack record with id 0 (reserved for \"no stack\")");
		return 0;
	}
	uint16_t n_py = r.n_py, flags = r.flags;
	if (n_py > FR_MAX_PY_FRAMES) {
		PROBLEM(w, "ustack %u: %u Python frames, more than the %u a walk records; the first %u kept",
			r.stack_id, r.n_py, FR_MAX_PY_FRAMES, FR_MAX_PY_FRAMES);
		n_py = FR_MAX_PY_FRAMES;
		flags |= FR_USTACK_PY_TRUNCATED;
	}
	uint64_t taken;
	if (ts_idmap_get(&f->ustack_ids, r.stack_id, NULL) ||
	    hmap_get(&f->stack_by_id, r.stack_id, 0, &taken)) {
		PROBLEM(w, "stack %u defined twice; keeping the first definition", r.stack_id);
		return 0;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!ts->names && !(ts->names = strpool_new()))
		return ts_oom(err, w);
	/* a symbolizer of the resolution's own: freed before the metadata found
	 * in EVENTS chunks is applied, so the public one, built after the run,
	 * sees everything */
	struct symbolizer *sym = trace_set_slot(ts, TS_SLOT_RESOLVE_SYMBOLIZER);
	if (!sym) {
		if (!(sym = symbolizer_new(ts, err)))
			return -1;
		trace_set_put_slot(ts, TS_SLOT_RESOLVE_SYMBOLIZER, sym, symbolizer_free_slot);
	}
	/* the resolver of the file being read */
	struct sm_resolver *resolver = trace_set_slot(ts, TS_SLOT_RESOLVER);
	if (!resolver) {
		if (!(resolver = sm_resolver_new(sym, ts->names, f, file_index)))
			return ts_oom(err, w);
		trace_set_put_slot(ts, TS_SLOT_RESOLVER, resolver, free_resolver);
	}
	const uint8_t *kernel = p + sizeof(r);
	const uint8_t *py = kernel + (size_t)r.n_kernel * 8;
	struct uw_raw raw = {
		.pid = r.pid, .tid = r.tid, .flags = flags, .py_version = r.py_version,
		.n_py = n_py, .stack_len = r.stack_len, .seq = w->seq,
	};
	memcpy(raw.regs, r.regs, sizeof(raw.regs));
	const char *const *names;
	int64_t n = sm_resolve(resolver, &raw, py, py + py_bytes, &names);
	uint32_t canon = n < 0 ? 0 : intern_canonical(f, r.pid, kernel, r.n_kernel, names,
						       (size_t)n);
	if (!canon && n >= 0 && f->next_canon >= TS_CANON_STACK_BIT - 1) {
		PROBLEM(w, "ustack %u: canonical stack ids exhausted; stack dropped", r.stack_id);
		return 0;
	}
	if (!canon || ts_idmap_put(&f->ustack_ids, r.stack_id, canon))
		return ts_oom(err, w);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	f->dwarf_stats.resolve_ns += (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000ll +
						(t1.tv_nsec - t0.tv_nsec));
	f->dwarf_stats.records++;
	return 0;
}

