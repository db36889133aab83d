/* The RDMA verbs model: the model interface (create, feed, finish,
 * destroy) and the order of its stages.  Not for output (cmd_rdma.c) nor
 * for decoding the port counter records (trace_set.c sums them; this model
 * only reports).  The stages live apart (rdma_private.h lists them):
 * rdma_replay.c pairs work requests with completions, rdma_conn_stats.c
 * counts per connection, rdma_join.c joins the two ends, rdma_files.c adds
 * what the trace set knows.
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
 * Finish: replay, sort the connection rows (file, pid, qp_num, then
 * creation), label their ends, join them, add the files and port
 * counters, then move each row with its latencies into the result. */
#include "rdma_private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- state ---------------------------------------------------------------- */

int rdma_grow(void **v, size_t *cap, size_t need, size_t elem)
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
	if (!fc || rdma_grow((void **)&m->evs, &m->cap_evs, m->n_evs + 1, sizeof(*m->evs)))
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
		if (rdma_grow((void **)&m->ctrls, &m->cap_ctrls, m->n_ctrls + 1, sizeof(*m->ctrls)))
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

/* ---- finish --------------------------------------------------------------- */

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

static int rdma_finish(void *state, struct trace_set *ts, struct frec_error *err)
{
	struct model_rdma *m = state;
	struct rdma_result *r = &m->result;
	if (rdma_replay(m))
		goto oom;
	rdma_replay_free(m); /* the queues and events are spent */
	if (m->n_acc)
		qsort(m->acc, m->n_acc, sizeof(*m->acc), acc_cmp);
	for (size_t i = 0; i < m->n_acc; i++)
		rdma_label(ts, &m->acc[i].c.local);
	if (rdma_join(m) || rdma_files_and_counters(m, ts))
		goto oom;
	r->conns = calloc(m->n_acc ? m->n_acc : 1, sizeof(*r->conns));
	if (!r->conns)
		goto oom;
	for (size_t i = 0; i < m->n_acc; i++) {
		struct conn_acc *a = &m->acc[i];
		rdma_conn_summarize(a);
		r->conns[r->n_conns++] = a->c;
		a->c.rows = NULL; /* moved into the result */
		rdma_conn_free(a);
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
	rdma_replay_free(m);
	for (size_t i = 0; i < m->n_acc; i++)
		rdma_conn_free(&m->acc[i]);
	free(m->acc);
	free(m->per_file);
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
