/* The NCCL model's clock alignment: every rank leaves a blocking collective
 * at the same instant, so the exits of each consistent instance with two
 * or more members are sync points for align_refine (the entries bound the
 * correction by causality); then every call gets its times on the common
 * timeline and every instance its first entry.  Not for the alignment
 * arithmetic (align.c) nor for matching the instances (nccl_instances.c). */
#include "nccl_private.h"
#include "align.h"
#include "trace_set.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* A file's time on the common clock; saturates, since a hostile trace can
 * carry any timestamp and offset. */
static int64_t common_ns(uint64_t ns, int64_t off)
{
	int64_t v;
	if (__builtin_add_overflow((int64_t)(ns > INT64_MAX ? INT64_MAX : ns), off, &v))
		return off < 0 ? INT64_MIN : INT64_MAX;
	return v;
}

int nccl_align_clocks(struct nccl_result *r, size_t n_members, struct trace_set *ts,
		      struct frec_error *err)
{
	struct align_sync *sync = NULL;
	size_t n_sync = 0;
	if (n_members && !(sync = malloc(n_members * sizeof(*sync)))) {
		frec_error_set(err, "flightrec-analyze", -1, ENOMEM,
			       "out of memory matching NCCL collectives");
		return -1;
	}
	for (size_t ri = 0; ri < r->n_ranks; ri++) {
		const struct nccl_rank *rk = &r->ranks[ri];
		for (size_t c = 0; c < rk->n_calls; c++) {
			const struct nccl_call *call = &rk->calls[c];
			if (call->instance != NCCL_NONE && r->instances[call->instance].consistent &&
			    r->instances[call->instance].n_members >= 2)
				sync[n_sync++] = (struct align_sync){ call->instance, rk->file_index,
								      call->exit_ns, call->entry_ns };
		}
	}
	/* the decoder's align stage ran a private instance of this model
	 * before the events pass: its offsets are the ones every model and
	 * output has used since, so they stay */
	int rc = trace_set_clocks_final(ts) ? 0 : align_refine(ts, sync, n_sync, err);
	free(sync);
	if (rc)
		return -1;
	for (size_t i = 0; i < r->n_instances; i++)
		r->instances[i].first_entry_common_ns = INT64_MAX;
	for (size_t ri = 0; ri < r->n_ranks; ri++) {
		struct nccl_rank *rk = &r->ranks[ri];
		int64_t off = trace_set_time_offset_ns(ts, rk->file_index);
		for (size_t c = 0; c < rk->n_calls; c++) {
			struct nccl_call *call = &rk->calls[c];
			call->entry_common_ns = common_ns(call->entry_ns, off);
			call->exit_common_ns = common_ns(call->exit_ns, off);
			if (call->instance == NCCL_NONE)
				continue;
			struct nccl_instance *in = &r->instances[call->instance];
			if (call->entry_common_ns < in->first_entry_common_ns)
				in->first_entry_common_ns = call->entry_common_ns;
		}
	}
	return 0;
}
