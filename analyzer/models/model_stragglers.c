/* The stragglers model (definitions in model_stragglers.h): the model
 * interface and the order of its stages.  It needs the NCCL model (the
 * decoder feeds and finishes that one first) and keeps the CPU samples and
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
	(void)opts;
	if (!m)
		return NULL;
	m->result.candidate = -1;
	proc_lists_init(&m->samples, sizeof(struct cpu_sample));
	proc_lists_init(&m->syscalls, sizeof(struct syscall_ev));
	return m;
}

void model_stragglers_ignore_step_markers(void *state)
{
	model_nccl_ignore_step_markers(((struct model_stragglers *)state)->nccl);
}

static int strag_feed(void *state, uint32_t file_index, const struct fr_rec_hdr *rec)
{
	struct model_stragglers *m = state;
	struct fr_rec_hdr h;
	memcpy(&h, rec, sizeof(h));
	if (h.type == FR_EV_CPU_SAMPLE) {
		struct fr_ev_cpu_sample ev;
		memcpy(&ev, rec, sizeof(ev));
		struct cpu_sample *kept = proc_lists_append(&m->samples, file_index, ev.c.pid);
		if (!kept)
			return -1;
		*kept = (struct cpu_sample){ ev.c.ts_ns, ev.stack_id };
		return 0;
	}
	if (h.type == FR_EV_SYSCALL) {
		struct fr_ev_syscall ev;
		memcpy(&ev, rec, sizeof(ev));
		struct syscall_ev *kept = proc_lists_append(&m->syscalls, file_index, ev.c.pid);
		if (!kept)
			return -1;
		*kept = (struct syscall_ev){ ev.c.ts_ns, ev.duration_ns, ev.nr };
	}
	return 0;
}

/* ---- finish ----------------------------------------------------------------- */

static int strag_finish(void *state, struct trace_set *ts, struct frec_error *err)
{
	struct model_stragglers *m = state;
	struct stragglers_result *r = &m->result;
	if (!m->nccl) {
		/* registered with trace_set_add_model: nothing bound its nccl model */
		frec_error_set(err, "flightrec-analyze", -1, EINVAL,
			       "the stragglers model runs only with the nccl model it needs "
			       "(trace_set_use_model)");
		return -1;
	}
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
	proc_lists_free(&m->samples);
	proc_lists_free(&m->syscalls);
	free(m->result.rows);
	free(m->result.charged_lost_ns);
	free(m);
}

const struct stragglers_result *model_stragglers_result(const void *state)
{
	return &((const struct model_stragglers *)state)->result;
}

static void strag_bind(void *state, const char *name, void *dep)
{
	(void)name; /* only "nccl" */
	((struct model_stragglers *)state)->nccl = dep;
}

static const char *const strag_needs[] = { "nccl", NULL };

const struct model_ops model_stragglers_ops = {
	.name = "stragglers",
	.create = strag_create,
	.feed = strag_feed,
	.finish = strag_finish,
	.destroy = strag_destroy,
	.needs = strag_needs,
	.bind = strag_bind,
};
