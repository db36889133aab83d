/* The stragglers model (definitions in model_stragglers.h): the model
 * interface and the order of its stages.  It needs the NCCL model (the
 * decoder feeds and finishes that one first); at finish it builds the
 * per-rank rows and the verdict, and for a straggler it takes a second look
 * at the CPU samples and system calls for the evidence (keeping none of
 * them in the events pass: at 16,384 ranks they were a quarter of its
 * memory; strag_private.h lists the parts).  Not for matching collectives or aligning clocks
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
	return m;
}

void model_stragglers_ignore_step_markers(void *state)
{
	model_nccl_ignore_step_markers(((struct model_stragglers *)state)->nccl);
}

/* Nothing is kept in the events pass: the evidence's events come in the
 * second look, once the verdict says whose to count. */
static int strag_feed(void *state, uint32_t file_index, const struct fr_rec_hdr *rec)
{
	(void)state, (void)file_index, (void)rec;
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
	return strag_look_begin(m, ts, err);
}

static int strag_revisit_wanted(void *state)
{
	return ((struct model_stragglers *)state)->look != NULL;
}

static int strag_revisit_feed(void *state, uint32_t file_index, const struct fr_rec_hdr *rec)
{
	return strag_look_feed(state, file_index, rec);
}

static int strag_revisit_finish(void *state, struct trace_set *ts, struct frec_error *err)
{
	struct model_stragglers *m = state;
	(void)ts, (void)err;
	strag_look_end(m);
	strag_write_evidence(&m->result);
	return 0;
}

static void strag_destroy(void *state)
{
	struct model_stragglers *m = state;
	if (!m)
		return;
	strag_look_free(m);
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
static const uint16_t strag_revisit_types[] = { FR_EV_CPU_SAMPLE, FR_EV_SYSCALL, 0 };

const struct model_ops model_stragglers_ops = {
	.name = "stragglers",
	.create = strag_create,
	.feed = strag_feed,
	.finish = strag_finish,
	.destroy = strag_destroy,
	.needs = strag_needs,
	.bind = strag_bind,
	.revisit_types = strag_revisit_types,
	.revisit_wanted = strag_revisit_wanted,
	.revisit_feed = strag_revisit_feed,
	.revisit_finish = strag_revisit_finish,
};
