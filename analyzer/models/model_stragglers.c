/* The stragglers model (definitions in model_stragglers.h): the model
 * interface and the order of its stages.  It wraps the NCCL model, which
 * gets every event this one does not keep, and keeps the CPU samples and
 * system calls the evidence needs; at finish it builds the per-rank rows,
 * the verdict and, for a straggler, the evidence (strag_private.h lists
 * the parts).  Not for matching collectives or aligning clocks
 * (model_nccl.c, align.c) nor for output (cmd_stragglers.c). */
#include "strag_private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- feed ----------------------------------------------------------------- */

static void *strag_create(const struct model_opts *opts)
{
	struct model_stragglers *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	if (!(m->nccl = model_nccl_ops.create(opts))) {
		free(m);
		return NULL;
	}
	m->result.candidate = -1;
	return m;
}

void model_stragglers_ignore_step_markers(void *state)
{
	model_nccl_ignore_step_markers(((struct model_stragglers *)state)->nccl);
}

static int grow(void **p, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return 0;
	size_t want = *cap ? *cap * 2 : 1024;
	void *q = realloc(*p, want * elem);
	if (!q)
		return -1;
	*p = q;
	*cap = want;
	return 0;
}

static int strag_feed(void *state, uint32_t file_index, const struct fr_rec_hdr *rec)
{
	struct model_stragglers *m = state;
	struct fr_rec_hdr h;
	memcpy(&h, rec, sizeof(h));
	if (h.type == FR_EV_CPU_SAMPLE) {
		struct fr_ev_cpu_sample ev;
		memcpy(&ev, rec, sizeof(ev));
		if (grow((void **)&m->samples, &m->cap_samples, m->n_samples, sizeof(*m->samples)))
			return -1;
		m->samples[m->n_samples++] = (struct cpu_sample){ file_index, ev.c.pid, ev.c.ts_ns,
								  ev.stack_id };
		return 0;
	}
	if (h.type == FR_EV_SYSCALL) {
		struct fr_ev_syscall ev;
		memcpy(&ev, rec, sizeof(ev));
		if (grow((void **)&m->syscalls, &m->cap_syscalls, m->n_syscalls,
			 sizeof(*m->syscalls)))
			return -1;
		m->syscalls[m->n_syscalls++] = (struct syscall_ev){ file_index, ev.c.pid, ev.c.ts_ns,
								    ev.duration_ns, ev.nr };
		return 0;
	}
	return model_nccl_ops.feed(m->nccl, file_index, rec);
}

/* ---- finish ----------------------------------------------------------------- */

static int strag_finish(void *state, struct trace_set *ts, struct frec_error *err)
{
	struct model_stragglers *m = state;
	struct stragglers_result *r = &m->result;
	if (model_nccl_ops.finish(m->nccl, ts, err))
		return -1;
	r->nccl = model_nccl_result(m->nccl);
	if (strag_build_rows(r) || strag_verdict(r)) {
		frec_error_set(err, "flightrec-analyze", -1, ENOMEM,
			       "out of memory in the stragglers model");
		return -1;
	}
	if (!r->verdict.found)
		return 0;
	if (strag_evidence(m, ts, err))
		return -1;
	strag_write_evidence(r);
	return 0;
}

static void strag_destroy(void *state)
{
	struct model_stragglers *m = state;
	if (!m)
		return;
	model_nccl_ops.destroy(m->nccl);
	free(m->samples);
	free(m->syscalls);
	free(m->result.rows);
	free(m);
}

const struct stragglers_result *model_stragglers_result(const void *state)
{
	return &((const struct model_stragglers *)state)->result;
}

const struct model_ops model_stragglers_ops = {
	.name = "stragglers",
	.create = strag_create,
	.feed = strag_feed,
	.finish = strag_finish,
	.destroy = strag_destroy,
};
