/* The NCCL model (see model_nccl.h): the model interface and the order of
 * its stages.  Keeps every NCCL call and step marker while the decoder
 * streams (they are few: one per collective), then in finish() builds
 * ranks, communicators, matched instances, the clock alignment and the
 * steps; the stages live apart (nccl_private.h lists them).  Not for
 * verdicts (model_stragglers.c) nor for output. */
#include "nccl_private.h"
#include "grow.h"
#include "fr_family.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int nccl_is_collective(uint16_t func)
{
	return fr_func_class_of(FR_PROBE_NCCL, func) == FR_FN_COLLECTIVE;
}

const char *nccl_func_name(uint16_t func)
{
	const char *name = fr_func_name(FR_PROBE_NCCL, func);
	return name ? name : "ncclUnknown";
}

const char *nccl_op_name(uint16_t func)
{
	const char *name = nccl_func_name(func);
	return strncmp(name, "nccl", 4) == 0 ? name + 4 : name;
}

int64_t nccl_member_ready_ns(const struct nccl_result *r, const struct nccl_member *m)
{
	/* Hook: the first RDMA post of this rank for the instance, when known. */
	const struct nccl_rank *rk = &r->ranks[m->rank_index];
	return nccl_call_entry_common(rk, &rk->calls[m->call_index]);
}

int nccl_instance_complete(const struct nccl_result *r, const struct nccl_instance *in)
{
	if (!in->consistent || in->n_members < 2)
		return 0;
	int32_t nranks = r->comms[in->comm_index].nranks;
	return nranks < 0 || in->n_members == (uint32_t)nranks;
}

/* ---- feed ----------------------------------------------------------------- */

static void *nccl_create(const struct model_opts *opts)
{
	/* a pid filter would break the matching across ranks: not read */
	struct model_nccl *m = calloc(1, sizeof(struct model_nccl));
	if (m) {
		m->align_only = opts && opts->align_only;
		proc_lists_init(&m->raw, sizeof(struct fr_ev_nccl));
		hmap_init(&m->event_of);
		hmap_init(&m->sync_seen);
	}
	return m;
}

void model_nccl_ignore_step_markers(void *state)
{
	((struct model_nccl *)state)->ignore_markers = 1;
}

static int nccl_feed(void *state, uint32_t file_index, const struct fr_rec_hdr *rec)
{
	struct model_nccl *m = state;
	struct fr_rec_hdr h;
	memcpy(&h, rec, sizeof(h));
	if (h.type == FR_EV_NCCL) {
		if (m->adopted)
			return 0; /* built, and counted, from the align pass's read */
		struct fr_ev_nccl ev;
		memcpy(&ev, rec, sizeof(ev)); /* size checked by the decoder */
		struct fr_ev_nccl *kept = proc_lists_append(&m->raw, file_index, ev.c.pid);
		if (!kept)
			return -1;
		*kept = ev;
		m->result.events++;
	} else if (h.type == FR_EV_STEP) {
		struct fr_ev_step ev;
		memcpy(&ev, rec, sizeof(ev));
		if (grow_array((void **)&m->marks, &m->cap_marks, m->n_marks + 1, sizeof(*m->marks),
			       256))
			return -1;
		m->marks[m->n_marks++] = (struct step_raw){ file_index, ev.c.pid, ev.c.ts_ns };
		m->result.step_events++;
	} else if (h.type == FR_EV_CUDA) {
		struct fr_ev_cuda ev;
		memcpy(&ev, rec, sizeof(ev));
		return nccl_note_cuda(m, file_index, &ev);
	}
	return 0;
}

/* ---- finish ----------------------------------------------------------------- */

static int nccl_finish(void *state, struct trace_set *ts, struct frec_error *err)
{
	struct model_nccl *m = state;
	struct nccl_result *r = &m->result;
	size_t n_members = 0;
	if (m->adopted)
		goto steps;
	if (nccl_build_ranks(m, ts) || nccl_infer_unknown_comm(r))
		goto oom;
	if (nccl_match_instances(r, &n_members))
		goto oom_matching;
	if (nccl_align_clocks(r, ts, err))
		return -1;
	if (nccl_order_instances(r, n_members))
		goto oom_matching;
	if (m->align_only)
		return 0; /* steps and hang: the adopting instance's, with its markers
			   * and CUDA events */
steps:
	if (nccl_build_steps(m) || nccl_find_hang(m, ts))
		goto oom;
	return 0;
oom_matching:
	frec_error_set(err, "flightrec-analyze", -1, ENOMEM, "out of memory matching NCCL collectives");
	return -1;
oom:
	frec_error_set(err, "flightrec-analyze", -1, ENOMEM, "out of memory in the NCCL model");
	return -1;
}

static void nccl_destroy(void *state)
{
	struct model_nccl *m = state;
	if (!m)
		return;
	struct nccl_result *r = &m->result;
	for (size_t i = 0; i < r->n_ranks; i++) {
		free(r->ranks[i].calls);
		free(r->ranks[i].joined);
		free(r->ranks[i].step_begin_ns);
		free(r->ranks[i].step_end_ns);
	}
	free(r->ranks);
	free(r->comms);
	free(r->instances);
	free(r->members);
	proc_lists_free(&m->raw);
	free(m->marks);
	free(m->events);
	hmap_free(&m->event_of);
	hmap_free(&m->sync_seen);
	nccl_hang_free(&r->hang);
	free(m);
}

const struct nccl_result *model_nccl_result(const void *state)
{
	return &((const struct model_nccl *)state)->result;
}

/* What the align pass's instance built moves here (model.h adopt): the
 * events pass then reads no NCCL record into raw (at 16,384 ranks 104
 * bytes each, 340 MB) and builds nothing twice. */
static void nccl_adopt(void *state, void *aligned)
{
	struct model_nccl *m = state, *a = aligned;
	if (m->adopted)
		return; /* one align pass per set: never twice */
	struct nccl_result *r = &m->result, *ar = &a->result;
	r->ranks = ar->ranks, r->n_ranks = ar->n_ranks;
	r->comms = ar->comms, r->n_comms = ar->n_comms;
	r->instances = ar->instances, r->n_instances = ar->n_instances;
	r->members = ar->members, r->n_members = ar->n_members;
	r->events = ar->events;
	r->unknown_comm_calls = ar->unknown_comm_calls;
	r->inferred_ranks = ar->inferred_ranks;
	r->failed_calls = ar->failed_calls;
	ar->ranks = NULL, ar->n_ranks = 0;
	ar->comms = NULL, ar->n_comms = 0;
	ar->instances = NULL, ar->n_instances = 0;
	ar->members = NULL, ar->n_members = 0;
	m->adopted = 1;
}

static const uint16_t nccl_align_types[] = { FR_EV_NCCL, 0 };

const struct model_ops model_nccl_ops = {
	.name = "nccl",
	.create = nccl_create,
	.feed = nccl_feed,
	.finish = nccl_finish,
	.destroy = nccl_destroy,
	.align_types = nccl_align_types,
	.adopt = nccl_adopt,
};
