/* The SQLite writer's connection (see out_sqlite.h): open (the schema, the
 * meta rows, the prepared inserts), the batched transactions every part
 * inserts through, finish (the metadata tables, then the indexes) and
 * close.  The parts and what they share: out_sqlite_impl.h.
 *
 * Not for rows: events are streamed by out_sqlite_events.c and
 * out_sqlite_mem.c, model results put by out_sqlite_models.c, metadata
 * written by out_sqlite_meta.c; nor for analyses (models), nor the command
 * line (cmd_sqlite.c). */
#include "out_sqlite_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int sq_fail(struct out_sqlite *o, const char *doing)
{
	if (!o->failed) {
		snprintf(o->what, sizeof(o->what), "SQLite: %s: %s", doing,
			 o->db ? sqlite3_errmsg(o->db) : "out of memory");
		o->failed = 1;
	}
	return -1;
}

/* Runs sql outside the batches (pragmas, schema, indexes, transactions). */
static int exec(struct out_sqlite *o, const char *sql)
{
	char *msg = NULL;
	if (sqlite3_exec(o->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		if (!o->failed) {
			snprintf(o->what, sizeof(o->what), "SQLite: %s", msg ? msg : "error");
			o->failed = 1;
		}
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

int sq_begin(struct out_sqlite *o)
{
	if (o->in_txn)
		return 0;
	if (exec(o, "BEGIN"))
		return -1;
	o->in_txn = 1;
	o->in_batch = 0;
	return 0;
}

static int commit(struct out_sqlite *o)
{
	if (!o->in_txn)
		return 0;
	o->in_txn = 0;
	return exec(o, "COMMIT");
}

int sq_put(struct out_sqlite *o, sqlite3_stmt *st)
{
	if (o->failed || sq_begin(o))
		return -1;
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE)
		return sq_fail(o, "insert");
	o->rows++;
	if (++o->in_batch >= OUT_SQLITE_BATCH)
		return commit(o);
	return 0;
}

sqlite3_stmt *sq_prep(struct out_sqlite *o, const char *sql)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(o->db, sql, -1, &st, NULL) != SQLITE_OK) {
		sq_fail(o, "prepare");
		return NULL;
	}
	return st;
}

int out_sqlite_open(const char *path, struct out_sqlite **out, struct frec_error *err)
{
	struct out_sqlite *o = calloc(1, sizeof(*o));
	if (!o) {
		frec_error_set(err, path, -1, ENOMEM, "out of memory");
		return -1;
	}
	hmap_init(&o->threads);
	if (sqlite3_open_v2(path, &o->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
		sq_fail(o, "open");
		goto fail;
	}
	/* A fresh file nobody reads until we are done: no journal, no fsync
	 * per batch (the command renames it into place only when complete). */
	if (exec(o, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-16384;"
		    "PRAGMA temp_store=FILE;") ||
	    exec(o, "BEGIN") || exec(o, sq_schema_sql))
		goto fail;
	char version[16];
	snprintf(version, sizeof(version), "%d", OUT_SQLITE_SCHEMA_VERSION);
	sqlite3_stmt *m;
	if (sqlite3_prepare_v2(o->db, "INSERT INTO meta VALUES(?,?)", -1, &m, NULL) != SQLITE_OK) {
		sq_fail(o, "prepare");
		goto fail;
	}
	const char *kv[][2] = {
		{ "schema_version", version },
		{ "generator", "flightrec-analyze sqlite" },
		{ "time_unit", "ns" },
		{ "clock", "common clock: UTC ns since the epoch (file clock + files.clock_offset_ns)" },
		{ "doc", "analyzer/SQLITE_SCHEMA.md" },
	};
	for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++) {
		bt(m, 1, kv[i][0]);
		bt(m, 2, kv[i][1]);
		if (sqlite3_step(m) != SQLITE_DONE) {
			sqlite3_finalize(m);
			sq_fail(o, "meta");
			goto fail;
		}
		sqlite3_reset(m);
	}
	sqlite3_finalize(m);
	if (exec(o, "COMMIT"))
		goto fail;
	for (int i = 0; i < ST_COUNT; i++) {
		if (sqlite3_prepare_v2(o->db, sq_stmt_sql[i], -1, &o->st[i], NULL) != SQLITE_OK) {
			sq_fail(o, "prepare");
			goto fail;
		}
	}
	*out = o;
	return 0;
fail:
	frec_error_set(err, path, -1, EIO, "%s", o->what);
	out_sqlite_close(o);
	return -1;
}

void out_sqlite_close(struct out_sqlite *o)
{
	if (!o)
		return;
	for (int i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(o->st[i]);
	sq_generic_free(o);
	if (o->db)
		sqlite3_close(o->db);
	hmap_free(&o->threads);
	free(o->offsets);
	free(o);
}

uint64_t out_sqlite_rows(const struct out_sqlite *o)
{
	return o->rows;
}

/* The metadata tables, then the indexes (made after the load: faster than
 * maintaining them row by row) and ANALYZE. */
int out_sqlite_finish(struct out_sqlite *o, struct trace_set *ts, struct frec_error *err)
{
	int rc = sq_write_metadata(o, ts, err);
	if (!rc)
		rc = commit(o);
	if (!rc)
		rc = exec(o, "BEGIN");
	if (!rc)
		rc = exec(o, sq_index_sql);
	if (!rc)
		rc = exec(o, "COMMIT");
	if (!rc)
		rc = exec(o, "ANALYZE");
	if (rc) {
		if (o->failed)
			frec_error_set(err, "sqlite", -1, EIO, "%s", o->what);
		else if (!err->what[0])
			frec_error_set(err, "sqlite", -1, ENOMEM, "out of memory writing the database");
	}
	return rc;
}

const char *out_sqlite_error(const struct out_sqlite *o)
{
	return o->failed ? o->what : NULL;
}
