/* The SQLite output: one database for any number of trace files, schema in
 * analyzer/SQLITE_SCHEMA.md (versioned in the meta table).  Events are
 * inserted while the decoder streams them (a sink registered like a model),
 * in transactions of OUT_SQLITE_BATCH rows, so memory stays bounded by live
 * state (distinct threads); metadata tables (files, hosts,
 * processes, threads, stacks, frames, drops, damage) and the indexes are
 * written after the pass.
 *
 * Not for analyses: tables filled by models (collectives, steps,
 * rdma_connections, rdma_ops, memory_series, memory_top_stacks, findings) get their
 * rows from those models' results through the out_sqlite_put_* calls below
 * (cmd_sqlite.c makes them after the pass). */
#ifndef FLIGHTREC_OUT_SQLITE_H
#define FLIGHTREC_OUT_SQLITE_H

#include <stddef.h>
#include <stdint.h>
#include "frec_error.h"

#define OUT_SQLITE_SCHEMA_VERSION 4
#define OUT_SQLITE_BATCH 50000

struct out_sqlite;
struct trace_set;

/* Creates the database at path (which must not exist) with every table. */
int out_sqlite_open(const char *path, struct out_sqlite **out, struct frec_error *err);

/* Registers the streaming sink with ts; call before trace_set_run. */
int out_sqlite_attach(struct out_sqlite *o, struct trace_set *ts, struct frec_error *err);

/* After trace_set_run: flushes the streamed state (the last step), writes the metadata tables and the indexes, and
 * commits. */
int out_sqlite_finish(struct out_sqlite *o, struct trace_set *ts, struct frec_error *err);

/* The rows of allocations and memory_inuse, from the GPU memory model's
 * ledger (model_mem_on_change(mem, out_sqlite_mem_change, o) before the
 * pass): one ledger for every output. */
struct mem_change;
int out_sqlite_mem_change(void *ctx, const struct mem_change *c);

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

struct out_sqlite_latency {
	uint64_t count, p50_ns, p99_ns, min_ns, max_ns, mean_ns;
};

/* One local queue pair's view of a connection (model_rdma's rdma_conn). */
struct out_sqlite_rdma_conn {
	uint64_t conn_id;         /* 1 + index in rdma_result.conns */
	uint32_t file_index, pid, local_qp;
	int64_t rank;             /* -1 unknown */
	int remote_qp_known;
	uint32_t remote_qp;
	uint64_t remote_conn_id;  /* 0: the other end is not in these traces */
	uint32_t remote_file_index, remote_pid;
	int64_t remote_rank;
	uint64_t ops, bytes, send_ops, recv_ops, errors, flush_errors;
	uint64_t retry_exhausted, rnr_retry_exhausted, remote_nak, local_errors, other_errors;
	uint64_t outstanding;
	struct out_sqlite_latency latency; /* successful send-queue work requests */
	int64_t first_ns, last_ns; /* common clock */
};
int out_sqlite_put_rdma_conn(struct out_sqlite *o, const struct out_sqlite_rdma_conn *c);

/* One (opcode, size bucket) of a connection. */
struct out_sqlite_rdma_op {
	uint64_t conn_id;
	uint32_t file_index, pid, qp_num;
	int is_recv;
	uint32_t opcode;
	const char *opcode_name, *size_bucket;
	uint64_t ops, bytes;
	struct out_sqlite_latency latency;
};
int out_sqlite_put_rdma_op(struct out_sqlite *o, const struct out_sqlite_rdma_op *op);

/* One (file, pid, device, memory kind) ledger of model_mem. */
struct out_sqlite_mem_series {
	uint32_t file_index, pid;
	int32_t device;           /* -1 unknown (pinned host memory) */
	const char *mem_kind;     /* "device", "host_pinned" */
	uint64_t allocs, alloc_bytes, frees, failed, before_frees;
	uint64_t peak_bytes;
	int64_t peak_ns;          /* common clock */
	uint64_t end_bytes, end_count;
	int caching_allocator;
};
int out_sqlite_put_mem_series(struct out_sqlite *o, const struct out_sqlite_mem_series *m);

/* A top stack of a series: at its peak ("peak") or live at the end ("leak"). */
struct out_sqlite_mem_stack {
	uint32_t file_index, pid;
	int32_t device;
	const char *mem_kind, *kind;
	int position;             /* 1 = most bytes */
	uint32_t stack_id;
	uint64_t bytes, allocations;
};
int out_sqlite_put_mem_stack(struct out_sqlite *o, const struct out_sqlite_mem_stack *m);

/* One finding of model_findings (listed: above the threshold, else one of
 * its `below`), position 1.. in the findings command's order. */
struct finding;
int out_sqlite_put_finding(struct out_sqlite *o, const struct finding *f, int position,
			   int listed);

/* The generic table events_<record name> for an event type (columns from
 * its family's descriptor: out_sqlite_generic.c), filled from then on.
 * out_sqlite_attach makes one for every type no hand-written table covers;
 * calling it for a covered type fills both (tests compare them).  Before
 * trace_set_run; 0, or -1 for a type no family has or a failure. */
int out_sqlite_event_table(struct out_sqlite *o, uint16_t type);

#endif
