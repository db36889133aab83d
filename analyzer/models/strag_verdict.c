/* The stragglers model's verdict (definitions in model_stragglers.h): over
 * the complete collective instances, each rank's ready time against the
 * instance's median; the class of instances that carries the lateness;
 * the rank latest most often, tested against the threshold; the change
 * point since which it is late, what it costs per step and how sure that
 * is; or, when no rank qualifies, why not, for humans.  Not for the
 * evidence of what the straggler does (strag_evidence.c). */
#include "strag_private.h"
#include "hmap.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* One complete instance as the verdict sees it. */
struct inst_view {
	size_t instance;        /* into nccl->instances */
	uint32_t latest;        /* rank index */
	int64_t lost_ns;        /* latest - second latest ready time */
	double spread_ms;       /* latest - median ready time */
	uint32_t cls;           /* (comm, function, count) class */
	int32_t cand_step;      /* the candidate's step (filled later) */
};

static void why(struct stragglers_result *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void why(struct stragglers_result *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->why_none, sizeof(r->why_none), fmt, ap);
	va_end(ap);
}

/* The class the verdict looks at: with several collectives per step only
 * the one after the compute carries the lateness (the others start
 * together), so, as HTA does, take the (communicator, function, count)
 * class whose instances have the largest median spread of ready times. */
static uint32_t pick_class(struct inst_view *iv, size_t n_iv, double *tmp)
{
	uint32_t n_cls = 0, best = 0;
	for (size_t i = 0; i < n_iv; i++)
		if (iv[i].cls + 1 > n_cls)
			n_cls = iv[i].cls + 1;
	double best_spread = -1;
	size_t best_n = 0;
	for (uint32_t c = 0; c < n_cls; c++) {
		size_t k = 0;
		for (size_t i = 0; i < n_iv; i++)
			if (iv[i].cls == c)
				tmp[k++] = iv[i].spread_ms;
		double sp = strag_median(tmp, k);
		/* classes of fewer than 3 instances only when nothing else */
		if ((k >= 3) > (best_n >= 3) || ((k >= 3) == (best_n >= 3) && sp > best_spread)) {
			best = c;
			best_spread = sp;
			best_n = k;
		}
	}
	return best;
}

int strag_verdict(struct stragglers_result *r)
{
	const struct nccl_result *nc = r->nccl;
	struct straggler_verdict *v = &r->verdict;
	size_t n_ranks = nc->n_ranks;
	int rc = -1;
	struct hmap cls_of;
	hmap_init(&cls_of);
	struct inst_view *iv = malloc((nc->n_instances ? nc->n_instances : 1) * sizeof(*iv));
	double *late = malloc((nc->n_members ? nc->n_members : 1) * sizeof(double));
	uint32_t *late_rank = malloc((nc->n_members ? nc->n_members : 1) * sizeof(uint32_t));
	double *tmp = malloc((nc->n_members + nc->n_instances + 1) * sizeof(double));
	int64_t *ready = malloc((n_ranks ? n_ranks : 1) * sizeof(int64_t));
	uint32_t *n_seen = NULL;
	size_t *rank_at = NULL;   /* where each rank's lateness values end in tmp */
	uint32_t *n_latest = NULL;
	if (!iv || !late || !late_rank || !tmp || !ready)
		goto out;
	size_t n_iv = 0;
	for (size_t i = 0; i < nc->n_instances; i++) {
		const struct nccl_instance *in = &nc->instances[i];
		if (!nccl_instance_complete(nc, in))
			continue;
		const struct nccl_member *mem = &nc->members[in->first_member];
		uint32_t latest = 0, second = UINT32_MAX;
		for (uint32_t k = 0; k < in->n_members; k++) {
			ready[k] = nccl_member_ready_ns(nc, &mem[k]);
			tmp[k] = (double)ready[k];
		}
		for (uint32_t k = 1; k < in->n_members; k++) {
			if (ready[k] > ready[latest]) {
				second = latest;
				latest = k;
			} else if (second == UINT32_MAX || ready[k] > ready[second]) {
				second = k;
			}
		}
		if (second == UINT32_MAX)
			second = latest == 0 ? 1 : 0;
		double med = strag_median(tmp, in->n_members);
		int created;
		uint64_t key = (uint64_t)in->comm_index << 16 | in->func;
		uint64_t *slot = hmap_slot(&cls_of, key, in->count, &created);
		if (!slot)
			goto out;
		if (created)
			*slot = cls_of.count - 1;
		iv[n_iv++] = (struct inst_view){ i, mem[latest].rank_index,
						 ready[latest] - ready[second],
						 ((double)ready[latest] - med) / 1e6, (uint32_t)*slot, -1 };
	}
	uint32_t cls = pick_class(iv, n_iv, tmp);
	size_t n_cls = 0, n_late = 0;
	for (size_t i = 0; i < n_iv; i++) {
		if (iv[i].cls != cls)
			continue;
		n_cls++;
		const struct nccl_instance *in = &nc->instances[iv[i].instance];
		const struct nccl_member *mem = &nc->members[in->first_member];
		for (uint32_t k = 0; k < in->n_members; k++)
			tmp[k] = (double)nccl_member_ready_ns(nc, &mem[k]);
		double med = strag_median(tmp, in->n_members);
		for (uint32_t k = 0; k < in->n_members; k++) {
			late[n_late] = ((double)nccl_member_ready_ns(nc, &mem[k]) - med) / 1e6;
			late_rank[n_late++] = mem[k].rank_index;
		}
		r->rows[iv[i].latest].latest++;
	}
	r->complete_collectives = n_iv;
	r->verdict_collectives = n_cls;
	/* each rank's lateness values, grouped by rank in one pass (in the
	 * order they came: a rank's median reads the same array as ever) */
	if (!(rank_at = calloc(n_ranks + 1, sizeof(*rank_at))))
		goto out;
	for (size_t j = 0; j < n_late; j++)
		if (late_rank[j] < n_ranks)
			rank_at[late_rank[j] + 1]++;
	for (size_t ri = 0; ri < n_ranks; ri++)
		rank_at[ri + 1] += rank_at[ri];
	for (size_t j = 0; j < n_late; j++)
		if (late_rank[j] < n_ranks)
			tmp[rank_at[late_rank[j]]++] = late[j];
	for (size_t ri = 0, from = 0; ri < n_ranks; ri++) {
		r->rows[ri].median_lateness_ms = strag_median(tmp + from, rank_at[ri] - from);
		from = rank_at[ri];
	}
	if (n_ranks < 2) {
		why(r, "fewer than two ranks made NCCL calls");
		rc = 0;
		goto out;
	}
	if (n_cls < 3) {
		why(r, "%zu complete collective%s matched across ranks (need 3)", n_cls,
		    n_cls == 1 ? "" : "s");
		rc = 0;
		goto out;
	}
	uint32_t cand = 0;
	for (uint32_t ri = 1; ri < n_ranks; ri++)
		if (r->rows[ri].latest > r->rows[cand].latest)
			cand = ri;
	r->candidate = (int32_t)cand;
	size_t k = 0;
	for (size_t j = 0; j < n_late; j++)
		if (late_rank[j] != cand)
			tmp[k++] = late[j];
	r->noise_mad_ms = strag_mad(tmp, k);
	double threshold = 3 * r->noise_mad_ms;
	if (r->median_step_ms > 0 && 0.02 * r->median_step_ms > threshold)
		threshold = 0.02 * r->median_step_ms;
	const struct straggler_row *crow = &r->rows[cand];
	v->threshold_ms = threshold;
	v->median_lateness_ms = crow->median_lateness_ms;
	int32_t crank = nc->ranks[cand].rank;
	if (2 * crow->latest < n_cls) {
		why(r, "no rank is the latest in half of the collectives (most often: rank %d, "
		    "%llu of %zu)", crank, (unsigned long long)crow->latest, n_cls);
		rc = 0;
		goto out;
	}
	if (crow->median_lateness_ms <= threshold) {
		why(r, "rank %d is the latest in %llu of %zu collectives, but only %.3f ms after the "
		    "median rank (threshold %.3f ms: max of 2%% of the step, 3 MAD)", crank,
		    (unsigned long long)crow->latest, n_cls, crow->median_lateness_ms, threshold);
		rc = 0;
		goto out;
	}

	/* Since which step: per candidate step, is it the latest in at least
	 * half of that step's collectives (of the class)? */
	const struct nccl_rank *crk = &nc->ranks[cand];
	size_t n_steps = crk->n_steps;
	n_seen = calloc(n_steps + 1, sizeof(*n_seen));
	n_latest = calloc(n_steps + 1, sizeof(*n_latest));
	if (!n_seen || !n_latest)
		goto out;
	for (size_t i = 0; i < n_iv; i++) {
		struct inst_view *x = &iv[i];
		const struct nccl_instance *in = &nc->instances[x->instance];
		const struct nccl_member *mem = &nc->members[in->first_member];
		for (uint32_t q = 0; q < in->n_members; q++)
			if (mem[q].rank_index == cand)
				x->cand_step = crk->calls[mem[q].call_index].step;
		if (x->cls == cls && x->cand_step >= 0 && (size_t)x->cand_step < n_steps) {
			n_seen[x->cand_step]++;
			n_latest[x->cand_step] += x->latest == cand;
		}
	}
	/* the change point: the step s maximizing, over steps t >= s, the
	 * steps it was latest in minus the steps it was not */
	v->since_step = 0;
	long best = LONG_MIN, run = 0;
	for (size_t s = n_steps; s-- > 0;) {
		if (n_seen[s])
			run += 2 * n_latest[s] >= n_seen[s] ? 1 : -1;
		if (n_seen[s] && 2 * n_latest[s] >= n_seen[s] && run >= best) {
			best = run;
			v->since_step = (int32_t)s;
		}
	}
	double lost_ms = 0;
	r->charged_lost_ns = calloc(nc->n_instances ? nc->n_instances : 1, sizeof(int64_t));
	if (!r->charged_lost_ns)
		goto out;
	for (size_t i = 0; i < n_iv; i++) {
		if (n_steps && iv[i].cand_step < v->since_step)
			continue;
		if (iv[i].cls == cls) {
			v->collectives++;
			v->latest += iv[i].latest == cand;
		}
		if (iv[i].latest == cand) { /* every class: what the others wait */
			lost_ms += (double)iv[i].lost_ns / 1e6;
			r->charged_lost_ns[iv[i].instance] = iv[i].lost_ns > 0 ? iv[i].lost_ns : 0;
		}
	}
	size_t steps_since = n_steps > (size_t)v->since_step ? n_steps - (size_t)v->since_step : 0;
	v->found = 1;
	v->rank_index = cand;
	v->cost_ms_per_step = lost_ms / (double)(steps_since ? steps_since
						       : (v->collectives ? v->collectives : 1));
	double share = v->collectives ? (double)v->latest / (double)v->collectives : 0;
	double margin = 1 - threshold / crow->median_lateness_ms;
	v->confidence = share * (margin < 0 ? 0 : margin);
	rc = 0;
out:
	hmap_free(&cls_of);
	free(iv);
	free(late);
	free(late_rank);
	free(tmp);
	free(ready);
	free(n_seen);
	free(n_latest);
	free(rank_at);
	return rc;
}
