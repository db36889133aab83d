/* The CPU profile model: counts samples per (file, pid, stack id) while the
 * decoder streams, then symbolizes each distinct stack once and builds the
 * flame tree.  Not for output: flame_write_* render the tree.
 *
 * Frames go root first: user frames outermost first, then kernel frames
 * outermost first (the stack record stores each part leaf first). */
#include "model_cpu.h"
#include "hmap.h"
#include "recorder_cmdline.h"
#include "symbolize.h"
#include "trace_set.h"

#include <errno.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct model_cpu {
	struct model_opts opts;
	struct hmap counts; /* (file << 32 | pid, stack_id) -> samples */
	struct model_cpu_result result;
	struct stack_profile profile;
};

static void *cpu_create(const struct model_opts *opts)
{
	struct model_cpu *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	if (opts)
		m->opts = *opts;
	hmap_init(&m->counts);
	stack_profile_init(&m->profile);
	return m;
}

static int cpu_feed(void *state, uint32_t file_index, const struct fr_rec_hdr *rec)
{
	struct model_cpu *m = state;
	struct fr_ev_cpu_sample ev;
	uint16_t type;
	memcpy(&type, (const uint8_t *)rec + offsetof(struct fr_rec_hdr, type), sizeof(type));
	if (type != FR_EV_CPU_SAMPLE)
		return 0;
	memcpy(&ev, rec, sizeof(ev)); /* size checked by the decoder */
	m->result.samples++;
	if (m->opts.filter_pid && ev.c.pid != m->opts.pid)
		return 0;
	uint64_t *count = hmap_slot(&m->counts, (uint64_t)file_index << 32 | ev.c.pid,
				    ev.stack_id, NULL);
	if (!count)
		return -1;
	++*count;
	m->result.samples_kept++;
	if (m->opts.profile && stack_profile_add(&m->profile, file_index, ev.c.pid, ev.c.tid,
						 ev.stack_id, STACK_LEAF_NONE, 1, 0))
		return -1;
	return 0;
}

/* Names of one stack, root first, into *frames, the samples without frames
 * counted. */
static size_t stack_frames(struct model_cpu *m, struct symbolizer *sym,
			   const struct trace_file *f, uint32_t file_index,
			   uint32_t stack_id, uint64_t samples, const char ***frames,
			   size_t *cap)
{
	enum stack_found how;
	size_t n = symbolize_frames(sym, f, file_index, stack_id, frames, cap, &how);
	if (how == STACK_MISSING)
		m->result.samples_missing_stack += samples;
	else if (how == STACK_NONE)
		m->result.samples_no_stack += samples;
	return n;
}

static int by_samples_desc(const void *a, const void *b)
{
	const struct cpu_proc_tree *x = a, *y = b;
	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	if (x->file_index != y->file_index)
		return x->file_index < y->file_index ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* The busiest processes (opts.per_process of them), each with an empty
 * tree, and their positions by (file << 32 | pid) in *pos. */
static int choose_procs(struct model_cpu *m, struct hmap *pos)
{
	struct model_cpu_result *r = &m->result;
	struct hmap per_proc;
	hmap_init(&per_proc);
	for (size_t i = 0; i < m->counts.cap; i++) {
		const struct hmap_slot *s = &m->counts.slots[i];
		if (!s->used)
			continue;
		uint64_t *n = hmap_slot(&per_proc, s->key_a, 0, NULL);
		if (!n) {
			hmap_free(&per_proc);
			return -1;
		}
		*n += s->value;
	}
	struct cpu_proc_tree *all = calloc(per_proc.count ? per_proc.count : 1, sizeof(*all));
	size_t n_all = 0;
	for (size_t i = 0; all && i < per_proc.cap; i++) {
		const struct hmap_slot *s = &per_proc.slots[i];
		if (s->used)
			all[n_all++] = (struct cpu_proc_tree){ (uint32_t)(s->key_a >> 32),
							       (uint32_t)s->key_a, s->value, NULL };
	}
	hmap_free(&per_proc);
	if (!all)
		return -1;
	qsort(all, n_all, sizeof(*all), by_samples_desc);
	r->n_procs = n_all < m->opts.per_process ? n_all : m->opts.per_process;
	r->procs_left_out = n_all - r->n_procs;
	r->procs = all;
	for (size_t i = 0; i < r->n_procs; i++)
		if (hmap_put(pos, (uint64_t)all[i].file_index << 32 | all[i].pid, 0, i) ||
		    !(all[i].tree = flame_tree_new()))
			return -1;
	return 0;
}

/* CPU time per sample: the period of the recorder's --freq. */
static uint64_t file_period_ns(const struct trace_file *f)
{
	unsigned long hz = recorder_option_uint(f->cmdline, "--freq", 'F', 99);
	return hz ? 1000000000ull / hz : 0;
}

static void finish_profile(struct model_cpu *m, struct trace_set *ts)
{
	struct stack_profile *p = &m->profile;
	const struct trace_file *f0 = trace_set_file(ts, 0);
	m->result.period_ns = f0 ? file_period_ns(f0) : 0;
	stack_profile_sort(p);
	uint64_t period = 0;
	uint32_t file = UINT32_MAX;
	for (size_t i = 0; i < p->n_rows; i++) {
		struct stack_row *r = &p->rows[i];
		if (r->file != file) {
			const struct trace_file *f = trace_set_file(ts, r->file);
			file = r->file;
			period = f ? file_period_ns(f) : 0;
		}
		r->value = r->count * period;
	}
	p->count_type = "samples";
	p->count_unit = "count";
	p->value_type = "cpu";
	p->value_unit = "nanoseconds";
	p->period_type = "cpu";
	p->period_unit = "nanoseconds";
	p->period = m->result.period_ns;
	m->result.profile = p;
}

static int cpu_finish(void *state, struct trace_set *ts, struct frec_error *err)
{
	struct model_cpu *m = state;
	struct hmap pos;
	hmap_init(&pos);
	if (m->opts.profile)
		finish_profile(m, ts);
	if (!m->counts.count && m->opts.per_process)
		return 0; /* nothing sampled: the report says so, no tree */
	struct symbolizer *sym = trace_set_symbolizer(ts, err);
	if (!sym) {
		hmap_free(&pos);
		return -1;
	}
	m->result.tree = flame_tree_new();
	if (!m->result.tree || (m->opts.per_process && choose_procs(m, &pos)))
		goto oom;
	const char **frames = NULL;
	size_t cap = 0;
	for (size_t i = 0; i < m->counts.cap; i++) {
		const struct hmap_slot *s = &m->counts.slots[i];
		if (!s->used)
			continue;
		uint32_t file_index = (uint32_t)(s->key_a >> 32);
		const struct trace_file *f = trace_set_file(ts, file_index);
		if (!f)
			continue;
		m->result.distinct_stacks++;
		size_t n = stack_frames(m, sym, f, file_index, (uint32_t)s->key_b, s->value,
					&frames, &cap);
		uint64_t at;
		if (n == SIZE_MAX || flame_tree_add(m->result.tree, frames, n, s->value) ||
		    (hmap_get(&pos, s->key_a, 0, &at) &&
		     flame_tree_add(m->result.procs[at].tree, frames, n, s->value))) {
			free(frames);
			goto oom;
		}
	}
	free(frames);
	hmap_free(&pos);
	return 0;
oom:
	hmap_free(&pos);
	frec_error_set(err, "flightrec-analyze", -1, ENOMEM, "out of memory building the CPU profile");
	return -1;
}

static void cpu_destroy(void *state)
{
	struct model_cpu *m = state;
	if (!m)
		return;
	hmap_free(&m->counts);
	stack_profile_free(&m->profile);
	flame_tree_free(m->result.tree);
	for (size_t i = 0; i < m->result.n_procs; i++)
		flame_tree_free(m->result.procs[i].tree);
	free(m->result.procs);
	free(m);
}

const struct model_cpu_result *model_cpu_result(const void *state)
{
	return &((const struct model_cpu *)state)->result;
}

const struct model_ops model_cpu_ops = {
	.name = "cpu",
	.create = cpu_create,
	.feed = cpu_feed,
	.finish = cpu_finish,
	.destroy = cpu_destroy,
};
