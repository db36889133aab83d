/* The calls-per-stack model: one hash map from (file, pid, stack, kind,
 * function) to a row, filled while the decoder streams, sorted at finish
 * so every output built on it is deterministic. */
#include "model_stack_calls.h"
#include "cuda_funcs.h"
#include "hmap.h"
#include "lat_hist.h"
#include "model_cuda.h"
#include "model_syscalls.h"
#include "syscall_names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The gap quantile the sampling period is read from: a thread on CPU
 * through two ticks shows the period exactly, one that slept between
 * them a longer gap, so the short end of the gaps is the period; not
 * the very shortest, which a thread migrating between CPUs (each with
 * its own timer) can make shorter.  On samples/train_causes at 999 Hz,
 * whose thread sleeps most of each step, the median read 538 Hz and
 * this one reads 999. */
#define SC_GAP_QUANTILE 0.1

struct model_stack_calls {
	struct model_opts opts;
	struct hmap index; /* (file << 32 | pid, stack << 32 | kind << 24 | func) -> row */
	struct sc_row *rows;
	size_t cap;
	struct hmap last_sample; /* (file, tid) -> ts_ns of its latest CPU sample */
	struct lat_hist gaps;
	struct stack_calls_result result;
};

static void *sc_create(const struct model_opts *opts)
{
	struct model_stack_calls *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	if (opts)
		m->opts = *opts;
	hmap_init(&m->index);
	hmap_init(&m->last_sample);
	lat_hist_init(&m->gaps, 6);
	return m;
}

static struct sc_row *row_of(struct model_stack_calls *m, uint32_t file, uint32_t pid,
			     uint32_t stack_id, enum sc_kind kind, uint32_t func)
{
	int created;
	uint64_t *v = hmap_slot(&m->index, (uint64_t)file << 32 | pid,
				(uint64_t)stack_id << 32 | (uint64_t)kind << 24 | func, &created);
	if (!v)
		return NULL;
	if (created) {
		if (m->result.n_rows == m->cap) {
			size_t cap = m->cap ? m->cap * 2 : 64;
			struct sc_row *grown = realloc(m->rows, cap * sizeof(*grown));
			if (!grown)
				return NULL;
			m->rows = grown;
			m->cap = cap;
		}
		m->rows[m->result.n_rows] = (struct sc_row){ .file = file, .pid = pid,
							     .stack_id = stack_id, .kind = kind,
							     .func = func };
		*v = m->result.n_rows++;
	}
	return &m->rows[*v];
}

static int sc_feed(void *state, uint32_t file_index, const struct fr_rec_hdr *rec)
{
	struct model_stack_calls *m = state;
	uint16_t type;
	memcpy(&type, (const uint8_t *)rec + offsetof(struct fr_rec_hdr, type), sizeof(type));
	struct sc_row *r;
	if (type == FR_EV_CPU_SAMPLE) {
		struct fr_ev_cpu_sample ev;
		memcpy(&ev, rec, sizeof(ev)); /* size checked by the decoder */
		if (m->opts.filter_pid && ev.c.pid != m->opts.pid)
			return 0;
		if (!(r = row_of(m, file_index, ev.c.pid, ev.stack_id, SC_CPU, 0)))
			return -1;
		r->count++;
		int created;
		uint64_t *last = hmap_slot(&m->last_sample, file_index, ev.c.tid, &created);
		if (!last)
			return -1;
		if (!created && ev.c.ts_ns > *last && ev.c.ts_ns - *last < 1000000000ull &&
		    lat_hist_add(&m->gaps, ev.c.ts_ns - *last))
			return -1;
		*last = ev.c.ts_ns;
	} else if (type == FR_EV_CUDA) {
		struct fr_ev_cuda ev;
		memcpy(&ev, rec, sizeof(ev));
		if (m->opts.filter_pid && ev.c.pid != m->opts.pid)
			return 0;
		/* the cuda model's rows: function and _ptsz variant, or unknown */
		uint32_t func = ev.func < CUDA_FUNC_LIMIT && cuda_func_name(ev.func)
			? (uint32_t)ev.func * 2 + ((ev.flags & FR_CUDAF_PTSZ) ? 1 : 0)
			: CUDA_FUNC_LIMIT * 2;
		if (!(r = row_of(m, file_index, ev.c.pid, ev.stack_id, SC_CUDA, func)))
			return -1;
		r->count++;
		r->total_ns += ev.duration_ns;
		r->errors += ev.result != 0;
	} else if (type == FR_EV_SYSCALL) {
		struct fr_ev_syscall ev;
		memcpy(&ev, rec, sizeof(ev));
		if (m->opts.filter_pid && ev.c.pid != m->opts.pid)
			return 0;
		uint32_t nr = ev.nr < SYSCALLS_MAX_NR ? ev.nr : SYSCALLS_MAX_NR;
		if (!(r = row_of(m, file_index, ev.c.pid, ev.stack_id, SC_SYSCALL, nr)))
			return -1;
		r->count++;
		r->total_ns += ev.duration_ns;
		r->errors += ev.ret < 0;
	}
	return 0;
}

static int row_order(const void *pa, const void *pb)
{
	const struct sc_row *a = pa, *b = pb;
	if (a->file != b->file)
		return a->file < b->file ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->stack_id != b->stack_id)
		return a->stack_id < b->stack_id ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	return a->func < b->func ? -1 : a->func > b->func;
}

static int sc_finish(void *state, struct trace_set *ts, struct frec_error *err)
{
	(void)ts;
	(void)err;
	struct model_stack_calls *m = state;
	if (m->result.n_rows)
		qsort(m->rows, m->result.n_rows, sizeof(*m->rows), row_order);
	m->result.rows = m->rows;
	hmap_free(&m->index); /* rows no longer move: nothing looks them up */
	hmap_init(&m->index);
	m->result.sample_gap_ns = lat_hist_quantile(&m->gaps, SC_GAP_QUANTILE);
	m->result.sample_hz = m->result.sample_gap_ns ? 1e9 / (double)m->result.sample_gap_ns : 0;
	return 0;
}

static void sc_destroy(void *state)
{
	struct model_stack_calls *m = state;
	if (!m)
		return;
	hmap_free(&m->index);
	hmap_free(&m->last_sample);
	lat_hist_free(&m->gaps);
	free(m->rows);
	free(m);
}

const struct stack_calls_result *model_stack_calls_result(const void *state)
{
	return &((const struct model_stack_calls *)state)->result;
}

const char *sc_func_name(const struct sc_row *r, char *buf, size_t len)
{
	if (r->kind == SC_CUDA) {
		if (r->func >= CUDA_FUNC_LIMIT * 2)
			return "[unknown function]";
		uint16_t func = (uint16_t)(r->func / 2);
		snprintf(buf, len, "%s%s", cuda_func_name(func),
			 r->func & 1 ? cuda_variant_suffix(func) : "");
		return buf;
	}
	if (r->kind == SC_SYSCALL) {
		const char *name = r->func < SYSCALLS_MAX_NR ? syscall_name(r->func) : NULL;
		if (name)
			return name;
		if (r->func >= SYSCALLS_MAX_NR)
			snprintf(buf, len, "(nr >= %u)", SYSCALLS_MAX_NR);
		else
			snprintf(buf, len, "syscall_%u", r->func);
		return buf;
	}
	return "cpu";
}

const struct model_ops model_stack_calls_ops = {
	.name = "stack_calls",
	.create = sc_create,
	.feed = sc_feed,
	.finish = sc_finish,
	.destroy = sc_destroy,
};
