/* The SQLite output: one database for any number of trace files, schema in
 * analyzer/SQLITE_SCHEMA.md (versioned in the meta table).  Events are
 * inserted while the decoder streams them (a sink registered like a model),
 * in transactions of OUT_SQLITE_BATCH rows, so memory stays bounded by live
 * state (open allocations, distinct threads); metadata tables (files, hosts,
 * processes, threads, stacks, frames, drops, damage) and the indexes are
 * written after the pass.
 *
 * Not for analyses: tables filled by models (collectives, steps,
 * rdma_connections, rdma_ops) get their rows from those models' results
 * through the out_sqlite_put_* hooks below. */
#ifndef FLIGHTREC_OUT_SQLITE_H
#define FLIGHTREC_OUT_SQLITE_H

#include <stddef.h>
#include <stdint.h>
#include "frec_error.h"

#define OUT_SQLITE_SCHEMA_VERSION 1
#define OUT_SQLITE_BATCH 50000

struct out_sqlite;
struct trace_set;

/* Creates the database at path (which must not exist) with every table. */
int out_sqlite_open(const char *path, struct out_sqlite **out, struct frec_error *err);

/* Registers the streaming sink with ts; call before trace_set_run. */
int out_sqlite_attach(struct out_sqlite *o, struct trace_set *ts, struct frec_error *err);

/* After trace_set_run: flushes the streamed state (open allocations become
 * leaks, the last step), writes the metadata tables and the indexes, and
 * commits. */
int out_sqlite_finish(struct out_sqlite *o, struct trace_set *ts, struct frec_error *err);

/* Closes the database (rolls back what was not committed). */
void out_sqlite_close(struct out_sqlite *o);

/* The first SQLite error ("SQLite: insert: disk I/O error"), NULL when none. */
const char *out_sqlite_error(const struct out_sqlite *o);

/* Rows inserted so far (events and metadata). */
uint64_t out_sqlite_rows(const struct out_sqlite *o);

/* ---- hooks for model-filled tables (see SQLITE_SCHEMA.md) ------------- */

struct out_sqlite_collective {
	uint32_t file_index, pid;
	int64_t rank;            /* -1 unknown */
	uint64_t comm_uid_hash, collective_seq;
	uint32_t func;           /* enum fr_nccl_func */
	uint64_t count, bytes;
	uint32_t datatype;
	int64_t start_ns, end_ns; /* common clock */
	int64_t wait_ns;          /* -1 unknown */
	int64_t step;             /* -1 unknown */
};
int out_sqlite_put_collective(struct out_sqlite *o, const struct out_sqlite_collective *c);

struct out_sqlite_step {
	uint32_t file_index, pid;
	int64_t rank;             /* -1 unknown */
	uint64_t step;
	int64_t start_ns, end_ns; /* common clock */
	int64_t compute_ns, wait_ns; /* -1 unknown */
};
int out_sqlite_put_step(struct out_sqlite *o, const struct out_sqlite_step *s);

struct out_sqlite_rdma_conn {
	uint64_t conn_id;
	uint32_t file_index, pid, local_qp, remote_qp;
	uint64_t ops, bytes, errors;
	int64_t first_ns, last_ns;
};
int out_sqlite_put_rdma_conn(struct out_sqlite *o, const struct out_sqlite_rdma_conn *c);

struct out_sqlite_rdma_op {
	uint64_t conn_id;
	uint32_t file_index, pid, qp_num;
	uint64_t wr_id;
	uint32_t opcode, status;
	uint64_t bytes;
	int64_t post_ns, complete_ns; /* common clock; complete -1 when never */
};
int out_sqlite_put_rdma_op(struct out_sqlite *o, const struct out_sqlite_rdma_op *op);

#endif
