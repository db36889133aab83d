/* The NCCL model's instances: every collective on a known communicator
 * joins the instance (communicator, seq) it belongs to in every process,
 * across ranks and nodes; an instance whose members disagree on function
 * or count is marked inconsistent.  Once the clocks are aligned the
 * instances are put in time order and their members laid out.  Not for
 * the clock alignment itself (nccl_align.c) nor for naming communicators
 * (nccl_ranks.c, nccl_infer_comm.c). */
#include "nccl_private.h"
#include "hmap.h"

#include <stdint.h>
#include <stdlib.h>

int nccl_match_instances(struct nccl_result *r, size_t *n_members)
{
	struct hmap by_key;   /* (comm, seq) -> instance + 1 */
	hmap_init(&by_key);
	size_t matched = 0;
	int rc = -1;
	for (size_t ri = 0; ri < r->n_ranks; ri++) {
		struct nccl_rank *rk = &r->ranks[ri];
		for (size_t c = 0; c < rk->n_calls; c++) {
			struct nccl_call *call = &rk->calls[c];
			if (call->comm_index == NCCL_NONE || !nccl_is_collective(call->func))
				continue;
			int created;
			uint64_t *slot = hmap_slot(&by_key, call->comm_index, call->seq, &created);
			if (!slot)
				goto out;
			if (created) {
				struct nccl_instance *in = realloc(r->instances,
								   (r->n_instances + 1) * sizeof(*in));
				if (!in)
					goto out;
				r->instances = in;
				in[r->n_instances] = (struct nccl_instance){
					.comm_index = call->comm_index, .func = call->func,
					.consistent = 1, .seq = call->seq, .count = call->count,
				};
				*slot = ++r->n_instances;
				r->comms[call->comm_index].instances++;
			}
			struct nccl_instance *in = &r->instances[*slot - 1];
			if (in->func != call->func || in->count != call->count)
				in->consistent = 0;
			in->n_members++;
			call->instance = (uint32_t)(*slot - 1);
			matched++;
		}
	}
	*n_members = matched;
	rc = 0;
out:
	hmap_free(&by_key);
	return rc;
}

static int cmp_instance_time(const void *a, const void *b)
{
	const struct nccl_instance *x = *(const struct nccl_instance *const *)a;
	const struct nccl_instance *y = *(const struct nccl_instance *const *)b;
	if (x->first_entry_common_ns != y->first_entry_common_ns)
		return x->first_entry_common_ns < y->first_entry_common_ns ? -1 : 1;
	if (x->comm_index != y->comm_index)
		return x->comm_index < y->comm_index ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Time order, then members grouped by instance in rank order. */
int nccl_order_instances(struct nccl_result *r, size_t n_members)
{
	int rc = -1;
	struct nccl_instance **order = malloc((r->n_instances ? r->n_instances : 1) * sizeof(*order));
	uint32_t *new_index = malloc((r->n_instances ? r->n_instances : 1) * sizeof(*new_index));
	struct nccl_instance *sorted = malloc((r->n_instances ? r->n_instances : 1) * sizeof(*sorted));
	r->members = malloc((n_members ? n_members : 1) * sizeof(*r->members));
	if (!order || !new_index || !sorted || !r->members) {
		free(sorted);
		goto out;
	}
	for (size_t i = 0; i < r->n_instances; i++)
		order[i] = &r->instances[i];
	qsort(order, r->n_instances, sizeof(*order), cmp_instance_time);
	size_t at = 0;
	for (size_t i = 0; i < r->n_instances; i++) {
		new_index[order[i] - r->instances] = (uint32_t)i;
		sorted[i] = *order[i];
		sorted[i].first_member = at;
		at += sorted[i].n_members;
		sorted[i].n_members = 0;
	}
	free(r->instances);
	r->instances = sorted;
	for (size_t ri = 0; ri < r->n_ranks; ri++) {
		struct nccl_rank *rk = &r->ranks[ri];
		for (size_t c = 0; c < rk->n_calls; c++) {
			struct nccl_call *call = &rk->calls[c];
			if (call->instance == NCCL_NONE)
				continue;
			call->instance = new_index[call->instance];
			struct nccl_instance *in = &r->instances[call->instance];
			r->members[in->first_member + in->n_members++] =
				(struct nccl_member){ (uint32_t)ri, (uint32_t)c };
		}
	}
	r->n_members = n_members;
	rc = 0;
out:
	free(order);
	free(new_index);
	return rc;
}
