/* The NCCL model's steps, per rank: from FR_EV_STEP markers when every rank
 * has at least two of them (and they are not ignored), else every K-th
 * collective, K the period of the repeating (function, count,
 * communicator) sequence, or one step per collective when no period fits.
 * Each call learns its step.  Not for what a step costs (the stragglers
 * model). */
#include "nccl_private.h"

#include <stdint.h>
#include <stdlib.h>

static int cmp_mark(const void *a, const void *b)
{
	const struct step_raw *x = a, *y = b;
	if (x->file_index != y->file_index)
		return x->file_index < y->file_index ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
}

/* Steps from markers: step i spans marker i to marker i + 1; the last one
 * ends at the exit of the rank's last call after it (dropped if none). */
static int steps_from_marks(struct nccl_rank *rk, const struct step_raw *mk, size_t n)
{
	rk->step_begin_ns = malloc(n * sizeof(uint64_t));
	rk->step_end_ns = malloc(n * sizeof(uint64_t));
	if (!rk->step_begin_ns || !rk->step_end_ns)
		return -1;
	uint64_t last_exit = 0;
	for (size_t c = 0; c < rk->n_calls; c++) {
		struct nccl_call *call = &rk->calls[c];
		size_t lo = 0, hi = n; /* markers <= entry */
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (mk[mid].ts_ns <= call->entry_ns)
				lo = mid + 1;
			else
				hi = mid;
		}
		call->step = (int32_t)lo - 1;
		if (call->exit_ns > last_exit)
			last_exit = call->exit_ns;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t end = i + 1 < n ? mk[i + 1].ts_ns : last_exit;
		if (end <= mk[i].ts_ns)
			break;
		rk->step_begin_ns[rk->n_steps] = mk[i].ts_ns;
		rk->step_end_ns[rk->n_steps++] = end;
	}
	for (size_t c = 0; c < rk->n_calls; c++)
		if (rk->calls[c].step >= (int32_t)rk->n_steps)
			rk->calls[c].step = -1;
	return 0;
}

static int same_sig(const struct nccl_call *a, const struct nccl_call *b)
{
	return a->func == b->func && a->count == b->count && a->comm_index == b->comm_index;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Steps of K collectives: the phase is where the rank's longest (median)
 * gap between calls falls, so a step is compute followed by its
 * collectives.  A step begins at the exit of the call before it. */
static int steps_from_period(struct nccl_rank *rk, uint32_t k)
{
	size_t n = rk->n_calls;
	uint32_t phase = 0;
	if (k > 1 && n > k) {
		uint64_t *gaps = malloc(n * sizeof(*gaps));
		if (!gaps)
			return -1;
		uint64_t best = 0;
		for (uint32_t p = 0; p < k; p++) {
			size_t g = 0;
			for (size_t i = p ? p : k; i < n; i += k)
				gaps[g++] = rk->calls[i].entry_ns > rk->calls[i - 1].exit_ns
						    ? rk->calls[i].entry_ns - rk->calls[i - 1].exit_ns : 0;
			if (!g)
				continue;
			qsort(gaps, g, sizeof(*gaps), cmp_u64);
			if (gaps[g / 2] > best) {
				best = gaps[g / 2];
				phase = p;
			}
		}
		free(gaps);
	}
	size_t cap = n / k + 1;
	rk->step_begin_ns = malloc(cap * sizeof(uint64_t));
	rk->step_end_ns = malloc(cap * sizeof(uint64_t));
	if (!rk->step_begin_ns || !rk->step_end_ns)
		return -1;
	for (size_t s = phase ? phase : k; s + k <= n; s += k) {
		int32_t step = (int32_t)rk->n_steps;
		rk->step_begin_ns[rk->n_steps] = rk->calls[s - 1].exit_ns;
		rk->step_end_ns[rk->n_steps++] = rk->calls[s + k - 1].exit_ns;
		for (size_t i = s; i < s + k; i++)
			rk->calls[i].step = step;
	}
	return 0;
}

/* The smallest K for which call i and call i + K look alike (function,
 * count, communicator) in at least 90% of the pooled sequence of every rank. */
static uint32_t detect_period(const struct nccl_result *r, double *match)
{
	size_t longest = 0;
	for (size_t ri = 0; ri < r->n_ranks; ri++)
		if (r->ranks[ri].n_calls > longest)
			longest = r->ranks[ri].n_calls;
	for (uint32_t k = 1; k <= 64 && 2 * (size_t)k <= longest; k++) {
		uint64_t same = 0, total = 0;
		for (size_t ri = 0; ri < r->n_ranks; ri++) {
			const struct nccl_rank *rk = &r->ranks[ri];
			for (size_t i = 0; i + k < rk->n_calls; i++) {
				total++;
				same += (uint64_t)same_sig(&rk->calls[i], &rk->calls[i + k]);
			}
		}
		if (total && (double)same >= 0.9 * (double)total) {
			*match = (double)same / (double)total;
			return k;
		}
	}
	*match = 0;
	return 0;
}

int nccl_build_steps(struct model_nccl *m)
{
	struct nccl_result *r = &m->result;
	if (m->n_marks)
		qsort(m->marks, m->n_marks, sizeof(*m->marks), cmp_mark);
	/* Markers only when every rank has at least two of them. */
	int use_marks = !m->ignore_markers && m->n_marks && r->n_ranks;
	size_t *first = calloc(r->n_ranks ? r->n_ranks : 1, sizeof(size_t));
	size_t *count = calloc(r->n_ranks ? r->n_ranks : 1, sizeof(size_t));
	if (!first || !count) {
		free(first);
		free(count);
		return -1;
	}
	for (size_t ri = 0; use_marks && ri < r->n_ranks; ri++) {
		const struct nccl_rank *rk = &r->ranks[ri];
		size_t lo = 0, hi = m->n_marks;
		struct step_raw key = { rk->file_index, rk->pid, 0 };
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (cmp_mark(&m->marks[mid], &key) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		first[ri] = lo;
		while (lo < m->n_marks && m->marks[lo].file_index == rk->file_index &&
		       m->marks[lo].pid == rk->pid)
			lo++;
		count[ri] = lo - first[ri];
		if (count[ri] < 2)
			use_marks = 0;
	}
	int rc = 0;
	if (use_marks) {
		r->step_source = NCCL_STEPS_MARKER;
		for (size_t ri = 0; ri < r->n_ranks && !rc; ri++)
			rc = steps_from_marks(&r->ranks[ri], &m->marks[first[ri]], count[ri]);
	} else {
		uint32_t k = detect_period(r, &r->period_match);
		r->step_source = k ? NCCL_STEPS_PERIOD : NCCL_STEPS_EACH;
		r->period = k ? k : 1;
		for (size_t ri = 0; ri < r->n_ranks && !rc; ri++)
			rc = steps_from_period(&r->ranks[ri], r->period);
	}
	free(first);
	free(count);
	return rc;
}
