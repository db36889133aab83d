/* Rows for one ClickHouse table, sent in batches: each row one JSON object
 * (FORMAT JSONEachRow, which 18.16 and current servers both read), every
 * string escaped by out_json_str (quotes, backslashes, control characters
 * as \uXXXX; invalid UTF-8 as U+FFFD), so any name from a hostile trace
 * arrives as it was.  A batch is posted when it passes CH_BATCH_BYTES and
 * at ch_batch_finish.  Not for what the rows hold (ch_rows.c). */
#ifndef FLIGHTREC_CH_BATCH_H
#define FLIGHTREC_CH_BATCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CH_BATCH_BYTES (4u << 20)

struct ch_target {
	const char *url;
	const char *database;
	char err[512];     /* the first failure, one line */
	uint64_t rows;     /* rows sent, all tables */
};

struct ch_batch {
	struct ch_target *t;
	const char *table;
	char *buf;
	size_t len;
	FILE *f;           /* the current row's stream into buf */
	uint64_t rows;
	int first_field;
	int failed;
};

/* 0, or -1 with t->err set. */
int ch_batch_open(struct ch_batch *b, struct ch_target *t, const char *table);
/* A row: begin, fields, end (which may post the batch). */
void ch_row_begin(struct ch_batch *b);
void ch_str(struct ch_batch *b, const char *name, const char *value);
void ch_u64(struct ch_batch *b, const char *name, uint64_t v);
void ch_i64(struct ch_batch *b, const char *name, int64_t v);
/* null when !isfinite(v) or is_null */
void ch_f64(struct ch_batch *b, const char *name, double v, int is_null);
void ch_str_array(struct ch_batch *b, const char *name, const char *const *v, size_t n);
/* v as a JSON array of strings (NULL as "[unknown]"). */
void ch_json_str_array(FILE *f, const char *const *v, size_t n);
void ch_i64_array(struct ch_batch *b, const char *name, const int64_t *v, size_t n);
void ch_u64_array(struct ch_batch *b, const char *name, const uint64_t *v, size_t n);
int ch_row_end(struct ch_batch *b);
/* Posts what is left and frees the batch: 0, or -1 with t->err set. */
int ch_batch_finish(struct ch_batch *b);
/* Frees without posting (after a failure). */
void ch_batch_drop(struct ch_batch *b);

/* A statement without rows (DDL, ALTER ... DELETE, SELECT): 0 with the
 * answer in *reply (may be NULL), or -1 with t->err set. */
int ch_query(struct ch_target *t, const char *sql, char **reply);

#endif
