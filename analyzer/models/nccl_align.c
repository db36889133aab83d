/* The NCCL model's clock alignment: every rank leaves a blocking collective
 * at the same instant, so the exits of each consistent instance with two
 * or more members are sync points for align_refine (the entries bound the
 * correction by causality); then every rank gets its offset to the common
 * timeline (its calls' times there: nccl_call_entry_common) and every
 * instance its first entry.  Not for the alignment
 * arithmetic (align.c) nor for matching the instances (nccl_instances.c). */
#include "nccl_private.h"
#include "align.h"
#include "file_groups.h"
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

int64_t nccl_call_entry_common(const struct nccl_rank *rk, const struct nccl_call *c)
{
	return common_ns(c->entry_ns, rk->offset_ns);
}

int64_t nccl_call_exit_common(const struct nccl_rank *rk, const struct nccl_call *c)
{
	return common_ns(c->exit_ns, rk->offset_ns);
}

static uint32_t rank_file(const void *items, size_t i)
{
	return ((const struct nccl_rank *)items)[i].file_index;
}

/* One align entry per (instance, file) of the consistent instances with two
 * or more members, the file's ranks folded into it: the ranks are taken
 * file by file, and each instance remembers the entry its current file
 * made (at) and for which file (at_file, file index + 1). */
static int group_files(const struct nccl_result *r, size_t n_files,
		       struct align_group_file **out, size_t *n_out)
{
	struct file_groups by_file;
	if (file_groups_build(&by_file, r->ranks, r->n_ranks, n_files, rank_file))
		return -1;
	size_t *at = malloc((r->n_instances ? r->n_instances : 1) * sizeof(*at));
	uint32_t *at_file = calloc(r->n_instances ? r->n_instances : 1, sizeof(*at_file));
	struct align_group_file *gf = NULL;
	size_t n = 0, cap = 0;
	int rc = -1;
	if (!at || !at_file)
		goto out;
	for (size_t k = 0; k < by_file.file_at[n_files]; k++) {
		const struct nccl_rank *rk = &r->ranks[by_file.order[k]];
		for (size_t c = 0; c < rk->n_calls; c++) {
			const struct nccl_call *call = &rk->calls[c];
			if (call->instance == NCCL_NONE || !r->instances[call->instance].consistent ||
			    r->instances[call->instance].n_members < 2)
				continue;
			if (at_file[call->instance] != rk->file_index + 1) {
				if (n == cap) {
					size_t grown_cap = cap ? cap * 2 : 1024;
					void *grown = realloc(gf, grown_cap * sizeof(*gf));
					if (!grown)
						goto out;
					gf = grown;
					cap = grown_cap;
				}
				gf[n] = (struct align_group_file){ .group = call->instance,
								   .file_index = rk->file_index };
				at[call->instance] = n++;
				at_file[call->instance] = rk->file_index + 1;
			}
			align_group_file_add(&gf[at[call->instance]], call->exit_ns, call->entry_ns);
		}
	}
	*out = gf;
	*n_out = n;
	gf = NULL;
	rc = 0;
out:
	free(gf), free(at), free(at_file);
	file_groups_free(&by_file);
	return rc;
}

int nccl_align_clocks(struct nccl_result *r, struct trace_set *ts, struct frec_error *err)
{
	struct align_group_file *sync = NULL;
	size_t n_sync = 0;
	if (!trace_set_clocks_final(ts) && group_files(r, trace_set_count(ts), &sync, &n_sync)) {
		frec_error_set(err, "flightrec-analyze", -1, ENOMEM,
			       "out of memory matching NCCL collectives");
		return -1;
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
		rk->offset_ns = trace_set_time_offset_ns(ts, rk->file_index);
		for (size_t c = 0; c < rk->n_calls; c++) {
			const struct nccl_call *call = &rk->calls[c];
			if (call->instance == NCCL_NONE)
				continue;
			struct nccl_instance *in = &r->instances[call->instance];
			int64_t entry = nccl_call_entry_common(rk, call);
			if (entry < in->first_entry_common_ns)
				in->first_entry_common_ns = entry;
		}
	}
	return 0;
}
