/* The NCCL model's hang: a collective (communicator, seq) that some ranks
 * entered and never left, and the ranks of that communicator that never
 * entered it.  The rule, over every file of the set (one per node):
 *
 *   waiting   a rank is waiting in (c, seq) when
 *               - its recorder found it inside that collective when it last
 *                 looked (FR_REC_INFLIGHT; or inside the ncclGroupEnd of a
 *                 group whose first call it is), and the trace has no
 *                 return of that call; or, since a real NCCL returns once
 *                 the collective is enqueued,
 *               - it returned from enqueuing (c, seq), its last collective,
 *                 and is inside a synchronize that waits for it when its
 *                 recorder last looked (the stream's, the device's, or an
 *                 event's recorded on that stream after it), or
 *               - it recorded an event on that stream after it and queried
 *                 it "not ready" (600) with no query or synchronize seeing
 *                 it complete before the end of the trace, and still in the
 *                 second half of its wait (a watchdog; an event given up
 *                 long before the end waits for nothing)
 *   missing   the ranks of the communicator with no call (c, seq) at all:
 *             ranks whose traces show they joined it, and, when the
 *             communicator's ranks are the global ranks, every rank no trace
 *             shows (the culprit's node may hold nothing in flight, or not
 *             be in the set at all)
 *   waiting_s from a waiting rank's entry into the collective to when its
 *             recorder last looked (the INFLIGHT record's time, else the
 *             end of its trace), the longest of them
 *   hang      the (c, seq) with the most waiting ranks (then the oldest),
 *             when its waiting_s exceeds a threshold: a job recorded at a
 *             random moment is inside some collective most of the time.
 *             The threshold is twice the longest gap between the first
 *             entries of consecutive collectives of that communicator
 *             before it (the wait a slow but live step can explain), at
 *             least HANG_MIN_S; HANG_FEW_S when it had fewer than two.
 *
 * A rank whose call (c, seq) returned and that is not waiting after it is
 * neither waiting nor missing (with an asynchronous NCCL a return says
 * nothing of completion).  Send/recv and communicator inits in flight are
 * not named (their peers are not a communicator's ranks).
 *
 * Not for the recorder's view of a hang while the job runs (its trigger:
 * recorder/drain/inflight.h, recorder/ring/hang_watch.h) nor for output. */
#include "nccl_private.h"
#include "align.h"
#include "fr_family.h"
#include "grow.h"
#include "trace_set.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HANG_MIN_S 0.1
#define HANG_FEW_S 1.0
#define NOT_READY 600 /* cudaErrorNotReady, CUDA_ERROR_NOT_READY */

/* ---- CUDA events, as the feed streams them ---------------------------------- */

int nccl_note_cuda(struct model_nccl *m, uint32_t file_index, const struct fr_ev_cuda *ev)
{
	int record = 0, query = 0;
	if (fr_func_class_of(FR_PROBE_CUDA, ev->func) == FR_FN_SYNC) {
		/* a synchronize the recorder found in flight may have returned
		 * before its probes went: a later one of its thread says so */
		uint64_t *latest = hmap_slot(&m->sync_seen, (uint64_t)file_index << 32 | ev->c.tid,
					     0, NULL);
		if (!latest)
			return -1;
		if (ev->c.ts_ns > *latest)
			*latest = ev->c.ts_ns;
	}
	switch (ev->func) {
	case FR_CUDA_EVENT_RECORD: case FR_CU_EVENT_RECORD:
		if (ev->result != 0)
			return 0;
		record = 1;
		break;
	case FR_CUDA_EVENT_QUERY: case FR_CU_EVENT_QUERY:
		query = 1;
		break;
	case FR_CUDA_EVENT_SYNC: case FR_CU_EVENT_SYNC:
		if (ev->result != 0)
			return 0;
		break;
	default:
		return 0;
	}
	uint64_t key = (uint64_t)file_index << 32 | ev->c.pid, at = 0;
	struct cuda_event_state *e = NULL;
	if (hmap_get(&m->event_of, key, ev->ptr, &at) && at)
		e = &m->events[at - 1];
	else if (record || (query && ev->result == NOT_READY)) {
		if (grow_array((void **)&m->events, &m->cap_events, m->n_events + 1,
			       sizeof(*m->events), 64) ||
		    hmap_put(&m->event_of, key, ev->ptr, m->n_events + 1))
			return -1;
		e = &m->events[m->n_events++];
		*e = (struct cuda_event_state){ .file_index = file_index, .pid = ev->c.pid,
						.event = ev->ptr };
	}
	if (!e)
		return 0;
	/* one thread's events come in program order (one ring buffer, filled
	 * at return); the events of one rank are its threads' */
	if (record) {
		e->recorded_ns = ev->c.ts_ns;
		e->stream = ev->stream;
		e->not_ready_ns = 0;
		e->complete = 0;
	} else if (query && ev->result == NOT_READY) {
		if (!e->not_ready_ns)
			e->not_ready_ns = ev->c.ts_ns;
		e->last_not_ready_ns = ev->c.ts_ns;
	} else {
		e->complete = 1; /* a query said done, or a synchronize returned */
	}
	return 0;
}

/* ---- who waits where ------------------------------------------------------------ */

struct pending {
	uint32_t rank_index;
	uint32_t comm_index;
	uint64_t seq;
	uint16_t func;
	uint64_t count;
	enum nccl_hang_how how;
	int64_t entry_common_ns;
	double waiting_s;
};

static int64_t common_ns(uint64_t ns, int64_t off)
{
	int64_t v;
	if (__builtin_add_overflow((int64_t)(ns > INT64_MAX ? INT64_MAX : ns), off, &v))
		return off < 0 ? INT64_MIN : INT64_MAX;
	return v;
}

/* When the recorder of f last looked: its INFLIGHT record, else the end. */
static uint64_t last_look_ns(const struct trace_file *f)
{
	int exact;
	if (f->inflight_seen_ns)
		return f->inflight_seen_ns;
	return f->hdr.start_mono_ns + trace_file_duration_ns(f, &exact);
}

static const struct nccl_call *returned_call(const struct nccl_rank *rk, uint32_t tid,
					     uint64_t entry_ns)
{
	for (size_t c = rk->n_calls; c-- > 0;)
		if (rk->calls[c].tid == tid && rk->calls[c].entry_ns == entry_ns)
			return &rk->calls[c];
	return NULL;
}

/* The (communicator, seq) an in-flight collective of rk is, from its comm
 * pointer and the recorder's number; 0 when it cannot be placed. */
static int place_in_flight(const struct nccl_rank *rk, const struct fr_inflight_call *e,
			   uint32_t *comm_index, uint64_t *seq)
{
	if (e->func == FR_NCCL_GROUP_END) {
		/* the group's first call returned when it was queued: it is the
		 * one the group is stuck on */
		for (size_t c = rk->n_calls; c-- > 0;) {
			const struct nccl_call *call = &rk->calls[c];
			if (call->comm_ptr == e->comm && call->bpf_seq == e->seq && e->seq &&
			    call->comm_index != NCCL_NONE && nccl_is_collective(call->func)) {
				*comm_index = call->comm_index;
				*seq = call->seq;
				return 1;
			}
		}
		return 0;
	}
	/* numbered from its init (nccl_ranks.c): the recorder's number less one */
	for (size_t j = rk->n_joined; j-- > 0;)
		if (rk->joined[j].ptr == e->comm && e->seq) {
			*comm_index = rk->joined[j].comm_index;
			*seq = (uint64_t)e->seq - 1;
			return 1;
		}
	/* else the next after its latest recorded call on that communicator */
	for (size_t c = rk->n_calls; c-- > 0;) {
		const struct nccl_call *call = &rk->calls[c];
		if (call->comm_ptr != e->comm || call->comm_index == NCCL_NONE ||
		    !nccl_is_collective(call->func) || call->entry_ns > e->entry_ns)
			continue;
		*comm_index = call->comm_index;
		*seq = call->seq + (e->seq && call->bpf_seq && e->seq > call->bpf_seq ?
				    e->seq - call->bpf_seq : 1);
		return 1;
	}
	return 0;
}

/* Whether rank rk, having enqueued call L, waits for it without a call of
 * NCCL's: in a synchronize (in flight) or polling an event (see the rule). */
static int waits_after(const struct model_nccl *m, const struct nccl_rank *rk,
		       const struct trace_file *f, const struct nccl_call *L,
		       enum nccl_hang_how *how)
{
	uint64_t look = last_look_ns(f);
	uint64_t midway = L->entry_ns + (look > L->entry_ns ? (look - L->entry_ns) / 2 : 0);
	/* a synchronize in flight since L that waits for L's stream: the
	 * device's, the stream's, or an event's recorded there after L */
	for (size_t i = 0; i < f->n_inflight; i++) {
		const struct fr_inflight_call *e = &f->inflight[i];
		if (e->probe != FR_PROBE_CUDA || e->pid != rk->pid || e->entry_ns < L->entry_ns)
			continue;
		int waits = 0;
		switch (e->func) {
		case FR_CUDA_DEVICE_SYNC:
			waits = 1;
			break;
		case FR_CUDA_STREAM_SYNC:
			waits = e->handle == L->stream;
			break;
		case FR_CUDA_EVENT_SYNC: case FR_CU_EVENT_SYNC: {
			uint64_t at;
			if (hmap_get(&m->event_of, (uint64_t)rk->file_index << 32 | rk->pid, e->handle,
				     &at) && at) {
				const struct cuda_event_state *ev = &m->events[at - 1];
				waits = ev->stream == L->stream && ev->recorded_ns >= L->entry_ns;
			}
			break;
		}
		default:
			break;
		}
		uint64_t latest = 0;
		if (waits && hmap_get(&m->sync_seen, (uint64_t)rk->file_index << 32 | e->tid, 0,
				      &latest) && latest >= e->entry_ns)
			waits = 0; /* returned while the recorder looked */
		if (waits) {
			*how = NCCL_HANG_SYNC;
			return 1;
		}
	}
	/* an event recorded on L's stream after L, polled not ready to the end */
	for (size_t i = 0; i < m->n_events; i++) {
		const struct cuda_event_state *ev = &m->events[i];
		if (ev->file_index == rk->file_index && ev->pid == rk->pid &&
		    ev->stream == L->stream && ev->recorded_ns >= L->entry_ns && ev->not_ready_ns &&
		    !ev->complete && ev->last_not_ready_ns >= midway) {
			*how = NCCL_HANG_POLL;
			return 1;
		}
	}
	return 0;
}

static int add_pending(struct pending **p, size_t *n, size_t *cap, struct pending x)
{
	if (grow_array((void **)p, cap, *n + 1, sizeof(**p), 16))
		return -1;
	(*p)[(*n)++] = x;
	return 0;
}

/* Every rank's wait, if any (at most one per rank: where it is stuck). */
static int collect_pending(struct model_nccl *m, struct trace_set *ts, struct pending **out,
			   size_t *n_out)
{
	struct nccl_result *r = &m->result;
	size_t cap = 0;
	for (size_t ri = 0; ri < r->n_ranks; ri++) {
		const struct nccl_rank *rk = &r->ranks[ri];
		const struct trace_file *f = trace_set_file(ts, rk->file_index);
		if (!f)
			continue;
		int64_t off = trace_set_time_offset_ns(ts, rk->file_index);
		int64_t look = common_ns(last_look_ns(f), off);
		struct pending p = { .rank_index = (uint32_t)ri };
		int found = 0;
		/* inside the collective */
		for (size_t i = 0; i < f->n_inflight && !found; i++) {
			const struct fr_inflight_call *e = &f->inflight[i];
			if (e->probe != FR_PROBE_NCCL || e->pid != rk->pid ||
			    !nccl_is_collective(e->named_func))
				continue;
			if (e->func != FR_NCCL_GROUP_END && returned_call(rk, e->tid, e->entry_ns))
				continue; /* returned while the recorder looked */
			if (!place_in_flight(rk, e, &p.comm_index, &p.seq))
				continue;
			p.func = e->named_func;
			p.count = e->func == FR_NCCL_GROUP_END ? 0 : e->count;
			p.how = NCCL_HANG_IN_CALL;
			p.entry_common_ns = common_ns(e->entry_ns, off);
			found = 1;
		}
		/* enqueued its last collective and waits for it */
		if (!found) {
			const struct nccl_call *L = NULL;
			for (size_t c = rk->n_calls; c-- > 0 && !L;)
				if (nccl_is_collective(rk->calls[c].func))
					L = &rk->calls[c];
			if (L && !L->result && L->comm_index != NCCL_NONE &&
			    waits_after(m, rk, f, L, &p.how)) {
				p.comm_index = L->comm_index;
				p.seq = L->seq;
				p.func = L->func;
				p.count = L->count;
				p.entry_common_ns = nccl_call_entry_common(rk, L);
				found = 1;
			}
		}
		if (!found)
			continue;
		p.waiting_s = look > p.entry_common_ns ? (double)(look - p.entry_common_ns) / 1e9 : 0;
		if (add_pending(out, n_out, &cap, p))
			return -1;
	}
	return 0;
}

/* ---- the hang ------------------------------------------------------------------ */

/* Twice the longest gap between the first entries of consecutive
 * collectives of comm before seq (instances are in time order), at least
 * HANG_MIN_S; HANG_FEW_S when fewer than two came before. */
static double threshold_s(const struct nccl_result *r, uint32_t comm, uint64_t seq)
{
	int64_t prev = 0, gap = 0;
	size_t n = 0;
	for (size_t i = 0; i < r->n_instances; i++) {
		const struct nccl_instance *in = &r->instances[i];
		if (in->comm_index != comm || in->seq >= seq)
			continue;
		if (n++ && in->first_entry_common_ns - prev > gap)
			gap = in->first_entry_common_ns - prev;
		prev = in->first_entry_common_ns;
	}
	if (n < 2)
		return HANG_FEW_S;
	double t = 2.0 * (double)gap / 1e9;
	return t > HANG_MIN_S ? t : HANG_MIN_S;
}

static int has_call(const struct nccl_rank *rk, uint32_t comm, uint64_t seq)
{
	for (size_t c = 0; c < rk->n_calls; c++)
		if (rk->calls[c].comm_index == comm && rk->calls[c].seq == seq &&
		    nccl_is_collective(rk->calls[c].func))
			return 1;
	return 0;
}

static int in_comm(const struct nccl_rank *rk, uint32_t comm, int32_t *comm_rank)
{
	*comm_rank = -1;
	for (size_t j = 0; j < rk->n_joined; j++)
		if (rk->joined[j].comm_index == comm) {
			*comm_rank = rk->joined[j].comm_rank;
			return 1;
		}
	for (size_t c = 0; c < rk->n_calls; c++)
		if (rk->calls[c].comm_index == comm)
			return 1;
	return 0;
}

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

/* The ranks of the candidate's communicator that never entered it. */
static int find_missing(const struct nccl_result *r, const struct pending *p, size_t n_p,
			struct nccl_hang *h)
{
	size_t n = r->n_ranks;
	int32_t nranks = r->comms[h->comm_index].nranks;
	size_t cap = n + (nranks > 0 ? (size_t)nranks : 0) + 1;
	h->missing = malloc(cap * sizeof(*h->missing));
	char *seen = calloc(nranks > 0 ? (size_t)nranks : 1, 1);
	if (!h->missing || !seen) {
		free(seen);
		return -1;
	}
	size_t members = 0;
	int global = nranks > 0; /* the communicator's ranks are the global ranks */
	for (size_t ri = 0; ri < n; ri++) {
		const struct nccl_rank *rk = &r->ranks[ri];
		int32_t comm_rank;
		if (!in_comm(rk, h->comm_index, &comm_rank))
			continue;
		members++;
		if (comm_rank < 0 || comm_rank != rk->rank || comm_rank >= nranks)
			global = 0;
		else
			seen[comm_rank] = 1;
		int entered = has_call(rk, h->comm_index, h->seq);
		for (size_t i = 0; i < n_p && !entered; i++)
			entered = p[i].rank_index == ri && p[i].comm_index == h->comm_index &&
				  p[i].seq == h->seq;
		if (!entered && rk->rank >= 0)
			h->missing[h->n_missing++] = rk->rank;
	}
	if (global) {
		for (int32_t k = 0; k < nranks; k++)
			if (!seen[k])
				h->missing[h->n_missing++] = k;
	} else if (nranks > 0 && (size_t)nranks > members) {
		h->without_trace = (uint32_t)((size_t)nranks - members);
	}
	free(seen);
	if (h->n_missing > 1)
		qsort(h->missing, h->n_missing, sizeof(*h->missing), cmp_i32);
	return 0;
}

static int cmp_waiting(const void *a, const void *b)
{
	const struct nccl_hang_rank *x = a, *y = b;
	return (x->rank_index > y->rank_index) - (x->rank_index < y->rank_index);
}

int nccl_find_hang(struct model_nccl *m, struct trace_set *ts)
{
	struct nccl_result *r = &m->result;
	struct nccl_hang *h = &r->hang;
	struct pending *p = NULL;
	size_t n_p = 0;
	int rc = -1;
	if (collect_pending(m, ts, &p, &n_p))
		goto out;
	/* the candidate: most waiting ranks, then the earliest entry */
	size_t best = SIZE_MAX, best_n = 0;
	int64_t best_entry = 0;
	for (size_t i = 0; i < n_p; i++) {
		size_t k = 0;
		int64_t first = p[i].entry_common_ns;
		for (size_t j = 0; j < n_p; j++)
			if (p[j].comm_index == p[i].comm_index && p[j].seq == p[i].seq) {
				k++;
				if (p[j].entry_common_ns < first)
					first = p[j].entry_common_ns;
			}
		if (best == SIZE_MAX || k > best_n || (k == best_n && first < best_entry)) {
			best = i;
			best_n = k;
			best_entry = first;
		}
	}
	rc = 0;
	if (best == SIZE_MAX)
		goto out;
	const struct pending *c = &p[best];
	h->comm_index = c->comm_index;
	h->seq = c->seq;
	h->func = c->func;
	h->nranks = r->comms[c->comm_index].nranks;
	h->threshold_s = threshold_s(r, c->comm_index, c->seq);
	rc = -1;
	if (!(h->waiting = calloc(best_n, sizeof(*h->waiting))))
		goto out;
	for (size_t j = 0; j < n_p; j++) {
		if (p[j].comm_index != c->comm_index || p[j].seq != c->seq)
			continue;
		h->waiting[h->n_waiting++] = (struct nccl_hang_rank){
			p[j].rank_index, p[j].how, p[j].entry_common_ns, p[j].waiting_s };
		if (p[j].waiting_s > h->waiting_s)
			h->waiting_s = p[j].waiting_s;
		if (p[j].count)
			h->count = p[j].count;
	}
	qsort(h->waiting, h->n_waiting, sizeof(*h->waiting), cmp_waiting);
	if (find_missing(r, p, n_p, h))
		goto out;
	rc = 0;
	if (h->waiting_s >= h->threshold_s) {
		h->found = 1;
		goto out;
	}
	const struct nccl_rank *rk = &r->ranks[h->waiting[0].rank_index];
	snprintf(h->why_none, sizeof(h->why_none),
		 "rank %d has waited %.3f s in %s #%llu, less than %.3f s (twice the longest gap "
		 "between that communicator's collectives): a collective in progress", rk->rank,
		 h->waiting_s, nccl_op_name(h->func), (unsigned long long)h->seq + 1,
		 h->threshold_s);
out:
	free(p);
	return rc;
}

void nccl_hang_free(struct nccl_hang *h)
{
	free(h->waiting);
	free(h->missing);
	memset(h, 0, sizeof(*h));
}
