/* Every process of one trace file: a uw_process per pid, set up on first
 * use from the file's mappings of that pid whose dso has an image in the
 * store, and the unwind of a raw stack with its pid's process.
 *
 * Not for reading the file (trace_set.c gives the mappings) nor for
 * keeping images or stacks (unwind_store.c).  A pid whose process cannot
 * be set up is remembered as such, and its stacks keep only their pc. */
#include "unwind_trace.h"
#include "hmap.h"
#include "trace_set.h"

#include <stdlib.h>

struct uw_trace {
	const struct trace_file *f;
	struct uw_store *s;
	struct hmap proc_by_pid;      /* pid -> 1 + index, 0 = could not be set up */
	struct uw_process **procs;
	size_t n_procs;
};

struct uw_trace *uw_trace_new(const struct trace_file *f, struct uw_store *s)
{
	struct uw_trace *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->f = f;
	t->s = s;
	hmap_init(&t->proc_by_pid);
	return t;
}

void uw_trace_free(struct uw_trace *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n_procs; i++)
		uw_process_free(t->procs[i]);
	free(t->procs);
	hmap_free(&t->proc_by_pid);
	free(t);
}

static int mapping_seq_order(const void *a, const void *b)
{
	const struct ts_mapping *x = *(const struct ts_mapping *const *)a;
	const struct ts_mapping *y = *(const struct ts_mapping *const *)b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static struct uw_process *process_of(struct uw_trace *t, uint32_t pid)
{
	uint64_t at;
	if (hmap_get(&t->proc_by_pid, pid, 0, &at))
		return at ? t->procs[at - 1] : NULL;
	/* the pid's mappings that have unwind data, in record order */
	const struct ts_mapping **maps = malloc((t->f->n_maps ? t->f->n_maps : 1) * sizeof(*maps));
	struct uw_module *mods = malloc((t->f->n_maps ? t->f->n_maps : 1) * sizeof(*mods));
	struct uw_process **grown = realloc(t->procs, (t->n_procs + 1) * sizeof(*grown));
	if (grown)
		t->procs = grown;
	struct uw_process *p = NULL;
	if (maps && mods && grown) {
		size_t n = 0;
		for (size_t i = 0; i < t->f->n_maps; i++)
			if (t->f->maps[i].pid == pid && t->f->maps[i].dso_id &&
			    uw_store_image(t->s, t->f->maps[i].dso_id))
				maps[n++] = &t->f->maps[i];
		qsort(maps, n, sizeof(*maps), mapping_seq_order);
		for (size_t i = 0; i < n; i++) {
			const struct uw_image *img = uw_store_image(t->s, maps[i]->dso_id);
			mods[i] = (struct uw_module){ maps[i]->start, maps[i]->end, maps[i]->pgoff,
						      img->bytes, img->len, maps[i]->path };
		}
		char why[160];
		p = uw_process_new(pid, mods, n, NULL, why, sizeof(why));
	}
	free(maps);
	free(mods);
	if (p && grown)
		t->procs[t->n_procs++] = p;
	hmap_put(&t->proc_by_pid, pid, 0, p ? t->n_procs : 0);
	return p;
}

size_t uw_trace_unwind_raw(struct uw_trace *t, const struct uw_raw *r, const uint8_t *stack,
			   struct uw_frame *out, size_t max, enum uw_end *end)
{
	*end = UW_END_STOPPED;
	if (!r || !max)
		return 0;
	struct uw_process *p = process_of(t, r->pid);
	if (!p) {
		out[0] = (struct uw_frame){ r->regs[16], 1 };
		return 1;
	}
	return uw_unwind(p, r->tid, r->regs, stack, stack ? r->stack_len : 0, out, max, end);
}

size_t uw_trace_unwind(struct uw_trace *t, size_t raw_index, struct uw_frame *out,
		       size_t max, enum uw_end *end)
{
	struct uw_raw *r = uw_store_raw(t->s, raw_index);
	*end = UW_END_STOPPED;
	if (!r)
		return 0;
	return uw_trace_unwind_raw(t, r, uw_store_stack(t->s, r), out, max, end);
}
