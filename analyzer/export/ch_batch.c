/* JSONEachRow batches for the ClickHouse export; see ch_batch.h. */
#include "ch_batch.h"
#include "ch_http.h"
#include "out_common.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int ch_query(struct ch_target *t, const char *sql, char **reply)
{
	char err[sizeof(t->err)];
	if (ch_http_post(t->url, sql, "", 0, reply, err, sizeof(err))) {
		if (!t->err[0])
			snprintf(t->err, sizeof(t->err), "%s", err);
		return -1;
	}
	return 0;
}

static int reopen(struct ch_batch *b)
{
	free(b->buf);
	b->buf = NULL;
	b->len = 0;
	b->f = open_memstream(&b->buf, &b->len);
	if (!b->f) {
		snprintf(b->t->err, sizeof(b->t->err), "out of memory");
		return -1;
	}
	return 0;
}

int ch_batch_open(struct ch_batch *b, struct ch_target *t, const char *table)
{
	memset(b, 0, sizeof(*b));
	b->t = t;
	b->table = table;
	return reopen(b);
}

static int post(struct ch_batch *b)
{
	if (fflush(b->f) || ferror(b->f)) {
		snprintf(b->t->err, sizeof(b->t->err), "out of memory");
		return -1;
	}
	if (!b->len)
		return 0;
	char sql[256];
	snprintf(sql, sizeof(sql), "INSERT INTO %s.%s FORMAT JSONEachRow", b->t->database, b->table);
	char err[sizeof(b->t->err)];
	if (ch_http_post(b->t->url, sql, b->buf, b->len, NULL, err, sizeof(err))) {
		if (!b->t->err[0]) {
			size_t n = strlen(err) < 400 ? strlen(err) : 400;
			snprintf(b->t->err, sizeof(b->t->err), "%.*s (inserting into %s)", (int)n, err,
				 b->table);
		}
		return -1;
	}
	b->t->rows += b->rows;
	b->rows = 0;
	fclose(b->f);
	b->f = NULL;
	return reopen(b);
}

static void key(struct ch_batch *b, const char *name)
{
	fputs(b->first_field ? "\"" : ",\"", b->f);
	fputs(name, b->f); /* names are the code's own identifiers */
	fputs("\":", b->f);
	b->first_field = 0;
}

void ch_row_begin(struct ch_batch *b)
{
	fputc('{', b->f);
	b->first_field = 1;
}

void ch_str(struct ch_batch *b, const char *name, const char *value)
{
	key(b, name);
	out_json_str(b->f, value ? value : "");
}

void ch_u64(struct ch_batch *b, const char *name, uint64_t v)
{
	key(b, name);
	fprintf(b->f, "%" PRIu64, v);
}

void ch_i64(struct ch_batch *b, const char *name, int64_t v)
{
	key(b, name);
	fprintf(b->f, "%" PRId64, v);
}

void ch_f64(struct ch_batch *b, const char *name, double v, int is_null)
{
	key(b, name);
	if (is_null || !isfinite(v))
		fputs("null", b->f);
	else
		fprintf(b->f, "%.17g", v);
}

void ch_json_str_array(FILE *f, const char *const *v, size_t n)
{
	fputc('[', f);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', f);
		out_json_str(f, v[i] ? v[i] : "[unknown]");
	}
	fputc(']', f);
}

void ch_str_array(struct ch_batch *b, const char *name, const char *const *v, size_t n)
{
	key(b, name);
	ch_json_str_array(b->f, v, n);
}

void ch_i64_array(struct ch_batch *b, const char *name, const int64_t *v, size_t n)
{
	key(b, name);
	fputc('[', b->f);
	for (size_t i = 0; i < n; i++)
		fprintf(b->f, "%s%" PRId64, i ? "," : "", v[i]);
	fputc(']', b->f);
}

void ch_u64_array(struct ch_batch *b, const char *name, const uint64_t *v, size_t n)
{
	key(b, name);
	fputc('[', b->f);
	for (size_t i = 0; i < n; i++)
		fprintf(b->f, "%s%" PRIu64, i ? "," : "", v[i]);
	fputc(']', b->f);
}

int ch_row_end(struct ch_batch *b)
{
	fputs("}\n", b->f);
	b->rows++;
	if (fflush(b->f)) {
		snprintf(b->t->err, sizeof(b->t->err), "out of memory");
		return -1;
	}
	return b->len >= CH_BATCH_BYTES ? post(b) : 0;
}

int ch_batch_finish(struct ch_batch *b)
{
	int rc = post(b);
	ch_batch_drop(b);
	return rc;
}

void ch_batch_drop(struct ch_batch *b)
{
	if (b->f)
		fclose(b->f);
	b->f = NULL;
	free(b->buf);
	b->buf = NULL;
}
