/* The ClickHouse export without a server: the rows' bytes (every hostile
 * string escaped, so a tab, a line break, quotes and backslashes reach the
 * server as themselves), batching at CH_BATCH_BYTES, a refused insert
 * reported with its table and not counted, the schema's delete keys, and
 * the command's usage errors.  This test is the transport: it defines
 * ch_http_post and keeps what would have been sent.  The real server's
 * side: tests/integration/test_export_clickhouse.py. */
#include "check.h"
#include "ch_batch.h"
#include "ch_http.h"
#include "ch_rows.h"
#include "ch_schema.h"
#include "commands.h"

#define MAX_POSTS 8

static struct {
	char *query[MAX_POSTS];
	char *body[MAX_POSTS];
	size_t len[MAX_POSTS];
	int n;
	int refuse;
} sent;

int ch_http_available(void)
{
	return 1;
}

int ch_http_post(const char *url, const char *query, const char *body, size_t len,
		 char **reply, char *err, size_t errlen)
{
	if (reply)
		*reply = NULL;
	if (sent.refuse) {
		snprintf(err, errlen, "%s: the server refused (HTTP 400): Code: 27, Cannot parse", url);
		return -1;
	}
	if (sent.n < MAX_POSTS) {
		sent.query[sent.n] = strdup(query);
		sent.body[sent.n] = malloc(len + 1);
		memcpy(sent.body[sent.n], body, len);
		sent.body[sent.n][len] = '\0';
		sent.len[sent.n] = len;
	}
	sent.n++;
	if (reply)
		*reply = strdup("0\n");
	return 0;
}

static void reset(void)
{
	for (int i = 0; i < sent.n && i < MAX_POSTS; i++) {
		free(sent.query[i]);
		free(sent.body[i]);
	}
	memset(&sent, 0, sizeof(sent));
}

static void test_escaping(void)
{
	struct ch_target t = { .url = "http://h:1", .database = "db" };
	struct ch_batch b;
	CHECK(ch_batch_open(&b, &t, "stacks") == 0);
	const char *frames[] = { "a\tb", "line\nbreak", "q\"uo'te", "back\\slash", NULL };
	ch_row_begin(&b);
	ch_str(&b, "stack", "main;f\tg\\h\"i'j\nk\r\x01");
	ch_u64(&b, "value", UINT64_MAX);
	ch_i64(&b, "rank", -1);
	ch_f64(&b, "cost_ms", 1.5, 0);
	ch_f64(&b, "share", 0, 1);
	ch_str_array(&b, "frames", frames, 5);
	CHECK(ch_row_end(&b) == 0);
	CHECK(ch_batch_finish(&b) == 0);
	CHECK(sent.n == 1);
	CHECK_STR(sent.query[0], "INSERT INTO db.stacks FORMAT JSONEachRow");
	CHECK_STR(sent.body[0],
		  "{\"stack\":\"main;f\\u0009g\\\\h\\\"i\\u0027j\\u000ak\\u000d\\u0001\","
		  "\"value\":18446744073709551615,\"rank\":-1,\"cost_ms\":1.5,\"share\":null,"
		  "\"frames\":[\"a\\u0009b\",\"line\\u000abreak\",\"q\\\"uo\\u0027te\","
		  "\"back\\\\slash\",\"[unknown]\"]}\n");
	CHECK_EQ_U64(t.rows, 1);
	reset();
}

static void test_batches(void)
{
	struct ch_target t = { .url = "http://h:1", .database = "db" };
	struct ch_batch b;
	char big[4096];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK(ch_batch_open(&b, &t, "stacks") == 0);
	size_t rows = CH_BATCH_BYTES / sizeof(big) + 10;
	for (size_t i = 0; i < rows; i++) {
		ch_row_begin(&b);
		ch_str(&b, "stack", big);
		ch_row_end(&b); /* may post: counted below */
	}
	CHECK(ch_batch_finish(&b) == 0);
	CHECK(sent.n == 2);
	size_t lines = 0;
	for (int i = 0; i < sent.n && i < MAX_POSTS; i++) {
		CHECK(sent.len[i] <= CH_BATCH_BYTES + sizeof(big) + 64);
		CHECK(sent.body[i][sent.len[i] - 1] == '\n');
		for (size_t k = 0; k < sent.len[i]; k++)
			lines += sent.body[i][k] == '\n';
	}
	CHECK_EQ_U64(lines, rows);
	CHECK_EQ_U64(t.rows, rows);
	reset();
}

static void test_refused(void)
{
	struct ch_target t = { .url = "http://h:1", .database = "db" };
	struct ch_batch b;
	CHECK(ch_batch_open(&b, &t, "findings") == 0);
	ch_row_begin(&b);
	ch_str(&b, "kind", "oom");
	CHECK(ch_row_end(&b) == 0);
	sent.refuse = 1;
	CHECK(ch_batch_finish(&b) == -1);
	CHECK(strstr(t.err, "http://h:1") != NULL);
	CHECK(strstr(t.err, "(inserting into findings)") != NULL);
	CHECK(strchr(t.err, '\n') == NULL);
	CHECK_EQ_U64(t.rows, 0);
	reset();
}

static void test_schema(void)
{
	CHECK(ch_n_tables >= 8);
	CHECK_STR(ch_tables[0].name, "recordings");
	for (size_t i = 0; i < ch_n_tables; i++) {
		const struct ch_table *tb = &ch_tables[i];
		int by_rec = strcmp(tb->key, "recording_id") == 0;
		CHECK(by_rec || strcmp(tb->key, "job_id") == 0);
		char want[64];
		snprintf(want, sizeof(want), "%s String", tb->key);
		CHECK(strstr(tb->columns, want) != NULL);
		/* no row carries its job's recording list: the job_recordings table
		 * has one row per recording of a job */
		CHECK(!strstr(tb->columns, "job_recordings"));
		if (strcmp(tb->name, "job_recordings") == 0) {
			CHECK_STR(tb->columns, "job_id String, recording_id String, start DateTime");
			CHECK_STR(tb->key, "job_id");
		}
		CHECK(strstr(tb->columns, "start DateTime") != NULL);
		/* the 18.16 subset: none of what it lacks */
		CHECK(!strstr(tb->columns, "LowCardinality") && !strstr(tb->columns, "CODEC") &&
		      !strstr(tb->columns, "DateTime64") && !strstr(tb->columns, "Map("));
	}
}

static void test_ids(void)
{
	unsigned char hdr[128] = { 'F', 'R', 'E', 'C' };
	char a[CH_ID_LEN + 1], b[CH_ID_LEN + 1];
	ch_recording_id(hdr, sizeof(hdr), a);
	CHECK(strlen(a) == CH_ID_LEN);
	hdr[100] = 1;
	ch_recording_id(hdr, sizeof(hdr), b);
	CHECK(strcmp(a, b) != 0);
	const char *ab[] = { a, b }, *ba[] = { b, a };
	char j1[CH_ID_LEN + 1], j2[CH_ID_LEN + 1];
	ch_job_id(ab, 2, j1);
	ch_job_id(ba, 2, j2);
	CHECK_STR(j1, j2); /* the order given does not matter */
	ch_job_id(ab, 1, j2);
	CHECK(strcmp(j1, j2) != 0);
}

static int run_cmd(const char *const *args, int n)
{
	char *argv[16];
	for (int i = 0; i < n; i++)
		argv[i] = (char *)args[i];
	FILE *devnull = fopen("/dev/null", "w");
	int rc = cmd_export(n, argv, devnull, devnull);
	fclose(devnull);
	return rc;
}

static void test_usage(void)
{
	const char *no_url[] = { "export", "clickhouse", "x.frec" };
	CHECK(run_cmd(no_url, 3) == 2);
	const char *bad_db[] = { "export", "clickhouse", "x.frec", "--url", "http://h:1",
				 "--database", "a;DROP TABLE b" };
	CHECK(run_cmd(bad_db, 7) == 2);
	const char *bad_url[] = { "export", "clickhouse", "x.frec", "--url", "file:///etc/passwd" };
	CHECK(run_cmd(bad_url, 5) == 2);
	const char *other[] = { "export", "parquet", "x.frec", "--url", "http://h:1" };
	CHECK(run_cmd(other, 5) == 2);
	const char *help[] = { "export", "--help" };
	CHECK(run_cmd(help, 2) == 0);
	CHECK(sent.n == 0);
}

int main(void)
{
	test_escaping();
	test_batches();
	test_refused();
	test_schema();
	test_ids();
	test_usage();
	return check_finish();
}
