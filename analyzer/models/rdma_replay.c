/* The RDMA model's replay: the kept rdma events, sorted per (file, pid) by
 * time, drive the queue pairs, their send and receive queues and their
 * connection rows; each completion retires the work requests it answers.
 * Not for what a row counts once a WR retires (rdma_conn_stats.c) nor for
 * joining a row to its other end (rdma_join.c).
 *
 * Queue pairs.  (file, pid, qp_num) names a QP; create_qp and destroy_qp
 * end the previous life of a number.  Each QP has a send and a receive
 * queue of posted, not yet completed WRs (FIFO; a WR whose post call
 * rejected it, FR_RDMA_POST_FAILED, is not queued but counted).  A
 * modify_qp to RESET or a destroy drops what is still queued (the provider
 * discards it; counted as dropped).
 *
 * Connections.  modify_qp to RTR names the remote QP (dest_qp_num) and the
 * remote GID: it starts a connection row of that QP, unless the QP already
 * talks to that same remote QP and GID (a RESET -> RTR cycle after an error
 * keeps the row).  A QP that moves data without a recorded RTR (the
 * recorder attached later) still gets a row, its remote QP taken from a
 * completion's src_qp when one carries it.  Rows find their other end
 * after the replay (rdma_join.c).
 *
 * Pairing.  A completion names its QP (qp_num) and wr_id.  A successful
 * completion goes to the receive queue when its opcode has IBV_WC_RECV set,
 * else to the send queue; an error completion's opcode is undefined
 * (verbs.h), so it takes the send queue when a WR with its wr_id is queued
 * there, else the receive queue.  The completion retires the OLDEST queued
 * WR with its wr_id (wr_ids repeat: NCCL packs slot numbers into them).
 *   - Send queue: RC executes in order, so the WRs queued before it
 *     completed before it: an unsignaled chain of N WRs followed by a
 *     signaled one is N + 1 ops and all their bytes, retired at this one
 *     completion.  Each retired WR's latency is this completion's time
 *     minus ITS OWN post time (the same for one chained post call, the
 *     chain's first post for WRs posted by earlier calls).  A signaled WR
 *     retired that way lost its own completion event: counted as missed.
 *     In front of an error completion they are retired as successes too
 *     (they executed before the failing one); in front of a flush they are
 *     dropped and counted as missed (the error before them would have
 *     retired them).
 *   - Receive queue: every receive has its own completion; receives queued
 *     before the matched one are counted as missed and dropped.  Bytes of a
 *     receive are the completion's byte_len (what arrived), not the buffer.
 *   - No queued WR with that wr_id: a successful send completion that
 *     follows a chain the probe could not walk whole (more than 16 WRs,
 *     FR_RDMA_POST_TRUNCATED) retires the queue up to that chain's last
 *     walked WR; otherwise the completion is unmatched (its WR was posted
 *     before the recording or its event was lost): it counts as a
 *     completion and, when an error, in the errors, never in ops or bytes.
 * ops and bytes count the WRs retired successfully.  Errors count error
 * completions by status; IBV_WC_WR_FLUSH_ERR (the QP was already in error)
 * is counted apart and is no loss.  Latency is the completion event's time
 * (poll_cq's return) minus the post call's entry: it includes the time the
 * application took to poll.  The connection's latency covers successful
 * send-queue WRs; receives have their own rows in the per opcode and size
 * table (a receive waits for the peer, not for the network). */
#include "rdma_private.h"

#include <stdlib.h>
#include <string.h>

/* ---- queues and queue pairs ----------------------------------------------- */

static int wrq_push(struct wrq *q, const struct pend *p)
{
	if (q->head + q->len == q->cap) {
		if (q->head) {
			memmove(q->v, q->v + q->head, q->len * sizeof(*q->v));
			q->head = 0;
		} else if (rdma_grow((void **)&q->v, &q->cap, q->len + 1, sizeof(*q->v))) {
			return -1;
		}
	}
	q->v[q->head + q->len++] = *p;
	return 0;
}

static void wrq_pop(struct wrq *q, size_t n)
{
	q->head += n;
	q->len -= n;
	if (!q->len)
		q->head = 0;
}

/* Position of the oldest queued WR with wr_id, or SIZE_MAX. */
static size_t wrq_find(const struct wrq *q, uint64_t wr_id)
{
	for (size_t i = 0; i < q->len && i < RDMA_MATCH_WINDOW; i++)
		if (q->v[q->head + i].wr_id == wr_id)
			return i;
	return SIZE_MAX;
}

static struct qp *qp_get(struct model_rdma *m, uint32_t file, uint32_t pid, uint32_t qp_num)
{
	int created;
	uint64_t *slot = hmap_slot(&m->qp_by_key, (uint64_t)file << 32 | pid, qp_num, &created);
	if (!slot)
		return NULL;
	if (created) {
		if (rdma_grow((void **)&m->qps, &m->cap_qps, m->n_qps + 1, sizeof(*m->qps)))
			return NULL;
		*slot = m->n_qps;
		struct qp *q = &m->qps[m->n_qps++];
		memset(q, 0, sizeof(*q));
		q->file = file;
		q->pid = pid;
		q->qp_num = qp_num;
		q->conn = NO_CONN;
	}
	return &m->qps[*slot];
}

static struct conn_acc *ensure_conn(struct model_rdma *m, struct qp *q)
{
	return q->conn != NO_CONN ? &m->acc[q->conn] : rdma_conn_new(m, q);
}

/* Drops everything queued on q (RESET, destroy, a new QP with its number). */
static void drop_queued(struct model_rdma *m, struct qp *q)
{
	if (q->conn != NO_CONN)
		m->acc[q->conn].c.dropped += q->sq.len + q->rq.len;
	wrq_pop(&q->sq, q->sq.len);
	wrq_pop(&q->rq, q->rq.len);
}

/* ---- replay: completions, posts, control calls ---------------------------- */

static int on_cqe(struct model_rdma *m, const struct rev *e)
{
	struct qp *q = qp_get(m, e->file, e->pid, e->qp_num);
	struct conn_acc *a = q ? ensure_conn(m, q) : NULL;
	if (!a)
		return -1;
	struct rdma_conn *c = &a->c;
	c->completions++;
	rdma_conn_note_time(c, e->ts_ns);
	if (e->status != RDMA_WC_SUCCESS)
		rdma_conn_count_status(c, e->status);
	if (!c->remote_qp_known && e->src_qp) {
		c->remote_qp_known = 1;
		c->remote_qp = e->src_qp;
	}

	struct wrq *wq;
	size_t pos;
	if (e->status == RDMA_WC_SUCCESS) {
		wq = (e->opcode & RDMA_WC_RECV) ? &q->rq : &q->sq;
		pos = wrq_find(wq, e->wr_id);
	} else {
		wq = &q->sq;
		pos = wrq_find(wq, e->wr_id);
		if (pos == SIZE_MAX) {
			wq = &q->rq;
			pos = wrq_find(wq, e->wr_id);
		}
	}
	int recv = wq == &q->rq;
	if (pos == SIZE_MAX) {
		if (e->status == RDMA_WC_SUCCESS && !recv) {
			/* the rest of a chain longer than the probe walks */
			for (size_t i = 0; i < wq->len && i < RDMA_MATCH_WINDOW; i++) {
				if (!(wq->v[wq->head + i].flags & FR_RDMA_POST_TRUNCATED))
					continue;
				for (size_t k = 0; k <= i; k++) {
					const struct pend *p = &wq->v[wq->head + k];
					if (rdma_conn_retire_ok(a, p, 0, p->opcode, p->bytes, e->ts_ns))
						return -1;
				}
				wrq_pop(wq, i + 1);
				c->truncated++;
				return 0;
			}
		}
		c->unmatched++;
		return 0;
	}
	/* the WRs queued before the matched one */
	for (size_t i = 0; i < pos; i++) {
		const struct pend *p = &wq->v[wq->head + i];
		if (!recv && e->status != RDMA_WC_WR_FLUSH_ERR) {
			if (p->flags & FR_RDMA_POST_SIGNALED)
				c->missed++;
			if (rdma_conn_retire_ok(a, p, 0, p->opcode, p->bytes, e->ts_ns))
				return -1;
		} else {
			c->missed++;
		}
	}
	const struct pend *p = &wq->v[wq->head + pos];
	if (e->status == RDMA_WC_SUCCESS &&
	    rdma_conn_retire_ok(a, p, recv, recv ? e->opcode : p->opcode,
				recv ? e->bytes : p->bytes, e->ts_ns))
		return -1;
	wrq_pop(wq, pos + 1);
	return 0;
}

static int on_post(struct model_rdma *m, const struct rev *e)
{
	struct qp *q = qp_get(m, e->file, e->pid, e->qp_num);
	struct conn_acc *a = q ? ensure_conn(m, q) : NULL;
	if (!a)
		return -1;
	if (e->flags & FR_RDMA_POST_FAILED) {
		a->c.failed_posts++;
		return 0;
	}
	struct wrq *wq = (e->flags & FR_RDMA_POST_RECV) ? &q->rq : &q->sq;
	if (wq->len >= RDMA_MAX_PENDING) {
		wrq_pop(wq, 1);
		a->c.dropped++;
	}
	struct pend p = { .post_ns = e->ts_ns, .wr_id = e->wr_id, .bytes = e->bytes,
			  .opcode = e->opcode, .flags = e->flags };
	return wrq_push(wq, &p);
}

static int on_rtr(struct model_rdma *m, struct qp *q, const struct rctrl *k, uint64_t ts)
{
	struct conn_acc *a = q->conn != NO_CONN ? &m->acc[q->conn] : NULL;
	if (a && a->c.has_rtr && a->c.remote_qp == k->dest_qp_num &&
	    !memcmp(a->c.remote_gid, k->gid, sizeof(k->gid)))
		return 0; /* the same peer again (RESET -> RTR after an error) */
	if (!a || a->c.has_rtr || a->c.completions || a->c.ops)
		a = rdma_conn_new(m, q); /* else: receives posted before RTR, nothing completed */
	if (!a)
		return -1;
	a->c.has_rtr = 1;
	a->c.remote_qp_known = 1;
	a->c.remote_qp = k->dest_qp_num;
	memcpy(a->c.remote_gid, k->gid, sizeof(k->gid));
	a->c.dlid = k->dlid;
	a->c.path_mtu = k->path_mtu;
	a->c.rtr_ns = ts;
	return 0;
}

enum { QPS_RESET = 0, QPS_RTR = 2 }; /* enum ibv_qp_state */

static int on_ctrl(struct model_rdma *m, const struct rev *e)
{
	const struct rctrl *k = &m->ctrls[e->status];
	if (k->result != 0 || !e->qp_num)
		return 0; /* a failed call changed nothing */
	uint64_t at;
	int known = hmap_get(&m->qp_by_key, (uint64_t)e->file << 32 | e->pid, e->qp_num, &at);
	switch (e->opcode) {
	case FR_RDMA_CREATE_QP: case FR_RDMA_CREATE_QP_EX:
	case FR_RDMA_DESTROY_QP:
		if (known) { /* the number's previous life ends */
			drop_queued(m, &m->qps[at]);
			m->qps[at].conn = NO_CONN;
		}
		return 0;
	case FR_RDMA_MODIFY_QP: {
		struct qp *q = known ? &m->qps[at] : qp_get(m, e->file, e->pid, e->qp_num);
		if (!q)
			return -1;
		if (k->qp_state == QPS_RESET)
			drop_queued(m, q);
		else if (k->qp_state == QPS_RTR)
			return on_rtr(m, q, k, e->ts_ns);
		return 0;
	}
	}
	return 0;
}

static int rev_cmp(const void *x, const void *y)
{
	const struct rev *a = x, *b = y;
	if (a->file != b->file)
		return a->file < b->file ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->ts_ns != b->ts_ns)
		return a->ts_ns < b->ts_ns ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

int rdma_replay(struct model_rdma *m)
{
	if (m->n_evs)
		qsort(m->evs, m->n_evs, sizeof(*m->evs), rev_cmp);
	for (size_t i = 0; i < m->n_evs; i++) {
		const struct rev *e = &m->evs[i];
		int rc = e->kind == EV_POST ? on_post(m, e) :
			 e->kind == EV_CQE ? on_cqe(m, e) : on_ctrl(m, e);
		if (rc)
			return -1;
	}
	for (size_t i = 0; i < m->n_qps; i++) {
		struct qp *q = &m->qps[i];
		if (q->conn != NO_CONN)
			m->acc[q->conn].c.outstanding += q->sq.len + q->rq.len;
	}
	return 0;
}

void rdma_replay_free(struct model_rdma *m)
{
	for (size_t i = 0; i < m->n_qps; i++) {
		free(m->qps[i].sq.v);
		free(m->qps[i].rq.v);
	}
	free(m->qps);
	m->qps = NULL;
	m->n_qps = m->cap_qps = 0;
	hmap_free(&m->qp_by_key);
	free(m->evs);
	m->evs = NULL;
	m->n_evs = m->cap_evs = 0;
	free(m->ctrls);
	m->ctrls = NULL;
	m->n_ctrls = m->cap_ctrls = 0;
}
