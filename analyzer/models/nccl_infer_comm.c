/* The NCCL model's communicators whose init was not recorded (attach
 * latency, --pid): see nccl_result.inferred_ranks.  Ranks whose collectives
 * all go to one unknown communicator join the one known communicator that
 * lacks members, or form a new one; each rank's calls are lined up against
 * a reference rank's at the lag that keeps the exit differences most
 * constant.  Not for communicators the init calls name (nccl_ranks.c). */
#include "nccl_private.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>


#define INFER_MAX_LAG 16

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* MAD of v[0..n) (sorts and overwrites v). */
static int64_t mad_i64(int64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_i64);
	int64_t med = v[n / 2];
	for (size_t i = 0; i < n; i++)
		v[i] = v[i] > med ? v[i] - med : med - v[i];
	qsort(v, n, sizeof(*v), cmp_i64);
	return v[n / 2];
}

/* The collectives of rank rk on communicator comm (NCCL_NONE: unknown). */
static size_t comm_calls(const struct nccl_rank *rk, uint32_t comm, size_t *out)
{
	size_t n = 0;
	for (size_t c = 0; c < rk->n_calls; c++)
		if (rk->calls[c].comm_index == comm && nccl_is_collective(rk->calls[c].func))
			out[n++] = c;
	return n;
}

/* The lag of own calls against the reference's (own k matches ref k - lag),
 * or INT_MIN when no lag fits: lag 0 (every recording saw the same first
 * call) unless a longer lag is clearly better: a wrong lag adds a step's
 * jitter to the exit differences, a right one leaves the release latency. */
static int best_lag(const struct nccl_rank *rr, const size_t *ref_idx, size_t n_ref,
		    const struct nccl_rank *rk, const size_t *idx, size_t n_own, int64_t *diffs)
{
	int best = INT_MIN;
	int64_t best_mad = 0;
	for (int step = 0; step <= 2 * INFER_MAX_LAG; step++) {
		int lag = step % 2 ? (step + 1) / 2 : -(step / 2);
		size_t pairs = 0, same = 0;
		for (size_t k = 0; k < n_own; k++) {
			long j = (long)k - lag;
			if (j < 0 || (size_t)j >= n_ref)
				continue;
			const struct nccl_call *a = &rr->calls[ref_idx[j]], *b = &rk->calls[idx[k]];
			same += a->func == b->func && a->count == b->count;
			diffs[pairs++] = (int64_t)b->exit_ns - (int64_t)a->exit_ns;
		}
		size_t shorter = n_own < n_ref ? n_own : n_ref;
		if (pairs < 3 || 2 * pairs < shorter || (double)same < 0.9 * (double)pairs)
			continue;
		int64_t d = mad_i64(diffs, pairs);
		if (best == INT_MIN || d < best_mad / 2 - 1000) {
			best_mad = d;
			best = lag;
		}
	}
	return best;
}

/* See nccl_result.inferred_ranks.  A rank whose collectives all go to one
 * communicator with no recorded init joins the one known communicator that
 * lacks members, if there is exactly one; else such ranks form a new one. */
int nccl_infer_unknown_comm(struct nccl_result *r)
{
	size_t n = r->n_ranks, longest = 0, eligible = 0;
	int rc = -1;
	int *ok = calloc(n ? n : 1, sizeof(*ok));
	uint32_t *members = calloc(r->n_comms + 1, sizeof(*members));
	size_t *last_seen = calloc(r->n_comms + 1, sizeof(*last_seen)); /* rank index + 1 */
	size_t *ref_idx = NULL, *idx = NULL;
	int64_t *diffs = NULL;
	if (!ok || !members || !last_seen)
		goto out;
	for (size_t ri = 0; ri < n; ri++) {
		const struct nccl_rank *rk = &r->ranks[ri];
		uint64_t ptr = 0;
		size_t calls = 0;
		ok[ri] = 1;
		if (rk->n_calls > longest)
			longest = rk->n_calls;
		for (size_t c = 0; c < rk->n_calls; c++) {
			const struct nccl_call *call = &rk->calls[c];
			if (!nccl_is_collective(call->func))
				continue;
			if (call->comm_index != NCCL_NONE) {
				if (last_seen[call->comm_index] != ri + 1) {
					last_seen[call->comm_index] = ri + 1;
					members[call->comm_index]++;
				}
				continue;
			}
			if (calls++ && call->comm_ptr != ptr)
				ok[ri] = 0; /* two unknown communicators: no way to tell them apart */
			ptr = call->comm_ptr;
		}
		ok[ri] = ok[ri] && calls >= 3;
		eligible += (size_t)ok[ri];
	}
	uint32_t target = NCCL_NONE, open = 0;
	for (uint32_t ci = 0; ci < r->n_comms; ci++)
		if (r->comms[ci].nranks > 0 && members[ci] < (uint32_t)r->comms[ci].nranks) {
			open++;
			target = ci;
		}
	if (open != 1)
		target = NCCL_NONE;
	if (!eligible || (target == NCCL_NONE && eligible < 2)) {
		rc = 0;
		goto out;
	}
	ref_idx = malloc(longest * sizeof(*ref_idx));
	idx = malloc(longest * sizeof(*idx));
	diffs = malloc(longest * sizeof(*diffs));
	if (!ref_idx || !idx || !diffs)
		goto out;
	/* the reference: the rank with the most calls on the target (or on an
	 * unknown communicator) */
	size_t ref = SIZE_MAX, n_ref = 0;
	for (size_t ri = 0; ri < n; ri++) {
		if (target == NCCL_NONE && !ok[ri])
			continue;
		size_t k = comm_calls(&r->ranks[ri], target, idx);
		if (k > n_ref) {
			n_ref = k;
			ref = ri;
		}
	}
	if (ref == SIZE_MAX) {
		rc = 0;
		goto out;
	}
	struct nccl_rank *rr = &r->ranks[ref];
	n_ref = comm_calls(rr, target, ref_idx);
	long base = target == NCCL_NONE ? INFER_MAX_LAG : (long)rr->calls[ref_idx[0]].seq;
	uint32_t comm_index = target;
	if (target == NCCL_NONE) {
		struct nccl_comm *comms = realloc(r->comms, (r->n_comms + 1) * sizeof(*comms));
		if (!comms)
			goto out;
		r->comms = comms;
		comm_index = (uint32_t)r->n_comms;
		comms[r->n_comms++] = (struct nccl_comm){ 0, -1, 0 };
	}
	uint32_t matched = 0, room = target == NCCL_NONE ? UINT32_MAX
				      : (uint32_t)r->comms[target].nranks - members[target];
	for (size_t ri = 0; ri < n && matched < room; ri++) {
		if (!ok[ri] || ri == ref)
			continue;
		struct nccl_rank *rk = &r->ranks[ri];
		size_t n_own = comm_calls(rk, NCCL_NONE, idx);
		int lag = best_lag(rr, ref_idx, n_ref, rk, idx, n_own, diffs);
		if (lag == INT_MIN)
			continue;
		for (size_t k = 0; k < n_own; k++) {
			long seq = (long)k - lag + base;
			if (seq < 0)
				continue;
			rk->calls[idx[k]].comm_index = comm_index;
			rk->calls[idx[k]].seq = (uint64_t)seq;
			r->unknown_comm_calls--;
		}
		matched++;
	}
	r->inferred_ranks = matched;
	if (target == NCCL_NONE) {
		if (matched) {
			for (size_t j = 0; j < n_ref; j++) {
				rr->calls[ref_idx[j]].comm_index = comm_index;
				rr->calls[ref_idx[j]].seq = j + INFER_MAX_LAG;
			}
			r->unknown_comm_calls -= n_ref;
			r->inferred_ranks = matched + 1;
			r->comms[comm_index].nranks = (int32_t)(matched + 1);
		} else {
			r->n_comms--; /* nobody joined */
		}
	}
	rc = 0;
out:
	free(ok);
	free(members);
	free(last_seen);
	free(ref_idx);
	free(idx);
	free(diffs);
	return rc;
}
