/* The ClickHouse tables of the export, as DDL (the portable subset that
 * Debian 12's clickhouse-server 18.16 and current servers both accept:
 * String, DateTime, UInt64/Int64, Float64, Nullable, Array, MergeTree
 * with PARTITION BY toYYYYMM(start); no LowCardinality, CODEC nor TTL),
 * and for each how its rows of given recordings are found again, for the
 * delete that makes the export idempotent.  Columns and meaning:
 * analyzer/CLICKHOUSE.md; keep both in step. */
#ifndef FLIGHTREC_CH_SCHEMA_H
#define FLIGHTREC_CH_SCHEMA_H

#include <stddef.h>

struct ch_table {
	const char *name;
	const char *columns;  /* the part between CREATE TABLE's parentheses */
	const char *order_by;
	/* a row belongs to recording set S when: "recording_id IN S"
	 * (recording_id), or its job_id is of a job of S's recordings (job
	 * rows, job_recordings: the jobs of S as job_recordings lists them,
	 * and this export's) */
	const char *key;      /* "recording_id" or "job_id" */
};

extern const struct ch_table ch_tables[];
extern const size_t ch_n_tables;

#endif
