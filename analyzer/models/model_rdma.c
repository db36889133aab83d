/* The RDMA verbs model.  Not for output (cmd_rdma.c) nor for decoding the
 * port counter records (trace_set.c sums them; this model only reports).
 *
 * Events.  The rdma probes write one FR_EV_RDMA_POST per work request (WR)
 * when the post call returns, stamped with the call's ENTRY time, and one
 * FR_EV_RDMA_CQE per completion at poll_cq's return, possibly from another
 * thread.  So the file order is not the time order (a completion may be
 * written before the post call that caused it has returned): the model keeps
 * the rdma events of the pass (about 64 bytes each), sorts them per (file,
 * pid) by time (control calls, then posts, then completions at equal times;
 * the WRs of one chain keep their order), and replays them.  Memory grows
 * with the number of rdma events, not with the whole trace.
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
 * completion's src_qp when one carries it.  Rows are joined after the
 * replay: X's remote end is the row Y with Y.qp_num == X.remote_qp and
 * Y.remote_qp == X.qp_num, in any file; when several match (QP numbers are
 * per device and repeat across nodes), the GIDs decide: the trace does not
 * hold a QP's own GID, but every join teaches one (the GID X dialled belongs
 * to Y's node), and a GID belongs to one node, so a candidate whose node
 * is known not to own the GID X dialled (or the reverse) is dropped; joins
 * go in rounds until nothing changes, and rows still matching several are
 * counted as ambiguous and left unjoined (GID 0: the LID stands in).  Two
 * QPs in one process are two rows, each its own view.
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
 * table (a receive waits for the peer, not for the network).
 *
 * Per file: the recorder's "rdma_idle_polls" counter (poll_cq calls that
 * returned nothing, counted in the kernel for the whole recording, not per
 * process) and the port counters trace_set.c summed. */
#include "model_rdma.h"
#include "hmap.h"
#include "trace_set.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- names ---------------------------------------------------------------- */

static const char *const wc_status_names[RDMA_WC_STATUSES] = {
	"IBV_WC_SUCCESS", "IBV_WC_LOC_LEN_ERR", "IBV_WC_LOC_QP_OP_ERR",
	"IBV_WC_LOC_EEC_OP_ERR", "IBV_WC_LOC_PROT_ERR", "IBV_WC_WR_FLUSH_ERR",
	"IBV_WC_MW_BIND_ERR", "IBV_WC_BAD_RESP_ERR", "IBV_WC_LOC_ACCESS_ERR",
	"IBV_WC_REM_INV_REQ_ERR", "IBV_WC_REM_ACCESS_ERR", "IBV_WC_REM_OP_ERR",
	"IBV_WC_RETRY_EXC_ERR", "IBV_WC_RNR_RETRY_EXC_ERR", "IBV_WC_LOC_RDD_VIOL_ERR",
	"IBV_WC_REM_INV_RD_REQ_ERR", "IBV_WC_REM_ABORT_ERR", "IBV_WC_INV_EECN_ERR",
	"IBV_WC_INV_EEC_STATE_ERR", "IBV_WC_FATAL_ERR", "IBV_WC_RESP_TIMEOUT_ERR",
	"IBV_WC_GENERAL_ERR", "IBV_WC_TM_ERR", "IBV_WC_TM_RNDV_INCOMPLETE",
};

const char *rdma_wc_status_name(uint32_t status)
{
	return status < RDMA_WC_STATUSES ? wc_status_names[status] : NULL;
}

enum rdma_err_class rdma_err_class_of(uint32_t status)
{
	switch (status) {
	case RDMA_WC_RETRY_EXC_ERR:
		return RDMA_ERR_RETRY_EXHAUSTED;
	case RDMA_WC_RNR_RETRY_EXC_ERR:
		return RDMA_ERR_RNR_RETRY_EXHAUSTED;
	case 9: case 10: case 11: case 15: case 16: /* REM_INV_REQ, REM_ACCESS, REM_OP,
						       REM_INV_RD_REQ, REM_ABORT */
		return RDMA_ERR_REMOTE_NAK;
	case 1: case 2: case 3: case 4: case 6: case 7: case 8: case 14:
		return RDMA_ERR_LOCAL;
	}
	return RDMA_ERR_OTHER;
}

const char *rdma_err_class_name(enum rdma_err_class c)
{
	static const char *const names[RDMA_ERR_CLASSES] = {
		"retry_exhausted", "rnr_retry_exhausted", "remote_nak", "local", "other",
	};
	return (unsigned)c < RDMA_ERR_CLASSES ? names[c] : "other";
}

const char *rdma_opcode_name(int recv, uint32_t opcode, char *buf, size_t len)
{
	static const char *const wr_names[] = {
		"RDMA_WRITE", "RDMA_WRITE_WITH_IMM", "SEND", "SEND_WITH_IMM", "RDMA_READ",
		"ATOMIC_CMP_AND_SWP", "ATOMIC_FETCH_AND_ADD", "LOCAL_INV", "BIND_MW",
		"SEND_WITH_INV", "TSO", "DRIVER1",
	};
	static const char *const recv_names[] = {
		"RECV", "RECV_RDMA_WITH_IMM", "TM_ADD", "TM_DEL", "TM_SYNC", "TM_RECV",
		"TM_NO_TAG",
	};
	if (!recv && opcode < sizeof(wr_names) / sizeof(wr_names[0]))
		return wr_names[opcode];
	if (!recv && opcode == 15)
		return "ATOMIC_WRITE";
	if (recv && opcode >= RDMA_WC_RECV &&
	    opcode - RDMA_WC_RECV < sizeof(recv_names) / sizeof(recv_names[0]))
		return recv_names[opcode - RDMA_WC_RECV];
	snprintf(buf, len, "%s_%u", recv ? "RECV_OPCODE" : "OPCODE", opcode);
	return buf;
}

const char *rdma_size_bucket_name(enum rdma_size_bucket b)
{
	static const char *const names[RDMA_SIZE_BUCKETS] = { "<4K", "4K-64K", "64K-1M", ">=1M" };
	return (unsigned)b < RDMA_SIZE_BUCKETS ? names[b] : "?";
}

enum rdma_size_bucket rdma_size_bucket_of(uint64_t bytes)
{
	if (bytes < 4096)
		return RDMA_SIZE_LT_4K;
	if (bytes < 65536)
		return RDMA_SIZE_4K_64K;
	if (bytes < 1048576)
		return RDMA_SIZE_64K_1M;
	return RDMA_SIZE_GE_1M;
}

/* ---- log-linear histogram, groups allocated on first use ------------------ */

#define HIST_SUB 64u     /* buckets per power of two; values below are exact */
#define HIST_GROUPS 59u  /* group 0: 0..63; group g >= 1: bit length g + 6 */

struct hist {
	uint64_t *group[HIST_GROUPS];
	uint64_t count, min, max, sum;
};

static int hist_add(struct hist *h, uint64_t v)
{
	unsigned g = 0, slot = (unsigned)v;
	if (v >= HIST_SUB) {
		unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= 6 */
		g = e - 5u;
		slot = (unsigned)((v >> (e - 6u)) & (HIST_SUB - 1u));
	}
	if (!h->group[g] && !(h->group[g] = calloc(HIST_SUB, sizeof(uint64_t))))
		return -1;
	h->group[g][slot]++;
	if (!h->count || v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->count++;
	h->sum += v;
	return 0;
}

/* The middle of bucket (g, slot). */
static uint64_t hist_value(unsigned g, unsigned slot)
{
	if (!g)
		return slot;
	unsigned shift = g - 1u;
	uint64_t low = (uint64_t)(HIST_SUB + slot) << shift;
	return low + (((uint64_t)1 << shift) - 1u) / 2u;
}

/* Nearest-rank quantile q (0 < q <= 1), clamped to [min, max]. */
static uint64_t hist_quantile(const struct hist *h, double q)
{
	if (!h->count)
		return 0;
	uint64_t rank = (uint64_t)(q * (double)h->count);
	if ((double)rank < q * (double)h->count)
		rank++;
	if (rank < 1)
		rank = 1;
	uint64_t seen = 0;
	for (unsigned g = 0; g < HIST_GROUPS; g++) {
		if (!h->group[g])
			continue;
		for (unsigned s = 0; s < HIST_SUB; s++) {
			seen += h->group[g][s];
			if (seen >= rank) {
				uint64_t v = hist_value(g, s);
				return v < h->min ? h->min : v > h->max ? h->max : v;
			}
		}
	}
	return h->max;
}

static void hist_summary(const struct hist *h, struct rdma_latency *out)
{
	out->count = h->count;
	out->min_ns = h->min;
	out->max_ns = h->max;
	out->sum_ns = h->sum;
	out->p50_ns = hist_quantile(h, 0.50);
	out->p99_ns = hist_quantile(h, 0.99);
}

static void hist_free(struct hist *h)
{
	for (unsigned g = 0; g < HIST_GROUPS; g++)
		free(h->group[g]);
	memset(h, 0, sizeof(*h));
}

/* ---- state ---------------------------------------------------------------- */

enum { EV_CTRL = 0, EV_POST = 1, EV_CQE = 2 }; /* also the order at equal times */

/* One rdma event, as much of it as the replay needs. */
struct rev {
	uint64_t ts_ns;
	uint64_t seq;      /* arrival order: keeps a chain's WRs in order */
	uint64_t wr_id;
	uint64_t bytes;    /* post: SGE bytes; completion: byte_len */
	uint32_t file, pid;
	uint32_t qp_num;
	uint32_t opcode;   /* post: ibv_wr_opcode; completion: ibv_wc_opcode; ctrl: func */
	uint32_t status;   /* completion: ibv_wc_status; ctrl: index in ctrls */
	uint32_t src_qp;   /* completion */
	uint16_t flags;    /* post: enum fr_rdma_post_flags */
	uint8_t kind;
};

/* The control calls the replay needs (create, modify, destroy qp). */
struct rctrl {
	int64_t result;
	uint32_t qp_state, dest_qp_num, path_mtu;
	uint16_t dlid;
	uint8_t gid[16];
};

/* A posted WR waiting for its completion. */
struct pend {
	uint64_t post_ns, wr_id, bytes;
	uint32_t opcode;
	uint16_t flags;
};

/* A FIFO: v[head .. head + len). */
struct wrq {
	struct pend *v;
	size_t head, len, cap;
};

/* Bounds: a queue never holds more (the oldest is dropped), and a completion
 * looks this far for its wr_id. */
#define RDMA_MAX_PENDING (1u << 20)
#define RDMA_MATCH_WINDOW 4096u
#define NO_CONN SIZE_MAX

struct qp {
	uint32_t file, pid, qp_num;
	size_t conn;       /* current row in acc, NO_CONN before the first event */
	struct wrq sq, rq;
};

struct conn_acc {
	struct rdma_conn c;
	struct hist lat;
	struct hist *row_lat; /* parallel to c.rows */
	size_t cap_rows;
	uint64_t order;       /* creation order, for a stable sort */
};

struct file_count {
	uint64_t posts, completions, ctrl_calls;
};

struct model_rdma {
	struct model_opts opts;
	struct rev *evs;
	size_t n_evs, cap_evs;
	struct rctrl *ctrls;
	size_t n_ctrls, cap_ctrls;
	struct file_count *per_file;
	size_t n_per_file;

	/* replay */
	struct qp *qps;
	size_t n_qps, cap_qps;
	struct hmap qp_by_key;  /* (file << 32 | pid, qp_num) -> index in qps */
	struct conn_acc *acc;
	size_t n_acc, cap_acc;

	struct rdma_result result;
};

static int grow(void **v, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : 64;
	while (n < need)
		n *= 2;
	void *p = realloc(*v, n * elem);
	if (!p)
		return -1;
	*v = p;
	*cap = n;
	return 0;
}

static void *rdma_create(const struct model_opts *opts)
{
	struct model_rdma *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	if (opts)
		m->opts = *opts;
	hmap_init(&m->qp_by_key);
	return m;
}

/* ---- feed ----------------------------------------------------------------- */

static struct file_count *file_count(struct model_rdma *m, uint32_t file)
{
	if (file >= m->n_per_file) {
		size_t n = (size_t)file + 1;
		struct file_count *p = realloc(m->per_file, n * sizeof(*p));
		if (!p)
			return NULL;
		memset(p + m->n_per_file, 0, (n - m->n_per_file) * sizeof(*p));
		m->per_file = p;
		m->n_per_file = n;
	}
	return &m->per_file[file];
}

static int rdma_feed(void *state, uint32_t file_index, const struct fr_rec_hdr *rec)
{
	struct model_rdma *m = state;
	uint16_t type;
	memcpy(&type, (const uint8_t *)rec + offsetof(struct fr_rec_hdr, type), sizeof(type));
	if (type != FR_EV_RDMA_CTRL && type != FR_EV_RDMA_POST && type != FR_EV_RDMA_CQE)
		return 0;
	struct fr_ev_common c;
	memcpy(&c, rec, sizeof(c));
	if (m->opts.filter_pid && c.pid != m->opts.pid)
		return 0; /* the other end's label is lost too: see cmd_rdma's --pid */
	struct file_count *fc = file_count(m, file_index);
	if (!fc || grow((void **)&m->evs, &m->cap_evs, m->n_evs + 1, sizeof(*m->evs)))
		return -1;
	struct rev e = { .ts_ns = c.ts_ns, .seq = m->n_evs, .file = file_index, .pid = c.pid };
	if (type == FR_EV_RDMA_POST) {
		struct fr_ev_rdma_post p;
		memcpy(&p, rec, sizeof(p)); /* size checked by the decoder */
		e.kind = EV_POST;
		e.wr_id = p.wr_id;
		e.bytes = p.bytes;
		e.qp_num = p.qp_num;
		e.opcode = p.opcode;
		e.flags = p.flags;
		fc->posts++;
		m->result.posts++;
	} else if (type == FR_EV_RDMA_CQE) {
		struct fr_ev_rdma_cqe q;
		memcpy(&q, rec, sizeof(q));
		e.kind = EV_CQE;
		e.wr_id = q.wr_id;
		e.bytes = q.byte_len;
		e.qp_num = q.qp_num;
		e.opcode = q.opcode;
		e.status = q.status;
		e.src_qp = q.src_qp;
		fc->completions++;
		m->result.completions++;
	} else {
		struct fr_ev_rdma_ctrl r;
		memcpy(&r, rec, sizeof(r));
		fc->ctrl_calls++;
		m->result.ctrl_calls++;
		if (r.func != FR_RDMA_CREATE_QP && r.func != FR_RDMA_CREATE_QP_EX &&
		    r.func != FR_RDMA_MODIFY_QP && r.func != FR_RDMA_DESTROY_QP)
			return 0;
		if (grow((void **)&m->ctrls, &m->cap_ctrls, m->n_ctrls + 1, sizeof(*m->ctrls)))
			return -1;
		struct rctrl *k = &m->ctrls[m->n_ctrls];
		memset(k, 0, sizeof(*k));
		k->result = r.result;
		k->qp_state = r.qp_state;
		k->dest_qp_num = r.dest_qp_num;
		k->path_mtu = r.path_mtu;
		k->dlid = r.dlid;
		memcpy(k->gid, r.gid, sizeof(k->gid));
		e.kind = EV_CTRL;
		e.qp_num = r.qp_num;
		e.opcode = r.func;
		e.status = (uint32_t)m->n_ctrls++;
	}
	m->evs[m->n_evs++] = e;
	return 0;
}

/* ---- replay: queues ------------------------------------------------------- */

static int wrq_push(struct wrq *q, const struct pend *p)
{
	if (q->head + q->len == q->cap) {
		if (q->head) {
			memmove(q->v, q->v + q->head, q->len * sizeof(*q->v));
			q->head = 0;
		} else if (grow((void **)&q->v, &q->cap, q->len + 1, sizeof(*q->v))) {
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
		if (grow((void **)&m->qps, &m->cap_qps, m->n_qps + 1, sizeof(*m->qps)))
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

static struct conn_acc *new_conn(struct model_rdma *m, struct qp *q)
{
	if (grow((void **)&m->acc, &m->cap_acc, m->n_acc + 1, sizeof(*m->acc)))
		return NULL;
	struct conn_acc *a = &m->acc[m->n_acc];
	memset(a, 0, sizeof(*a));
	a->order = m->n_acc;
	a->c.local.file = q->file;
	a->c.local.pid = q->pid;
	a->c.local.rank = -1;
	a->c.remote.rank = -1;
	a->c.qp_num = q->qp_num;
	a->c.remote_conn = NO_CONN;
	q->conn = m->n_acc++;
	return a;
}

static struct conn_acc *ensure_conn(struct model_rdma *m, struct qp *q)
{
	return q->conn != NO_CONN ? &m->acc[q->conn] : new_conn(m, q);
}

/* Drops everything queued on q (RESET, destroy, a new QP with its number). */
static void drop_queued(struct model_rdma *m, struct qp *q)
{
	if (q->conn != NO_CONN)
		m->acc[q->conn].c.dropped += q->sq.len + q->rq.len;
	wrq_pop(&q->sq, q->sq.len);
	wrq_pop(&q->rq, q->rq.len);
}

static void note_time(struct rdma_conn *c, uint64_t ts)
{
	if (!c->first_ns || ts < c->first_ns)
		c->first_ns = ts;
	if (ts > c->last_ns)
		c->last_ns = ts;
}

/* ---- replay: pairing ------------------------------------------------------ */

static struct rdma_op_row *op_row(struct conn_acc *a, int recv, uint32_t opcode,
				  enum rdma_size_bucket b, struct hist **lat)
{
	struct rdma_conn *c = &a->c;
	for (size_t i = 0; i < c->n_rows; i++) {
		struct rdma_op_row *r = &c->rows[i];
		if (r->recv == recv && r->opcode == opcode && r->bucket == b) {
			*lat = &a->row_lat[i];
			return r;
		}
	}
	if (c->n_rows == a->cap_rows) {
		size_t n = a->cap_rows ? a->cap_rows * 2 : 4;
		struct rdma_op_row *rows = realloc(c->rows, n * sizeof(*rows));
		if (!rows)
			return NULL;
		c->rows = rows;
		struct hist *h = realloc(a->row_lat, n * sizeof(*h));
		if (!h)
			return NULL;
		a->row_lat = h;
		a->cap_rows = n;
	}
	struct rdma_op_row *r = &c->rows[c->n_rows];
	memset(r, 0, sizeof(*r));
	memset(&a->row_lat[c->n_rows], 0, sizeof(a->row_lat[0]));
	r->recv = recv;
	r->opcode = opcode;
	r->bucket = b;
	*lat = &a->row_lat[c->n_rows++];
	return r;
}

/* One WR completed successfully at done_ns. */
static int retire_ok(struct conn_acc *a, const struct pend *p, int recv, uint32_t opcode,
		     uint64_t bytes, uint64_t done_ns)
{
	struct rdma_conn *c = &a->c;
	uint64_t lat = done_ns > p->post_ns ? done_ns - p->post_ns : 0;
	struct hist *row_lat;
	struct rdma_op_row *r = op_row(a, recv, opcode, rdma_size_bucket_of(bytes), &row_lat);
	if (!r)
		return -1;
	r->ops++;
	r->bytes += bytes;
	c->ops++;
	c->bytes += bytes;
	if (recv) {
		c->recv_ops++;
		c->recv_bytes += bytes;
	} else {
		c->send_ops++;
		c->send_bytes += bytes;
		if (hist_add(&a->lat, lat))
			return -1;
	}
	note_time(c, p->post_ns);
	return hist_add(row_lat, lat);
}

static void count_status(struct rdma_conn *c, uint32_t status)
{
	if (status < RDMA_WC_STATUSES)
		c->by_status[status]++;
	else
		c->other_status++;
	if (status == RDMA_WC_WR_FLUSH_ERR) {
		c->flush_errors++;
	} else {
		c->errors++;
		c->by_class[rdma_err_class_of(status)]++;
	}
}

static int on_cqe(struct model_rdma *m, const struct rev *e)
{
	struct qp *q = qp_get(m, e->file, e->pid, e->qp_num);
	struct conn_acc *a = q ? ensure_conn(m, q) : NULL;
	if (!a)
		return -1;
	struct rdma_conn *c = &a->c;
	c->completions++;
	note_time(c, e->ts_ns);
	if (e->status != RDMA_WC_SUCCESS)
		count_status(c, e->status);
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
					if (retire_ok(a, p, 0, p->opcode, p->bytes, e->ts_ns))
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
			if (retire_ok(a, p, 0, p->opcode, p->bytes, e->ts_ns))
				return -1;
		} else {
			c->missed++;
		}
	}
	const struct pend *p = &wq->v[wq->head + pos];
	if (e->status == RDMA_WC_SUCCESS &&
	    retire_ok(a, p, recv, recv ? e->opcode : p->opcode, recv ? e->bytes : p->bytes,
		      e->ts_ns))
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
		a = new_conn(m, q); /* else: receives posted before RTR, nothing completed */
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

static int replay(struct model_rdma *m)
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

/* ---- joining the two ends ------------------------------------------------- */

static int acc_cmp(const void *x, const void *y)
{
	const struct conn_acc *a = x, *b = y;
	if (a->c.local.file != b->c.local.file)
		return a->c.local.file < b->c.local.file ? -1 : 1;
	if (a->c.local.pid != b->c.local.pid)
		return a->c.local.pid < b->c.local.pid ? -1 : 1;
	if (a->c.qp_num != b->c.qp_num)
		return a->c.qp_num < b->c.qp_num ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

/* The remote port X dialled at RTR: its GID, or its LID on an InfiniBand
 * fabric without GRH (GID all zero). */
static uint64_t remote_addr(const struct rdma_conn *x)
{
	static const uint8_t zero[16];
	if (!memcmp(x->remote_gid, zero, sizeof(zero)))
		return 0x10000u | x->dlid;
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	for (int i = 0; i < 16; i++)
		h = (h ^ x->remote_gid[i]) * 0x100000001b3ull;
	return h | 0x100000u; /* never a LID's value */
}

/* X's candidates: rows Y with Y.qp_num == X.remote_qp and Y.remote_qp ==
 * X.qp_num, through the chain built in join(). */
struct join_index {
	struct hmap first;   /* (qp_num, remote_qp) -> 1 + first row */
	size_t *next;        /* per row: 1 + next row with the same key, 0 ends */
	struct hmap owner;   /* (remote_addr, 0) -> 1 + file that owns that GID (or LID),
				OWNER_CONFLICT when joins disagree */
};
#define OWNER_CONFLICT UINT64_MAX

/* False when what the joins so far learned contradicts X <-> Y: a GID
 * belongs to one node, so X's remote GID must not be another file's, nor
 * Y's remote GID another file than X's. */
static int addr_ok(const struct join_index *ix, const struct rdma_conn *x,
		   const struct rdma_conn *y)
{
	uint64_t v;
	if (x->has_rtr && hmap_get(&ix->owner, remote_addr(x), 0, &v) && v != OWNER_CONFLICT &&
	    v != (uint64_t)y->local.file + 1)
		return 0;
	if (y->has_rtr && hmap_get(&ix->owner, remote_addr(y), 0, &v) && v != OWNER_CONFLICT &&
	    v != (uint64_t)x->local.file + 1)
		return 0;
	return 1;
}

#define PICK_NONE SIZE_MAX
#define PICK_AMBIGUOUS (SIZE_MAX - 1)

/* The one row X joins, PICK_NONE or PICK_AMBIGUOUS. */
static size_t join_pick(const struct model_rdma *m, const struct join_index *ix, size_t xi)
{
	const struct rdma_conn *x = &m->acc[xi].c;
	uint64_t head;
	if (!x->remote_qp_known || !hmap_get(&ix->first, x->remote_qp, x->qp_num, &head))
		return PICK_NONE;
	size_t found = PICK_NONE, n = 0;
	for (size_t yi = (size_t)head; yi; yi = ix->next[yi - 1]) {
		if (!addr_ok(ix, x, &m->acc[yi - 1].c))
			continue;
		found = yi - 1;
		n++;
	}
	return n <= 1 ? found : PICK_AMBIGUOUS;
}

static int learn_owner(struct join_index *ix, const struct rdma_conn *x, uint32_t file)
{
	if (!x->has_rtr)
		return 0;
	int created;
	uint64_t *v = hmap_slot(&ix->owner, remote_addr(x), 0, &created);
	if (!v)
		return -1;
	if (created)
		*v = (uint64_t)file + 1;
	else if (*v != (uint64_t)file + 1)
		*v = OWNER_CONFLICT;
	return 0;
}

static void set_remote(struct model_rdma *m, size_t xi, size_t yi)
{
	struct rdma_conn *x = &m->acc[xi].c;
	x->joined = 1;
	x->remote_conn = yi;
	x->remote = m->acc[yi].c.local;
}

/* Joins in rounds: a round's joins teach which file owns which GID, which
 * may settle rows that matched several candidates by QP numbers alone. */
static int join(struct model_rdma *m)
{
	struct join_index ix = { .next = calloc(m->n_acc ? m->n_acc : 1, sizeof(size_t)) };
	size_t *pick = calloc(m->n_acc ? m->n_acc : 1, sizeof(size_t));
	int rc = -1;
	hmap_init(&ix.first);
	hmap_init(&ix.owner);
	if (!ix.next || !pick)
		goto out;
	for (size_t i = m->n_acc; i-- > 0;) { /* chains in row order */
		const struct rdma_conn *c = &m->acc[i].c;
		pick[i] = PICK_AMBIGUOUS; /* not settled yet */
		if (!c->remote_qp_known)
			continue;
		uint64_t *slot = hmap_slot(&ix.first, c->qp_num, c->remote_qp, NULL);
		if (!slot)
			goto out;
		ix.next[i] = (size_t)*slot;
		*slot = i + 1;
	}
	for (int progress = 1; progress;) {
		progress = 0;
		for (size_t i = 0; i < m->n_acc; i++) {
			if (pick[i] != PICK_AMBIGUOUS)
				continue;
			pick[i] = join_pick(m, &ix, i);
			if (pick[i] == PICK_AMBIGUOUS)
				continue;
			progress = 1;
			if (pick[i] != PICK_NONE &&
			    (learn_owner(&ix, &m->acc[i].c, m->acc[pick[i]].c.local.file) ||
			     learn_owner(&ix, &m->acc[pick[i]].c, m->acc[i].c.local.file)))
				goto out;
		}
	}
	for (size_t i = 0; i < m->n_acc; i++) {
		if (pick[i] == PICK_AMBIGUOUS)
			m->result.ambiguous_joins++;
		else if (pick[i] != PICK_NONE)
			set_remote(m, i, pick[i]);
	}
	rc = 0;
out:
	free(ix.next);
	free(pick);
	hmap_free(&ix.first);
	hmap_free(&ix.owner);
	return rc;
}

/* ---- labels, files, counters ---------------------------------------------- */

/* The process's rank (RANK of its launcher environment), -1 when unknown. */
static int64_t process_rank(const struct ts_process *p)
{
	return p->rank >= 0 ? p->rank : -1;
}

static void label(struct trace_set *ts, struct rdma_endpoint *ep)
{
	const struct trace_file *f = trace_set_file(ts, ep->file);
	const struct ts_process *p = f ? trace_file_process(f, ep->pid) : NULL;
	ep->host = f ? f->hdr.host : "";
	ep->rank = p ? process_rank(p) : -1;
	snprintf(ep->comm, sizeof(ep->comm), "%s", p ? p->comm : "");
}

static int op_row_cmp(const void *x, const void *y)
{
	const struct rdma_op_row *a = x, *b = y;
	if (a->recv != b->recv)
		return a->recv < b->recv ? -1 : 1;
	if (a->opcode != b->opcode)
		return a->opcode < b->opcode ? -1 : 1;
	return a->bucket < b->bucket ? -1 : a->bucket > b->bucket;
}

static int counter_cmp(const void *x, const void *y)
{
	const struct rdma_counter_row *a = x, *b = y;
	if (a->file != b->file)
		return a->file < b->file ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int files_and_counters(struct model_rdma *m, struct trace_set *ts)
{
	struct rdma_result *r = &m->result;
	size_t n_files = trace_set_count(ts), n_counters = 0;
	for (size_t i = 0; i < n_files; i++)
		n_counters += trace_set_file(ts, i)->n_rdma_counters;
	r->files = calloc(n_files ? n_files : 1, sizeof(*r->files));
	r->counters = calloc(n_counters ? n_counters : 1, sizeof(*r->counters));
	if (!r->files || !r->counters)
		return -1;
	for (size_t i = 0; i < n_files; i++) {
		const struct trace_file *f = trace_set_file(ts, i);
		struct rdma_file_row *fr = &r->files[r->n_files++];
		fr->file = (uint32_t)i;
		fr->host = f->hdr.host;
		fr->path = f->path;
		if (i < m->n_per_file) {
			fr->posts = m->per_file[i].posts;
			fr->completions = m->per_file[i].completions;
			fr->ctrl_calls = m->per_file[i].ctrl_calls;
		}
		/* the END record's counters, else the latest STATS record's */
		uint32_t n_end = 0;
		const struct fr_probe_stats *end = f->reader ? frec_end_probes(f->reader, &n_end) : NULL;
		for (uint32_t k = 0; end && k < n_end; k++) {
			if (!strncmp(end[k].name, "rdma_idle_polls", sizeof(end[k].name))) {
				fr->has_idle_polls = 1;
				fr->idle_polls = end[k].events;
			}
		}
		for (uint32_t k = 0; !end && k < f->n_stats_probes; k++) {
			if (!strcmp(f->stats_probes[k].name, "rdma_idle_polls")) {
				fr->has_idle_polls = 1;
				fr->idle_polls = f->stats_probes[k].events;
			}
		}
		for (size_t k = 0; k < f->n_rdma_counters; k++) {
			const struct ts_rdma_counter *tc = &f->rdma_counters[k];
			struct rdma_counter_row *cr = &r->counters[r->n_counters++];
			cr->file = (uint32_t)i;
			cr->host = f->hdr.host;
			memcpy(cr->name, tc->name, sizeof(cr->name));
			cr->total = tc->total;
			cr->max_delta = tc->max_delta;
			cr->max_per_s = tc->max_per_s;
			cr->samples = tc->samples;
		}
	}
	if (r->n_counters)
		qsort(r->counters, r->n_counters, sizeof(*r->counters), counter_cmp);
	return 0;
}

/* ---- finish --------------------------------------------------------------- */

static void free_acc(struct conn_acc *a)
{
	hist_free(&a->lat);
	for (size_t k = 0; k < a->c.n_rows; k++)
		hist_free(&a->row_lat[k]);
	free(a->row_lat);
	free(a->c.rows);
	a->row_lat = NULL;
	a->c.rows = NULL;
}

static int rdma_finish(void *state, struct trace_set *ts, struct frec_error *err)
{
	struct model_rdma *m = state;
	struct rdma_result *r = &m->result;
	if (replay(m))
		goto oom;
	/* the queues and events are spent */
	for (size_t i = 0; i < m->n_qps; i++) {
		free(m->qps[i].sq.v);
		free(m->qps[i].rq.v);
	}
	free(m->qps);
	m->qps = NULL;
	m->n_qps = 0;
	free(m->evs);
	m->evs = NULL;
	m->n_evs = 0;
	if (m->n_acc)
		qsort(m->acc, m->n_acc, sizeof(*m->acc), acc_cmp);
	for (size_t i = 0; i < m->n_acc; i++)
		label(ts, &m->acc[i].c.local);
	if (join(m) || files_and_counters(m, ts))
		goto oom;
	r->conns = calloc(m->n_acc ? m->n_acc : 1, sizeof(*r->conns));
	if (!r->conns)
		goto oom;
	for (size_t i = 0; i < m->n_acc; i++) {
		struct conn_acc *a = &m->acc[i];
		hist_summary(&a->lat, &a->c.latency);
		for (size_t k = 0; k < a->c.n_rows; k++)
			hist_summary(&a->row_lat[k], &a->c.rows[k].latency);
		if (a->c.n_rows)
			qsort(a->c.rows, a->c.n_rows, sizeof(*a->c.rows), op_row_cmp);
		r->conns[r->n_conns++] = a->c;
		for (size_t k = 0; k < a->c.n_rows; k++)
			hist_free(&a->row_lat[k]);
		a->c.rows = NULL; /* moved into the result */
		a->c.n_rows = 0;
		free_acc(a);
	}
	free(m->acc);
	m->acc = NULL;
	m->n_acc = 0;
	return 0;
oom:
	frec_error_set(err, "flightrec-analyze", -1, ENOMEM, "out of memory in the rdma model");
	return -1;
}

static void rdma_destroy(void *state)
{
	struct model_rdma *m = state;
	if (!m)
		return;
	for (size_t i = 0; i < m->n_qps; i++) {
		free(m->qps[i].sq.v);
		free(m->qps[i].rq.v);
	}
	free(m->qps);
	for (size_t i = 0; i < m->n_acc; i++)
		free_acc(&m->acc[i]);
	free(m->acc);
	free(m->evs);
	free(m->ctrls);
	free(m->per_file);
	hmap_free(&m->qp_by_key);
	for (size_t i = 0; i < m->result.n_conns; i++)
		free(m->result.conns[i].rows);
	free(m->result.conns);
	free(m->result.counters);
	free(m->result.files);
	free(m);
}

const struct rdma_result *model_rdma_result(const void *state)
{
	return &((const struct model_rdma *)state)->result;
}

const struct model_ops model_rdma_ops = {
	.name = "rdma",
	.create = rdma_create,
	.feed = rdma_feed,
	.finish = rdma_finish,
	.destroy = rdma_destroy,
};
