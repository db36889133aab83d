/* The tables models fill, one row per out_sqlite_put_* call
 * (collectives, steps, rdma_connections, rdma_ops, memory_series,
 * memory_top_stacks, findings): cmd_sqlite.c makes the calls after the pass, from
 * the models' results, with times already on the common clock.
 *
 * Not for computing anything: the rows are the models' results as given
 * (only duration_ns is derived, end minus start); values out_sqlite.h
 * marks unknown are NULL. */
#include "out_sqlite_impl.h"
#include "model_findings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -1 (unknown) is NULL */
static void bopt(sqlite3_stmt *st, int col, int64_t v)
{
	if (v >= 0)
		bi(st, col, v);
	else
		bnull(st, col);
}

int out_sqlite_put_collective(struct out_sqlite *o, const struct out_sqlite_collective *c)
{
	sqlite3_stmt *st = o->st[ST_COLLECTIVE];
	bi(st, 1, c->file_index);
	bi(st, 2, c->pid);
	bopt(st, 3, c->rank);
	bu(st, 4, c->comm_uid_hash);
	bu(st, 5, c->collective_seq);
	bi(st, 6, c->func);
	bu(st, 7, c->count);
	bu(st, 8, c->bytes);
	bi(st, 9, c->datatype);
	bi(st, 10, c->start_ns);
	bi(st, 11, c->end_ns);
	bi(st, 12, c->end_ns - c->start_ns);
	bopt(st, 13, c->wait_ns);
	bopt(st, 14, c->step);
	return sq_put(o, st);
}

int out_sqlite_put_step(struct out_sqlite *o, const struct out_sqlite_step *s)
{
	sqlite3_stmt *st = o->st[ST_STEP];
	bi(st, 1, s->file_index);
	bi(st, 2, s->pid);
	bopt(st, 3, s->rank);
	bu(st, 4, s->step);
	bi(st, 5, s->start_ns);
	bi(st, 6, s->end_ns);
	bi(st, 7, s->end_ns - s->start_ns);
	bopt(st, 8, s->compute_ns);
	bopt(st, 9, s->wait_ns);
	return sq_put(o, st);
}

int out_sqlite_put_rdma_conn(struct out_sqlite *o, const struct out_sqlite_rdma_conn *c)
{
	sqlite3_stmt *st = o->st[ST_RDMA_CONN];
	bu(st, 1, c->conn_id);
	bi(st, 2, c->file_index);
	bi(st, 3, c->pid);
	bopt(st, 4, c->rank);
	bi(st, 5, c->local_qp);
	if (c->remote_qp_known)
		bi(st, 6, c->remote_qp);
	if (c->remote_conn_id) {
		bi(st, 7, c->remote_file_index);
		bi(st, 8, c->remote_pid);
		bopt(st, 9, c->remote_rank);
		bu(st, 10, c->remote_conn_id);
	}
	bu(st, 11, c->ops);
	bu(st, 12, c->bytes);
	bu(st, 13, c->send_ops);
	bu(st, 14, c->recv_ops);
	bu(st, 15, c->errors);
	bu(st, 16, c->flush_errors);
	bu(st, 17, c->retry_exhausted);
	bu(st, 18, c->rnr_retry_exhausted);
	bu(st, 19, c->remote_nak);
	bu(st, 20, c->local_errors);
	bu(st, 21, c->other_errors);
	bu(st, 22, c->outstanding);
	bu(st, 23, c->latency.count);
	if (c->latency.count) {
		bu(st, 24, c->latency.p50_ns);
		bu(st, 25, c->latency.p99_ns);
		bu(st, 26, c->latency.min_ns);
		bu(st, 27, c->latency.max_ns);
		bu(st, 28, c->latency.mean_ns);
	}
	if (c->ops || c->first_ns) {
		bi(st, 29, c->first_ns);
		bi(st, 30, c->last_ns);
	}
	return sq_put(o, st);
}

int out_sqlite_put_rdma_op(struct out_sqlite *o, const struct out_sqlite_rdma_op *op)
{
	sqlite3_stmt *st = o->st[ST_RDMA_OP];
	bu(st, 1, op->conn_id);
	bi(st, 2, op->file_index);
	bi(st, 3, op->pid);
	bi(st, 4, op->qp_num);
	bi(st, 5, op->is_recv);
	bi(st, 6, op->opcode);
	bt(st, 7, op->opcode_name);
	bt(st, 8, op->size_bucket);
	bu(st, 9, op->ops);
	bu(st, 10, op->bytes);
	bu(st, 11, op->latency.count);
	if (op->latency.count) {
		bu(st, 12, op->latency.p50_ns);
		bu(st, 13, op->latency.p99_ns);
		bu(st, 14, op->latency.min_ns);
		bu(st, 15, op->latency.max_ns);
		bu(st, 16, op->latency.mean_ns);
	}
	return sq_put(o, st);
}

int out_sqlite_put_mem_series(struct out_sqlite *o, const struct out_sqlite_mem_series *m)
{
	sqlite3_stmt *st = o->st[ST_MEM_SERIES];
	bi(st, 1, m->file_index);
	bi(st, 2, m->pid);
	if (m->device >= 0)
		bi(st, 3, m->device);
	bt(st, 4, m->mem_kind);
	bu(st, 5, m->allocs);
	bu(st, 6, m->alloc_bytes);
	bu(st, 7, m->frees);
	bu(st, 8, m->failed);
	bu(st, 9, m->before_frees);
	bu(st, 10, m->peak_bytes);
	bi(st, 11, m->peak_ns);
	bu(st, 12, m->end_bytes);
	bu(st, 13, m->end_count);
	bi(st, 14, m->caching_allocator);
	return sq_put(o, st);
}

int out_sqlite_put_mem_stack(struct out_sqlite *o, const struct out_sqlite_mem_stack *m)
{
	sqlite3_stmt *st = o->st[ST_MEM_STACK];
	bi(st, 1, m->file_index);
	bi(st, 2, m->pid);
	if (m->device >= 0)
		bi(st, 3, m->device);
	bt(st, 4, m->mem_kind);
	bt(st, 5, m->kind);
	bi(st, 6, m->position);
	bstack(st, 7, m->stack_id);
	bu(st, 8, m->bytes);
	bu(st, 9, m->allocations);
	return sq_put(o, st);
}

/* Items joined by sep into a malloc'd string ("" when none); NULL when
 * memory runs out. */
static char *joined(size_t n, const char *(*item)(const struct finding *, size_t, char *),
		    const struct finding *f, const char *sep)
{
	size_t len = 1;
	char num[24];
	for (size_t i = 0; i < n; i++)
		len += strlen(item(f, i, num)) + strlen(sep);
	char *s = malloc(len), *at = s;
	if (!s)
		return NULL;
	*s = '\0';
	for (size_t i = 0; i < n; i++) {
		const char *v = item(f, i, num);
		at += sprintf(at, "%s%s", i ? sep : "", v);
	}
	return s;
}

static const char *pid_item(const struct finding *f, size_t i, char *num)
{
	snprintf(num, 24, "%u", f->pids[i]);
	return num;
}

static const char *rank_item(const struct finding *f, size_t i, char *num)
{
	snprintf(num, 24, "%d", f->ranks[i]);
	return num;
}

static const char *where_item(const struct finding *f, size_t i, char *num)
{
	(void)num;
	return f->where[i] ? f->where[i] : "[unknown]";
}

int out_sqlite_put_finding(struct out_sqlite *o, const struct finding *f, int position, int listed)
{
	sqlite3_stmt *st = o->st[ST_FINDING];
	/* ranks: one per pid, -1 unknown; the column lists the known ones */
	size_t n_ranks = 0;
	for (size_t i = 0; i < f->n_pids; i++)
		n_ranks += f->ranks[i] >= 0;
	struct finding known = *f;
	int32_t *ranks = malloc((n_ranks ? n_ranks : 1) * sizeof(*ranks));
	char *pids = joined(f->n_pids, pid_item, f, ",");
	char *where = joined(f->n_where, where_item, f, ";");
	char *rank_text = NULL;
	if (ranks) {
		n_ranks = 0;
		for (size_t i = 0; i < f->n_pids; i++)
			if (f->ranks[i] >= 0)
				ranks[n_ranks++] = f->ranks[i];
		known.ranks = ranks;
		rank_text = joined(n_ranks, rank_item, &known, ",");
	}
	int rc;
	if (!ranks || !pids || !where || !rank_text) {
		rc = -1;
	} else {
		bi(st, 1, position);
		bi(st, 2, listed);
		bt(st, 3, finding_kind_name(f->kind));
		if (f->has_cost) {
			sqlite3_bind_double(st, 4, f->cost_ms);
			sqlite3_bind_double(st, 5, f->cost_ms_per_step);
			sqlite3_bind_double(st, 6, f->share);
		}
		bt(st, 7, pids);
		bt(st, 8, rank_text);
		bt(st, 9, where);
		bt(st, 10, f->evidence);
		bt(st, 11, f->fix);
		rc = sq_put(o, st);
	}
	free(ranks);
	free(pids);
	free(where);
	free(rank_text);
	return rc;
}
