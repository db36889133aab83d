/* What one connection row of the RDMA model counts while the replay
 * retires work requests: ops and bytes (sends and receives apart), the
 * active span, post->completion latency of the row and per (opcode, size
 * bucket), error completions by status and class.  Not for deciding which
 * work request a completion retires (rdma_replay.c) nor for naming
 * statuses and opcodes (rdma_names.c).
 *
 * Latency percentiles come from lat_hist (RDMA_LATENCY_BITS): memory per
 * row follows the spread of its latencies, not the number of requests. */
#include "rdma_private.h"

#include <stdlib.h>
#include <string.h>

struct conn_acc *rdma_conn_new(struct model_rdma *m, struct qp *q)
{
	if (rdma_grow((void **)&m->acc, &m->cap_acc, m->n_acc + 1, sizeof(*m->acc)))
		return NULL;
	struct conn_acc *a = &m->acc[m->n_acc];
	memset(a, 0, sizeof(*a));
	lat_hist_init(&a->lat, RDMA_LATENCY_BITS);
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

void rdma_conn_note_time(struct rdma_conn *c, uint64_t ts)
{
	if (!c->first_ns || ts < c->first_ns)
		c->first_ns = ts;
	if (ts > c->last_ns)
		c->last_ns = ts;
}

static struct rdma_op_row *op_row(struct conn_acc *a, int recv, uint32_t opcode,
				  enum rdma_size_bucket b, struct lat_hist **lat)
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
		struct lat_hist *h = realloc(a->row_lat, n * sizeof(*h));
		if (!h)
			return NULL;
		a->row_lat = h;
		a->cap_rows = n;
	}
	struct rdma_op_row *r = &c->rows[c->n_rows];
	memset(r, 0, sizeof(*r));
	lat_hist_init(&a->row_lat[c->n_rows], RDMA_LATENCY_BITS);
	r->recv = recv;
	r->opcode = opcode;
	r->bucket = b;
	*lat = &a->row_lat[c->n_rows++];
	return r;
}

int rdma_conn_retire_ok(struct conn_acc *a, const struct pend *p, int recv, uint32_t opcode,
			uint64_t bytes, uint64_t done_ns)
{
	struct rdma_conn *c = &a->c;
	uint64_t lat = done_ns > p->post_ns ? done_ns - p->post_ns : 0;
	struct lat_hist *row_lat;
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
		if (lat_hist_add(&a->lat, lat))
			return -1;
	}
	rdma_conn_note_time(c, p->post_ns);
	return lat_hist_add(row_lat, lat);
}

void rdma_conn_count_status(struct rdma_conn *c, uint32_t status)
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

static void latency_of(const struct lat_hist *h, struct rdma_latency *out)
{
	out->count = h->count;
	out->min_ns = h->min_ns;
	out->max_ns = h->max_ns;
	out->sum_ns = h->sum_ns;
	out->p50_ns = lat_hist_quantile(h, 0.50);
	out->p99_ns = lat_hist_quantile(h, 0.99);
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

void rdma_conn_summarize(struct conn_acc *a)
{
	latency_of(&a->lat, &a->c.latency);
	for (size_t k = 0; k < a->c.n_rows; k++)
		latency_of(&a->row_lat[k], &a->c.rows[k].latency);
	/* row_lat stops being parallel to rows here: only freed from now on */
	if (a->c.n_rows)
		qsort(a->c.rows, a->c.n_rows, sizeof(*a->c.rows), op_row_cmp);
}

void rdma_conn_free(struct conn_acc *a)
{
	lat_hist_free(&a->lat);
	for (size_t k = 0; k < a->c.n_rows; k++)
		lat_hist_free(&a->row_lat[k]);
	free(a->row_lat);
	free(a->c.rows);
	a->row_lat = NULL;
	a->c.rows = NULL;
	a->c.n_rows = 0;
	a->cap_rows = 0;
}
