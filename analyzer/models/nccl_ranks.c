/* The NCCL model's ranks and communicators: the kept events, sorted per
 * (file, pid) by time, become one rank each with its calls; the init and
 * split calls name the communicators across processes (by uid_hash, or a
 * hash derived from the parent for splits), and every collective gets its
 * sequence number on its communicator.  The global rank comes from the
 * launcher environment, else the rank in the largest communicator.  Not
 * for communicators whose init was not recorded (nccl_infer_comm.c) nor
 * for matching calls across ranks (nccl_instances.c). */
#include "nccl_private.h"
#include "hmap.h"
#include "trace_set.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* One process's calls in time order (a stable sort: calls at the same
 * instant keep the order they were recorded in). */
static int cmp_raw(const void *a, const void *b)
{
	const struct fr_ev_nccl *x = a, *y = b;
	if (x->c.ts_ns != y->c.ts_ns)
		return x->c.ts_ns < y->c.ts_ns ? -1 : 1;
	return (x->c.tid > y->c.tid) - (x->c.tid < y->c.tid);
}

static uint64_t fnv_u64(uint64_t h, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		h = (h ^ ((v >> (8 * i)) & 0xff)) * 0x100000001b3ull;
	return h;
}

struct build {
	struct nccl_result *r;
	struct hmap comm_by_uid;  /* uid_hash -> comm index + 1 */
};

static int64_t comm_for_uid(struct build *b, uint64_t uid, int32_t nranks)
{
	int created;
	uint64_t *slot = hmap_slot(&b->comm_by_uid, uid, 0, &created);
	if (!slot)
		return -1;
	if (created) {
		struct nccl_comm *c = realloc(b->r->comms, (b->r->n_comms + 1) * sizeof(*c));
		if (!c)
			return -1;
		b->r->comms = c;
		c[b->r->n_comms] = (struct nccl_comm){ uid, nranks, 0 };
		*slot = ++b->r->n_comms;
	}
	struct nccl_comm *c = &b->r->comms[*slot - 1];
	if (nranks > c->nranks)
		c->nranks = nranks;
	return (int64_t)(*slot - 1);
}

/* Notes that rk created communicator c, named ptr in the process. */
static int note_joined(struct nccl_rank *rk, uint64_t ptr, int64_t c, int32_t comm_rank)
{
	struct nccl_rank_comm *j = realloc(rk->joined, (rk->n_joined + 1) * sizeof(*j));
	if (!j)
		return -1;
	rk->joined = j;
	j[rk->n_joined++] = (struct nccl_rank_comm){ ptr, (uint32_t)c, comm_rank };
	return 0;
}

/* The events of one process, raw[0..n), in time order, into rank rk. */
static int build_rank(struct build *b, const struct fr_ev_nccl *raw, size_t n, struct nccl_rank *rk,
		      int32_t *init_rank)
{
	struct hmap comm_of, seq_of, splits_of;
	hmap_init(&comm_of);  /* comm pointer -> comm index + 1 (0: destroyed) */
	hmap_init(&seq_of);   /* comm index -> collectives so far */
	hmap_init(&splits_of);/* parent comm index -> splits so far */
	int32_t best_nranks = -1;
	*init_rank = -1;
	int rc = -1;
	rk->calls = calloc(n ? n : 1, sizeof(*rk->calls));
	if (!rk->calls)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const struct fr_ev_nccl *ev = &raw[i];
		if (ev->result)
			b->r->failed_calls++;
		uint64_t ci = 0;
		switch (ev->func) {
		case FR_NCCL_COMM_INIT_RANK:
		case FR_NCCL_COMM_INIT_RANK_CONFIG: {
			if (ev->result || !ev->uid_hash)
				break;
			int64_t c = comm_for_uid(b, ev->uid_hash, ev->nranks);
			if (c < 0 || hmap_put(&comm_of, ev->comm, 0, (uint64_t)c + 1) ||
			    note_joined(rk, ev->comm, c, ev->rank))
				goto out;
			if (ev->nranks > best_nranks && ev->rank >= 0) {
				best_nranks = ev->nranks;
				*init_rank = ev->rank;
			}
			break;
		}
		case FR_NCCL_COMM_SPLIT: {
			/* Every rank of the parent splits it in the same order, so
			 * (parent, color, n-th split) names the child everywhere. */
			if (ev->result || !hmap_get(&comm_of, ev->count, 0, &ci) || !ci)
				break;
			uint64_t *nth = hmap_slot(&splits_of, ci - 1, 0, NULL);
			if (!nth)
				goto out;
			uint64_t uid = fnv_u64(fnv_u64(fnv_u64(0xcbf29ce484222325ull,
							       b->r->comms[ci - 1].uid_hash),
						       (uint64_t)(int64_t)ev->peer), (*nth)++);
			int64_t c = comm_for_uid(b, uid, -1);
			if (c < 0 || hmap_put(&comm_of, ev->comm, 0, (uint64_t)c + 1) ||
			    note_joined(rk, ev->comm, c, -1))
				goto out;
			break;
		}
		case FR_NCCL_COMM_DESTROY:
			if (hmap_put(&comm_of, ev->comm, 0, 0))
				goto out;
			break;
		default:
			if (!nccl_is_collective(ev->func) && ev->func != FR_NCCL_SEND &&
			    ev->func != FR_NCCL_RECV)
				break;
			struct nccl_call *call = &rk->calls[rk->n_calls++];
			*call = (struct nccl_call){
				.entry_ns = ev->c.ts_ns, .exit_ns = ev->c.ts_ns + ev->duration_ns,
				.count = ev->count, .comm_ptr = ev->comm, .result = ev->result == (int32_t)ev->result ? (int32_t)ev->result : INT32_MIN,
				.comm_index = NCCL_NONE,
				.instance = NCCL_NONE, .stack_id = ev->stack_id, .tid = ev->c.tid,
				.step = -1, .func = ev->func, .datatype = (uint16_t)ev->datatype,
				.stream = ev->stream, .bpf_seq = ev->seq,
			};
			if (hmap_get(&comm_of, ev->comm, 0, &ci) && ci)
				call->comm_index = (uint32_t)(ci - 1);
			if (!nccl_is_collective(ev->func))
				break;
			if (call->comm_index == NCCL_NONE) {
				b->r->unknown_comm_calls++;
				break;
			}
			uint64_t *seq = hmap_slot(&seq_of, call->comm_index, 0, NULL);
			if (!seq)
				goto out;
			/* the recorder's number, counted from this communicator's
			 * init like ours but blind to lost events */
			call->seq = ev->seq ? (uint64_t)ev->seq - 1 : *seq;
			*seq = call->seq + 1;
		}
	}
	rc = 0;
out:
	hmap_free(&comm_of);
	hmap_free(&seq_of);
	hmap_free(&splits_of);
	return rc;
}

static int cmp_rank(const void *a, const void *b)
{
	const struct nccl_rank *x = a, *y = b;
	uint32_t rx = (uint32_t)x->rank, ry = (uint32_t)y->rank; /* -1 sorts last */
	if (rx != ry)
		return rx < ry ? -1 : 1;
	if (x->file_index != y->file_index)
		return x->file_index < y->file_index ? -1 : 1;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

int nccl_build_ranks(struct model_nccl *m, struct trace_set *ts)
{
	struct nccl_result *r = &m->result;
	struct build b = { .r = r };
	hmap_init(&b.comm_by_uid);
	proc_lists_sort(&m->raw);
	int rc = -1;
	for (size_t i = 0; i < m->raw.n; i++) {
		struct proc_list *l = &m->raw.lists[i];
		if (l->n)
			qsort(l->items, l->n, sizeof(struct fr_ev_nccl), cmp_raw);
		struct nccl_rank *ranks = realloc(r->ranks, (r->n_ranks + 1) * sizeof(*ranks));
		if (!ranks)
			goto out;
		r->ranks = ranks;
		struct nccl_rank *rk = &ranks[r->n_ranks++];
		memset(rk, 0, sizeof(*rk));
		rk->file_index = l->file_index;
		rk->pid = l->pid;
		int32_t init_rank;
		if (build_rank(&b, l->items, l->n, rk, &init_rank))
			goto out;
		proc_list_release(l); /* the rank's calls hold it now */
		const struct trace_file *f = trace_set_file(ts, rk->file_index);
		const struct ts_process *p = f ? trace_file_process(f, rk->pid) : NULL;
		rk->host = f ? f->hdr.host : "";
		rk->rank = p && p->rank >= 0 ? p->rank : init_rank;
		rk->rank_from_env = p && p->rank >= 0;
		rk->local_rank = p ? p->local_rank : -1;
		rk->world_size = p ? p->world_size : -1;
	}
	if (r->n_ranks)
		qsort(r->ranks, r->n_ranks, sizeof(*r->ranks), cmp_rank);
	rc = 0;
out:
	hmap_free(&b.comm_by_uid);
	return rc;
}
