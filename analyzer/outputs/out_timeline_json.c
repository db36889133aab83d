/* The timeline as Chrome trace event JSON (see out_timeline_emit.h):
 * "X" slices, "b"/"e" async pairs, "i" instants, "C" counters and "M"
 * metadata, ts/dur in microseconds from the origin.  The only strings from
 * a trace it writes are in the metadata, through out_json_str. */
#include "out_timeline_emit.h"
#include "out_common.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

struct tl_json {
	FILE *out;
	int first; /* no event written yet (comma handling) */
};

/* "12.345" microseconds from ns (exact, no floating point). */
static void put_us(FILE *f, int64_t ns)
{
	if (ns < 0) {
		fputc('-', f);
		ns = ns == INT64_MIN ? INT64_MAX : -ns;
	}
	fprintf(f, "%" PRId64 ".%03d", ns / 1000, (int)(ns % 1000));
}

static void sep(struct tl_json *j)
{
	fputs(j->first ? "\n" : ",\n", j->out);
	j->first = 0;
}

static void json_slice(void *e, const char *cat, const char *name, uint64_t pid, uint64_t tid,
		       int64_t start, int64_t dur, const char *args)
{
	struct tl_json *j = e;
	sep(j);
	fprintf(j->out, "{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"%s\",\"pid\":%" PRIu64
		",\"tid\":%" PRIu64 ",\"ts\":", cat, name, pid, tid);
	put_us(j->out, start);
	fputs(",\"dur\":", j->out);
	put_us(j->out, dur);
	fprintf(j->out, ",\"args\":{%s}}", args);
}

static void json_async(void *e, int begin, const char *cat, const char *name, const char *id,
		       uint64_t pid, uint64_t tid, int64_t ts, const char *args)
{
	struct tl_json *j = e;
	sep(j);
	fprintf(j->out, "{\"ph\":\"%s\",\"cat\":\"%s\",\"name\":\"%s\",\"id\":\"%s\",\"pid\":%"
		PRIu64 ",\"tid\":%" PRIu64 ",\"ts\":", begin ? "b" : "e", cat, name, id, pid, tid);
	put_us(j->out, ts);
	if (args)
		fprintf(j->out, ",\"args\":{%s}", args);
	fputs("}", j->out);
}

static void json_instant(void *e, const char *cat, const char *name, uint64_t pid, uint64_t tid,
			 int64_t ts, const char *args)
{
	struct tl_json *j = e;
	sep(j);
	fprintf(j->out, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"%s\",\"name\":\"%s\",\"pid\":%" PRIu64
		",\"tid\":%" PRIu64 ",\"ts\":", cat, name, pid, tid);
	put_us(j->out, ts);
	fprintf(j->out, ",\"args\":{%s}}", args);
}

static void json_counter(void *e, const char *name, uint64_t pid, int64_t ts, uint64_t bytes)
{
	struct tl_json *j = e;
	sep(j);
	fprintf(j->out, "{\"ph\":\"C\",\"name\":\"%s\",\"pid\":%" PRIu64 ",\"tid\":%" PRIu64
		",\"ts\":", name, pid, pid);
	put_us(j->out, ts);
	fprintf(j->out, ",\"args\":{\"bytes\":%" PRIu64 "}}", bytes);
}

static void json_meta(void *e, const char *what, uint64_t pid, uint64_t tid, const char *key,
		      const char *value, int64_t number, int is_number)
{
	struct tl_json *j = e;
	sep(j);
	fprintf(j->out, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%" PRIu64 ",\"tid\":%" PRIu64
		",\"ts\":0,\"args\":{\"%s\":", what, pid, tid, key);
	if (is_number)
		fprintf(j->out, "%" PRId64, number);
	else
		out_json_str(j->out, value);
	fputs("}}", j->out);
}

static int json_end(void *e)
{
	struct tl_json *j = e;
	fputs("\n]}\n", j->out);
	if (fflush(j->out) || ferror(j->out)) {
		if (!errno)
			errno = EIO;
		return -1;
	}
	return 0;
}

static void json_free(void *e)
{
	free(e);
}

static const struct tl_emit json_ops = {
	.slice = json_slice, .async = json_async, .instant = json_instant,
	.counter = json_counter, .meta = json_meta, .end = json_end, .free = json_free,
};

void *tl_json_new(FILE *out, const struct tl_emit **ops)
{
	struct tl_json *j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->out = out;
	j->first = 1;
	fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"flightrec-analyze timeline\","
	      "\"time\":\"microseconds from the earliest event, all files on one clock\","
	      "\"cpu_samples\":\"omitted (see flame / report)\","
	      "\"overlap\":\"slices that do not nest on their thread are async, category *.overlap\"},"
	      "\"traceEvents\":[", out);
	*ops = &json_ops;
	return j;
}
