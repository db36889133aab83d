/* The SQLite writer's own view of itself, shared by its parts and nothing
 * else: out_sqlite.c (open, batches, finish, close), out_sqlite_schema.c
 * (the SQL text), out_sqlite_events.c (the streaming sink),
 * out_sqlite_mem.c (the memory ledger's rows), out_sqlite_models.c (the
 * out_sqlite_put_* hooks), out_sqlite_meta.c and out_sqlite_stacks.c (the tables written at
 * finish).  Everything else goes through out_sqlite.h.
 *
 * Values are always bound as parameters, never pasted into SQL. */
#ifndef FLIGHTREC_OUT_SQLITE_IMPL_H
#define FLIGHTREC_OUT_SQLITE_IMPL_H

#include "out_sqlite.h"
#include "out_common.h"
#include "fr_family.h"
#include "hmap.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* The inserts prepared once at open, one per table rows are streamed or
 * put into; their text is sq_stmt_sql[id] (out_sqlite_schema.c). */
enum stmt_id {
	ST_CPU, ST_SYSCALL, ST_CUDA, ST_ALLOC, ST_INUSE, ST_NCCL, ST_STEP_MARK,
	ST_RDMA_CTRL, ST_RDMA_POST, ST_RDMA_CQE, ST_PROC_EVENT,
	ST_COLLECTIVE, ST_STEP, ST_RDMA_CONN, ST_RDMA_OP, ST_MEM_SERIES, ST_MEM_STACK, ST_FINDING,
	ST_COUNT
};

struct out_sqlite {
	sqlite3 *db;
	sqlite3_stmt *st[ST_COUNT];
	struct trace_set *ts;
	int64_t *offsets;        /* per file: out_clock_offset_ns, final (filled at
				    the first row: after the decoder's align stage) */
	size_t n_offsets;
	int offsets_ready;
	uint64_t rows, in_batch;
	int in_txn;
	int failed;
	char what[200];          /* the first SQLite error */
	struct hmap threads;     /* (file << 32 | pid, tid) -> events */
	struct sq_generic *generic[0x100]; /* per event type: its events_<name>
					      table (out_sqlite_generic.c) */
};

/* ---- the SQL text (out_sqlite_schema.c) ---------------------------------- */

extern const char sq_schema_sql[];               /* every table */
extern const char sq_index_sql[];                /* the indexes, made at finish */
extern const char *const sq_stmt_sql[ST_COUNT];  /* the prepared inserts */

/* ---- the connection (out_sqlite.c) --------------------------------------- */

/* Records the first failure ("SQLite: <doing>: <sqlite's message>") in
 * o->what and marks o failed; returns -1. */
int sq_fail(struct out_sqlite *o, const char *doing);

/* Opens a transaction when none is open. */
int sq_begin(struct out_sqlite *o);

/* Steps and resets one insert; commits every OUT_SQLITE_BATCH rows. */
int sq_put(struct out_sqlite *o, sqlite3_stmt *st);

/* A statement prepared for one table at finish; NULL (o failed) on error. */
sqlite3_stmt *sq_prep(struct out_sqlite *o, const char *sql);

/* ---- the generic event tables (out_sqlite_generic.c) ---------------------- */

struct ev_item;
/* One row of e's events_<name> table, when its type has one. */
int sq_generic_put(struct out_sqlite *o, const struct ev_item *e);
void sq_generic_free(struct out_sqlite *o);

/* ---- the tables written at finish ---------------------------------------- */

/* enums, hosts, files, processes, threads, drops, drop_reasons,
 * damaged_regions (out_sqlite_meta.c), and the stacks through
 * sq_write_stacks. */
int sq_write_metadata(struct out_sqlite *o, struct trace_set *ts, struct frec_error *err);

/* frames, stacks, stack_frames (out_sqlite_stacks.c). */
int sq_write_stacks(struct out_sqlite *o, struct trace_set *ts, struct frec_error *err);

/* ---- binding ------------------------------------------------------------- */

static inline void bi(sqlite3_stmt *st, int col, int64_t v)
{
	sqlite3_bind_int64(st, col, v);
}

static inline void bu(sqlite3_stmt *st, int col, uint64_t v)
{
	sqlite3_bind_int64(st, col, (int64_t)v); /* addresses: two's complement */
}

static inline void bnull(sqlite3_stmt *st, int col)
{
	sqlite3_bind_null(st, col);
}

static inline void bt(sqlite3_stmt *st, int col, const char *s)
{
	if (s)
		sqlite3_bind_text(st, col, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, col);
}

/* stack_id 0 ("no stack") is NULL in every table. */
static inline void bstack(sqlite3_stmt *st, int col, uint32_t stack_id)
{
	if (stack_id)
		bi(st, col, stack_id);
	else
		bnull(st, col);
}

/* The common-clock offset of a file's times (0 for a file the sink was not
 * attached for).  Rows are written only once the decoder has made the
 * offsets final (align.h), so they are final from the first row: no time
 * is rewritten afterwards. */
static inline int64_t file_offset(struct out_sqlite *o, uint32_t file_index)
{
	if (!o->offsets_ready) {
		for (size_t i = 0; i < o->n_offsets; i++)
			o->offsets[i] = out_clock_offset_ns(o->ts, i);
		o->offsets_ready = 1;
	}
	return file_index < o->n_offsets ? o->offsets[file_index] : 0;
}

/* A file's time on the common clock.  Wraps like the clock arithmetic
 * elsewhere instead of overflowing a signed add (undefined behaviour on a
 * hostile file's times; found by fuzz_outputs). */
static inline int64_t sq_time_ns(struct out_sqlite *o, uint32_t file_index, uint64_t ts_ns)
{
	return (int64_t)(ts_ns + (uint64_t)file_offset(o, file_index));
}

#endif
