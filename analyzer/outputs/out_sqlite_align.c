/* The final clock of the SQLite output: streamed rows carry their file's
 * clock offset of the moment they were written; once the models
 * (model_nccl's cross-node alignment included) have finished, one UPDATE
 * per time column moves each file's rows by the difference to
 * out_clock_offset_ns.  time_columns must list every common-clock column
 * out_sqlite_events.c and out_sqlite_mem.c write.
 *
 * Not for rows written after the pass (model tables, metadata): those are
 * written at the final offset already. */
#include "out_sqlite_impl.h"
#include "out_common.h"
#include "trace_set.h"

#include <errno.h>
#include <stdio.h>

/* Streamed times (columns holding common-clock instants). */
static const char *const time_columns[][2] = {
	{ "process_events", "ts_ns" }, { "cpu_samples", "ts_ns" }, { "syscalls", "ts_ns" },
	{ "cuda_calls", "ts_ns" }, { "allocations", "alloc_ns" }, { "allocations", "free_ns" },
	{ "memory_inuse", "ts_ns" }, { "nccl_calls", "ts_ns" }, { "step_marks", "ts_ns" },
	{ "rdma_ctrl_calls", "ts_ns" }, { "rdma_posts", "ts_ns" }, { "rdma_completions", "ts_ns" },
};

int out_sqlite_align(struct out_sqlite *o, struct trace_set *ts, struct frec_error *err)
{
	if (o->aligned)
		return 0;
	o->aligned = 1;
	for (size_t i = 0; i < o->n_offsets && i < trace_set_count(ts); i++) {
		int64_t final = out_clock_offset_ns(ts, i);
		int64_t delta = final - o->offsets[i];
		if (!delta)
			continue;
		for (size_t k = 0; k < sizeof(time_columns) / sizeof(time_columns[0]); k++) {
			char sql[160];
			snprintf(sql, sizeof(sql), "UPDATE %s SET %s = %s + ?1 WHERE file_id = ?2",
				 time_columns[k][0], time_columns[k][1], time_columns[k][1]);
			sqlite3_stmt *st = NULL;
			if (sq_begin(o) || sqlite3_prepare_v2(o->db, sql, -1, &st, NULL) != SQLITE_OK) {
				sqlite3_finalize(st);
				sq_fail(o, "prepare");
				frec_error_set(err, "sqlite", -1, EIO, "%s", o->what);
				return -1;
			}
			sqlite3_bind_int64(st, 1, delta);
			sqlite3_bind_int64(st, 2, (int64_t)i);
			int rc = sqlite3_step(st);
			sqlite3_finalize(st);
			if (rc != SQLITE_DONE) {
				sq_fail(o, "update");
				frec_error_set(err, "sqlite", -1, EIO, "%s", o->what);
				return -1;
			}
		}
		o->offsets[i] = final;
	}
	return 0;
}
