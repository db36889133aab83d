/* The report's own gathering (see out_report_data.h): a sink fed like a
 * model, then symbolization of the distinct stacks after the pass.  Frames
 * follow model_cpu.c exactly ("[no stack]", "[missing stack]", root first),
 * so the report's "all processes" graph equals `flame --kind cpu`. */
#include "out_report_data.h"
#include "hmap.h"
#include "model.h"
#include "out_common.h"
#include "cuda_funcs.h"
#include "symbolize.h"
#include "trace_set.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct report_collect {
	struct hmap counts;        /* (file << 32 | pid, stack_id) -> samples */
	struct report_data data;
};

static int feed(void *state, uint32_t fi, const struct fr_rec_hdr *rec)
{
	struct report_collect *c = state;
	switch (out_rec_type(rec)) {
	case FR_EV_CPU_SAMPLE: {
		struct fr_ev_cpu_sample ev;
		memcpy(&ev, rec, sizeof(ev));
		uint64_t *n = hmap_slot(&c->counts, (uint64_t)fi << 32 | ev.c.pid, ev.stack_id, NULL);
		if (!n)
			return -1;
		++*n;
		c->data.cpu_samples++;
		return 0;
	}
	case FR_EV_CUDA: {
		struct fr_ev_cuda ev;
		memcpy(&ev, rec, sizeof(ev));
		c->data.cuda_events++;
		if (mem_func_class(ev.func) != MEM_NONE)
			c->data.cuda_alloc_events++;
		if (ev.func == FR_CUDA_MEMCPY || ev.func == FR_CUDA_MEMCPY_ASYNC ||
		    ev.func == FR_CU_MEMCPY || ev.func == FR_CU_MEMCPY_ASYNC) {
			struct report_copy_kind *ck = &c->data.copies[ev.kind < 5 ? ev.kind : 5];
			ck->calls++;
			ck->bytes += ev.bytes;
			ck->total_ns += ev.duration_ns;
		}
		return 0;
	}
	case FR_EV_NCCL:
		c->data.nccl_events++;
		return 0;
	case FR_EV_RDMA_CTRL:
	case FR_EV_RDMA_POST:
	case FR_EV_RDMA_CQE:
		c->data.rdma_events++;
		return 0;
	case FR_EV_STEP:
		c->data.step_events++;
		return 0;
	}
	return 0;
}

static void *create(const struct model_opts *opts)
{
	(void)opts;
	struct report_collect *c = calloc(1, sizeof(*c));
	if (c)
		hmap_init(&c->counts);
	return c;
}

static int finish(void *state, struct trace_set *ts, struct frec_error *err)
{
	(void)state;
	(void)ts;
	(void)err;
	return 0;
}

static void destroy(void *state)
{
	struct report_collect *c = state;
	if (!c)
		return;
	hmap_free(&c->counts);
	flame_tree_free(c->data.cpu_all);
	for (size_t i = 0; i < c->data.n_procs; i++)
		flame_tree_free(c->data.procs[i].tree);
	free(c->data.procs);
	free(c);
}

static const struct model_ops report_collect_ops = {
	.name = "report-collect",
	.create = create,
	.feed = feed,
	.finish = finish,
	.destroy = destroy,
};

struct report_collect *report_collect_attach(struct trace_set *ts, struct frec_error *err)
{
	struct report_collect *c = trace_set_add_model(ts, &report_collect_ops, NULL);
	if (!c)
		frec_error_set(err, "report", -1, ENOMEM, "out of memory");
	return c;
}

/* Frames of one stack, root first, as model_cpu.c names them; n or SIZE_MAX. */
static size_t frames_of(struct symbolizer *sym, const struct trace_file *f, uint32_t fi,
			uint32_t stack_id, const char ***frames, size_t *cap)
{
	const struct ts_stack *st = stack_id ? trace_file_stack(f, stack_id) : NULL;
	size_t n = st ? (size_t)st->n_kernel + st->n_user : 0;
	if (n + 1 > *cap) {
		const char **g = realloc(*frames, (n + 1) * sizeof(*g));
		if (!g)
			return SIZE_MAX;
		*frames = g;
		*cap = n + 1;
	}
	if (!n) {
		(*frames)[0] = symbolizer_intern(sym, stack_id && !st ? "[missing stack]" : "[no stack]");
		return (*frames)[0] ? 1 : SIZE_MAX;
	}
	symbolize_stack(sym, f, fi, st, *frames);
	for (size_t i = 0; i < n; i++)
		if (!(*frames)[i])
			return SIZE_MAX;
	return n;
}

static int by_samples_desc(const void *a, const void *b)
{
	const struct report_proc_tree *x = a, *y = b;
	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	if (x->file_index != y->file_index)
		return x->file_index < y->file_index ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static int build_cpu(struct report_collect *c, struct trace_set *ts, struct frec_error *err)
{
	struct report_data *d = &c->data;
	if (!d->cpu_samples)
		return 0;
	struct symbolizer *sym = trace_set_symbolizer(ts, err);
	if (!sym)
		return -1;
	/* samples per process, to choose which get a graph of their own */
	struct hmap per_proc;
	hmap_init(&per_proc);
	for (size_t i = 0; i < c->counts.cap; i++) {
		const struct hmap_slot *s = &c->counts.slots[i];
		if (!s->used)
			continue;
		uint64_t *n = hmap_slot(&per_proc, s->key_a, 0, NULL);
		if (!n) {
			hmap_free(&per_proc);
			return -1;
		}
		*n += s->value;
	}
	struct report_proc_tree *all = calloc(per_proc.count ? per_proc.count : 1, sizeof(*all));
	size_t n_all = 0;
	for (size_t i = 0; all && i < per_proc.cap; i++) {
		const struct hmap_slot *s = &per_proc.slots[i];
		if (s->used)
			all[n_all++] = (struct report_proc_tree){ (uint32_t)(s->key_a >> 32),
								  (uint32_t)s->key_a, s->value, NULL };
	}
	hmap_free(&per_proc);
	if (!all)
		return -1;
	qsort(all, n_all, sizeof(*all), by_samples_desc);
	d->n_procs = n_all < REPORT_MAX_PROC_TREES ? n_all : REPORT_MAX_PROC_TREES;
	d->procs_left_out = n_all - d->n_procs;
	d->procs = all;
	/* position of each kept process, for the second walk */
	struct hmap pos;
	hmap_init(&pos);
	int rc = 0;
	for (size_t i = 0; !rc && i < d->n_procs; i++) {
		rc = hmap_put(&pos, (uint64_t)all[i].file_index << 32 | all[i].pid, 0, i);
		if (!rc && !(all[i].tree = flame_tree_new()))
			rc = -1;
	}
	if (!rc && !(d->cpu_all = flame_tree_new()))
		rc = -1;
	const char **frames = NULL;
	size_t cap = 0;
	for (size_t i = 0; !rc && i < c->counts.cap; i++) {
		const struct hmap_slot *s = &c->counts.slots[i];
		if (!s->used)
			continue;
		uint32_t fi = (uint32_t)(s->key_a >> 32);
		const struct trace_file *f = trace_set_file(ts, fi);
		if (!f)
			continue;
		size_t n = frames_of(sym, f, fi, (uint32_t)s->key_b, &frames, &cap);
		if (n == SIZE_MAX || flame_tree_add(d->cpu_all, frames, n, s->value)) {
			rc = -1;
			break;
		}
		uint64_t at;
		if (hmap_get(&pos, s->key_a, 0, &at) &&
		    flame_tree_add(all[at].tree, frames, n, s->value))
			rc = -1;
	}
	free(frames);
	hmap_free(&pos);
	if (rc)
		frec_error_set(err, "report", -1, ENOMEM, "out of memory building the CPU flame graphs");
	return rc;
}

const struct report_data *report_collect_result(struct report_collect *c, struct trace_set *ts,
						struct frec_error *err)
{
	if (build_cpu(c, ts, err))
		return NULL;
	return &c->data;
}
