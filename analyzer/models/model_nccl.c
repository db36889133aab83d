/* The NCCL model (see model_nccl.h): keeps every NCCL call and step marker
 * while the decoder streams (they are few: one per collective), then in
 * finish() builds ranks, communicators, matched instances, the clock
 * alignment and the steps.  Not for verdicts (model_stragglers.c) nor for
 * output. */
#include "model_nccl.h"
#include "align.h"
#include "hmap.h"
#include "trace_set.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct nccl_raw {
	struct fr_ev_nccl ev;
	uint32_t file_index;
};

struct step_raw {
	uint32_t file_index;
	uint32_t pid;
	uint64_t ts_ns;
};

struct model_nccl {
	int ignore_markers;
	struct nccl_raw *raw;
	size_t n_raw, cap_raw;
	struct step_raw *marks;
	size_t n_marks, cap_marks;
	struct nccl_result result;
};

int nccl_is_collective(uint16_t func)
{
	return func >= FR_NCCL_ALL_REDUCE && func <= FR_NCCL_REDUCE;
}

const char *nccl_func_name(uint16_t func)
{
	switch (func) {
	case FR_NCCL_ALL_REDUCE: return "ncclAllReduce";
	case FR_NCCL_REDUCE_SCATTER: return "ncclReduceScatter";
	case FR_NCCL_ALL_GATHER: return "ncclAllGather";
	case FR_NCCL_BROADCAST: return "ncclBroadcast";
	case FR_NCCL_REDUCE: return "ncclReduce";
	case FR_NCCL_SEND: return "ncclSend";
	case FR_NCCL_RECV: return "ncclRecv";
	case FR_NCCL_GROUP_START: return "ncclGroupStart";
	case FR_NCCL_GROUP_END: return "ncclGroupEnd";
	case FR_NCCL_COMM_INIT_RANK: return "ncclCommInitRank";
	case FR_NCCL_COMM_INIT_RANK_CONFIG: return "ncclCommInitRankConfig";
	case FR_NCCL_COMM_INIT_ALL: return "ncclCommInitAll";
	case FR_NCCL_COMM_SPLIT: return "ncclCommSplit";
	case FR_NCCL_COMM_DESTROY: return "ncclCommDestroy";
	}
	return "ncclUnknown";
}

int64_t nccl_member_ready_ns(const struct nccl_result *r, const struct nccl_member *m)
{
	/* Hook: the first RDMA post of this rank for the instance, when known. */
	return r->ranks[m->rank_index].calls[m->call_index].entry_common_ns;
}

/* ---- feed ----------------------------------------------------------------- */

static void *nccl_create(const struct model_opts *opts)
{
	(void)opts; /* a pid filter would break the matching across ranks */
	return calloc(1, sizeof(struct model_nccl));
}

void model_nccl_ignore_step_markers(void *state)
{
	((struct model_nccl *)state)->ignore_markers = 1;
}

static int grow(void **p, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return 0;
	size_t want = *cap ? *cap * 2 : 256;
	void *q = realloc(*p, want * elem);
	if (!q)
		return -1;
	*p = q;
	*cap = want;
	return 0;
}

static int nccl_feed(void *state, uint32_t file_index, const struct fr_rec_hdr *rec)
{
	struct model_nccl *m = state;
	struct fr_rec_hdr h;
	memcpy(&h, rec, sizeof(h));
	if (h.type == FR_EV_NCCL) {
		if (grow((void **)&m->raw, &m->cap_raw, m->n_raw, sizeof(*m->raw)))
			return -1;
		struct nccl_raw *r = &m->raw[m->n_raw++];
		memcpy(&r->ev, rec, sizeof(r->ev)); /* size checked by the decoder */
		r->file_index = file_index;
		m->result.events++;
	} else if (h.type == FR_EV_STEP) {
		struct fr_ev_step ev;
		memcpy(&ev, rec, sizeof(ev));
		if (grow((void **)&m->marks, &m->cap_marks, m->n_marks, sizeof(*m->marks)))
			return -1;
		m->marks[m->n_marks++] = (struct step_raw){ file_index, ev.c.pid, ev.c.ts_ns };
		m->result.step_events++;
	}
	return 0;
}

/* ---- finish: ranks, communicators, calls ------------------------------------- */

static int cmp_raw(const void *a, const void *b)
{
	const struct nccl_raw *x = a, *y = b;
	if (x->file_index != y->file_index)
		return x->file_index < y->file_index ? -1 : 1;
	if (x->ev.c.pid != y->ev.c.pid)
		return x->ev.c.pid < y->ev.c.pid ? -1 : 1;
	if (x->ev.c.ts_ns != y->ev.c.ts_ns)
		return x->ev.c.ts_ns < y->ev.c.ts_ns ? -1 : 1;
	return (x->ev.c.tid > y->ev.c.tid) - (x->ev.c.tid < y->ev.c.tid);
}

static int cmp_mark(const void *a, const void *b)
{
	const struct step_raw *x = a, *y = b;
	if (x->file_index != y->file_index)
		return x->file_index < y->file_index ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
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

/* The events of one process, raw[0..n), in time order, into rank rk. */
static int build_rank(struct build *b, const struct nccl_raw *raw, size_t n, struct nccl_rank *rk,
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
		const struct fr_ev_nccl *ev = &raw[i].ev;
		if (ev->result)
			b->r->failed_calls++;
		uint64_t ci = 0;
		switch (ev->func) {
		case FR_NCCL_COMM_INIT_RANK:
		case FR_NCCL_COMM_INIT_RANK_CONFIG: {
			if (ev->result || !ev->uid_hash)
				break;
			int64_t c = comm_for_uid(b, ev->uid_hash, ev->nranks);
			if (c < 0 || hmap_put(&comm_of, ev->comm, 0, (uint64_t)c + 1))
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
			if (c < 0 || hmap_put(&comm_of, ev->comm, 0, (uint64_t)c + 1))
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
				.count = ev->count, .comm_ptr = ev->comm, .result = ev->result,
				.comm_index = NCCL_NONE,
				.instance = NCCL_NONE, .stack_id = ev->stack_id, .tid = ev->c.tid,
				.step = -1, .func = ev->func, .datatype = (uint16_t)ev->datatype,
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
			call->seq = (*seq)++;
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

static int build_ranks(struct model_nccl *m, struct trace_set *ts)
{
	struct nccl_result *r = &m->result;
	struct build b = { .r = r };
	hmap_init(&b.comm_by_uid);
	if (m->n_raw)
		qsort(m->raw, m->n_raw, sizeof(*m->raw), cmp_raw);
	int rc = -1;
	for (size_t i = 0; i < m->n_raw;) {
		size_t j = i;
		while (j < m->n_raw && m->raw[j].file_index == m->raw[i].file_index &&
		       m->raw[j].ev.c.pid == m->raw[i].ev.c.pid)
			j++;
		struct nccl_rank *ranks = realloc(r->ranks, (r->n_ranks + 1) * sizeof(*ranks));
		if (!ranks)
			goto out;
		r->ranks = ranks;
		struct nccl_rank *rk = &ranks[r->n_ranks++];
		memset(rk, 0, sizeof(*rk));
		rk->file_index = m->raw[i].file_index;
		rk->pid = m->raw[i].ev.c.pid;
		int32_t init_rank;
		if (build_rank(&b, &m->raw[i], j - i, rk, &init_rank))
			goto out;
		const struct trace_file *f = trace_set_file(ts, rk->file_index);
		const struct ts_process *p = f ? trace_file_process(f, rk->pid) : NULL;
		rk->host = f ? f->hdr.host : "";
		rk->rank = p && p->rank >= 0 ? p->rank : init_rank;
		rk->rank_from_env = p && p->rank >= 0;
		rk->local_rank = p ? p->local_rank : -1;
		rk->world_size = p ? p->world_size : -1;
		i = j;
	}
	if (r->n_ranks)
		qsort(r->ranks, r->n_ranks, sizeof(*r->ranks), cmp_rank);
	rc = 0;
out:
	hmap_free(&b.comm_by_uid);
	return rc;
}

/* ---- finish: communicators whose init was not recorded ------------------------ */

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
static int infer_unknown_comm(struct nccl_result *r)
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

/* ---- finish: instances and alignment ------------------------------------------ */

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

/* A file's time on the common clock; saturates, since a hostile trace can
 * carry any timestamp and offset. */
static int64_t common_ns(uint64_t ns, int64_t off)
{
	int64_t v;
	if (__builtin_add_overflow((int64_t)(ns > INT64_MAX ? INT64_MAX : ns), off, &v))
		return off < 0 ? INT64_MIN : INT64_MAX;
	return v;
}

/* Matches calls into instances (call.instance), aligns the clocks on their
 * exits, puts every call on the common timeline, then sorts the instances by
 * time and lays out their members. */
static int build_instances(struct nccl_result *r, struct trace_set *ts, struct frec_error *err)
{
	struct hmap by_key;   /* (comm, seq) -> instance + 1 */
	hmap_init(&by_key);
	struct align_sync *sync = NULL;
	struct nccl_instance **order = NULL;
	uint32_t *new_index = NULL;
	size_t n_sync = 0, n_members = 0;
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
			n_members++;
		}
	}

	/* Exits of one instance are simultaneous on every node. */
	if (n_members && !(sync = malloc(n_members * sizeof(*sync))))
		goto out;
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
	if (align_refine(ts, sync, n_sync, err))
		goto fail_quiet;
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

	/* Time order, then members grouped by instance in rank order. */
	order = malloc((r->n_instances ? r->n_instances : 1) * sizeof(*order));
	new_index = malloc((r->n_instances ? r->n_instances : 1) * sizeof(*new_index));
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
	goto done;
out:
	frec_error_set(err, "flightrec-analyze", -1, ENOMEM, "out of memory matching NCCL collectives");
fail_quiet:
done:
	hmap_free(&by_key);
	free(sync);
	free(order);
	free(new_index);
	return rc;
}

/* ---- finish: steps ------------------------------------------------------------ */

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

static int build_steps(struct model_nccl *m)
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

static int nccl_finish(void *state, struct trace_set *ts, struct frec_error *err)
{
	struct model_nccl *m = state;
	if (build_ranks(m, ts) || infer_unknown_comm(&m->result))
		goto oom;
	if (build_instances(&m->result, ts, err))
		return -1;
	if (build_steps(m))
		goto oom;
	return 0;
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
		free(r->ranks[i].step_begin_ns);
		free(r->ranks[i].step_end_ns);
	}
	free(r->ranks);
	free(r->comms);
	free(r->instances);
	free(r->members);
	free(m->raw);
	free(m->marks);
	free(m);
}

const struct nccl_result *model_nccl_result(const void *state)
{
	return &((const struct model_nccl *)state)->result;
}

const struct model_ops model_nccl_ops = {
	.name = "nccl",
	.create = nccl_create,
	.feed = nccl_feed,
	.finish = nccl_finish,
	.destroy = nccl_destroy,
};
