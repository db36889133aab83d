/* The stragglers model's per-rank rows: per step, the time inside NCCL
 * calls (wait) and the rest (compute); the mean step and wait, the median
 * compute and the score against the fastest rank; the median step over
 * every rank.  Not for which rank is late (strag_verdict.c). */
#include "strag_private.h"

#include <stdlib.h>

int strag_build_rows(struct stragglers_result *r)
{
	const struct nccl_result *nc = r->nccl;
	r->n_rows = nc->n_ranks;
	r->rows = calloc(nc->n_ranks ? nc->n_ranks : 1, sizeof(*r->rows));
	size_t total_steps = 0;
	for (size_t ri = 0; ri < nc->n_ranks; ri++)
		total_steps += nc->ranks[ri].n_steps;
	double *all_steps = malloc((total_steps ? total_steps : 1) * sizeof(double));
	if (!r->rows || !all_steps) {
		free(all_steps);
		return -1;
	}
	size_t n_all = 0;
	double fastest = -1;
	for (size_t ri = 0; ri < nc->n_ranks; ri++) {
		const struct nccl_rank *rk = &nc->ranks[ri];
		struct straggler_row *row = &r->rows[ri];
		row->rank_index = (uint32_t)ri;
		row->steps = rk->n_steps;
		row->mean_step_ms = row->median_compute_ms = row->score = -1;
		if (!rk->n_steps)
			continue;
		double *wait = calloc(rk->n_steps, sizeof(double));
		if (!wait) {
			free(all_steps);
			return -1;
		}
		for (size_t c = 0; c < rk->n_calls; c++) {
			const struct nccl_call *call = &rk->calls[c];
			if (call->step >= 0 && (size_t)call->step < rk->n_steps)
				wait[call->step] += (double)(call->exit_ns - call->entry_ns) / 1e6;
		}
		double step_sum = 0, wait_sum = 0;
		for (size_t s = 0; s < rk->n_steps; s++) {
			double step_ms = (double)(rk->step_end_ns[s] - rk->step_begin_ns[s]) / 1e6;
			step_sum += step_ms;
			wait_sum += wait[s];
			all_steps[n_all++] = step_ms;
			wait[s] = step_ms > wait[s] ? step_ms - wait[s] : 0; /* now: compute */
		}
		row->mean_step_ms = step_sum / (double)rk->n_steps;
		row->mean_wait_ms = wait_sum / (double)rk->n_steps;
		row->median_compute_ms = strag_median(wait, rk->n_steps);
		if (fastest < 0 || row->median_compute_ms < fastest)
			fastest = row->median_compute_ms;
		free(wait);
	}
	for (size_t ri = 0; ri < nc->n_ranks; ri++) {
		struct straggler_row *row = &r->rows[ri];
		if (row->median_compute_ms < 0)
			continue;
		row->score = row->median_compute_ms > 0 ? fastest / row->median_compute_ms : 1.0;
	}
	r->median_step_ms = n_all ? strag_median(all_steps, n_all) : -1;
	free(all_steps);
	return 0;
}
