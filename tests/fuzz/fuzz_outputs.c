/* libFuzzer target for the writers: the input is a list of records
 * (fuzz_trace.h) written into a valid trace, so the strings a stranger's
 * trace carries (host, command line, process and thread names, mapped
 * paths, symbol names, environment, Python names and files, attach and
 * snapshot texts) reach every writer as given.  Runs findings (text and
 * --json), summary (md and json), memory/cuda/stragglers/rdma --json,
 * timeline, report, flame svg and html, sqlite into a scratch file (then
 * PRAGMA integrity_check), export clickhouse (to the transport below), and
 * archive --redact (the redactor rewrites every record), then `check` on
 * that archive.
 *
 * Oracles (fuzz_check.h): JSON outputs parse as JSON; the report and flame
 * documents are printable ASCII with their inline data valid JSON that
 * ends where the script does (a string cannot close the element); text
 * outputs carry no control characters; the database passes its integrity
 * check; a trace that opens gives an archive that opens; every row export
 * clickhouse would send is one JSON object per line. */
#include "ch_http.h"
#include "commands.h"
#include "fuzz_check.h"
#include "fuzz_input.h"
#include "fuzz_trace.h"

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef int (*cmd_fn)(int, char **, FILE *, FILE *);

enum oracle { NONE, JSON, PFTRACE, TEXT, REPORT, FLAME_SVG, FLAME_HTML, SUMMARY_TEXT, SUMMARY_JSON };

static FILE *errout(void)
{
	static int verbose = -1;
	if (verbose < 0)
		verbose = getenv("FUZZ_VERBOSE") != NULL;
	return verbose ? stderr : fuzz_null_stream();
}

static int run(cmd_fn cmd, int argc, char **argv, enum oracle oracle, const char *what)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	if (!out)
		return -1;
	int rc = cmd(argc, argv, out, errout());
	fclose(out);
	switch (oracle) {
	case JSON:
		/* a failed command may have stopped in the middle of its output */
		if (rc == 0 && len)
			fuzz_check_json(buf, len, what);
		break;
	case PFTRACE:
		if (rc == 0)
			fuzz_check_pftrace(buf, len, what);
		break;
	case TEXT:
		fuzz_check_text(buf, len, what);
		break;
	case REPORT:
		fuzz_check_markup(buf, len, "<script type=\"application/json\" id=\"fr-data\">",
				  "</script>", what);
		break;
	case FLAME_SVG:
		fuzz_check_markup(buf, len, "var FLAME_DATA = ", ";\n]]></script>", what);
		break;
	case FLAME_HTML:
		fuzz_check_markup(buf, len, "var FLAME_DATA = ", ";\n</script>", what);
		break;
	case SUMMARY_TEXT:
	case SUMMARY_JSON:
		if (oracle == SUMMARY_TEXT)
			fuzz_check_text(buf, len, what);
		else if (rc == 0 && len)
			fuzz_check_json(buf, len, what);
		/* summary's budget holds whatever the trace: 2,000 tokens at 4
		 * bytes each (cmd_summary's last level is bounded by construction) */
		if (rc == 0 && len > 8000) {
			fprintf(stderr, "%s: %zu bytes, over summary's budget of 8,000\n", what, len);
			abort();
		}
		break;
	case NONE:
		break;
	}
	free(buf);
	return rc;
}

/* export clickhouse's transport here (in place of ch_http_none.c): every
 * statement succeeds (a SELECT answers 0: no mutation pending), and each
 * INSERT's body must be JSONEachRow, one JSON object per line. */
int ch_http_available(void)
{
	return 1;
}

int ch_http_post(const char *url, const char *query, const char *body, size_t len,
		 char **reply, char *err, size_t errlen)
{
	(void)url; (void)err; (void)errlen;
	if (strncmp(query, "INSERT ", 7) == 0) {
		if (!len || body[len - 1] != '\n') {
			fprintf(stderr, "fuzz check failed: export clickhouse: %s: a batch not ending "
				"in a line break\n", query);
			abort();
		}
		fuzz_check_jsonl(body, len, query);
	}
	if (reply)
		*reply = strdup("0\n");
	return 0;
}

static char scratch_dir[512];

static void scratch_remove(void)
{
	rmdir(scratch_dir);
}

/* A scratch directory of this process for the sqlite and archive outputs:
 * $TMPDIR, else /dev/shm, else /tmp; removed at exit (its files are
 * removed after each input). */
static const char *scratch(void)
{
	if (!scratch_dir[0]) {
		const char *base = getenv("TMPDIR");
		if (!base || !base[0])
			base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
		snprintf(scratch_dir, sizeof(scratch_dir), "%s/frec-fuzz-outputs-%d", base,
			 (int)getpid());
		mkdir(scratch_dir, 0700);
		atexit(scratch_remove);
	}
	return scratch_dir;
}

static void check_db(const char *db_path)
{
	sqlite3 *db = NULL;
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		sqlite3_close(db);
		return;
	}
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW) {
		const char *ok = (const char *)sqlite3_column_text(st, 0);
		if (!ok || strcmp(ok, "ok")) {
			fprintf(stderr, "fuzz check failed: sqlite: integrity_check says %s\n",
				ok ? ok : "(null)");
			abort();
		}
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = fuzz_trace_build(data, size);
	if (fd < 0)
		return 0;
	char p[64];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	char db[600], tar[600];
	snprintf(db, sizeof(db), "%s/out.db", scratch());
	snprintf(tar, sizeof(tar), "%s/out.tar.zst", scratch());

	char *findings[] = { "findings", p }, *findings_json[] = { "findings", p, "--json" };
	char *summary[] = { "summary", p }, *summary_json[] = { "summary", p, "--format", "json" };
	char *memory[] = { "memory", p, "--json" }, *cuda[] = { "cuda", p, "--json" };
	char *stragglers[] = { "stragglers", p, "--json" }, *rdma[] = { "rdma", p, "--json" };
	char *timeline[] = { "timeline", p, "-o", "-" }, *report[] = { "report", p, "-o", "-" };
	char *perfetto[] = { "timeline", p, "--format", "perfetto", "-o", "-" };
	char *svg[] = { "flame", p, "--format", "svg" }, *html[] = { "flame", p, "--format", "html" };
	char *svg_mem[] = { "flame", p, "--kind", "mem-inuse", "--at", "peak", "--format", "svg" };
	char *svg_offcpu[] = { "flame", p, "--kind", "offcpu", "--format", "svg" };
	char *svg_gpu[] = { "flame", p, "--kind", "gpu", "--format", "svg" };
	char *sqlite[] = { "sqlite", p, "-o", db, "--force" };
	char *archive[] = { "archive", p, "-o", tar, "--redact", "--force" };
	char *check_trace[] = { "check", p }, *check_archive[] = { "check", tar };
	char *export_ch[] = { "export", "clickhouse", p, "--url", "http://fuzz.invalid:1", "--create" };
#define RUN(cmd, argv, oracle) run(cmd, (int)(sizeof(argv) / sizeof(argv[0])), argv, oracle, \
				   #argv)
	RUN(cmd_findings, findings, TEXT);
	RUN(cmd_findings, findings_json, JSON);
	RUN(cmd_summary, summary, SUMMARY_TEXT);
	RUN(cmd_summary, summary_json, SUMMARY_JSON);
	RUN(cmd_memory, memory, JSON);
	RUN(cmd_cuda, cuda, JSON);
	RUN(cmd_stragglers, stragglers, JSON);
	RUN(cmd_rdma, rdma, JSON);
	RUN(cmd_timeline, timeline, JSON);
	RUN(cmd_timeline, perfetto, PFTRACE);
	RUN(cmd_report, report, REPORT);
	RUN(cmd_flame, svg, FLAME_SVG);
	RUN(cmd_flame, html, FLAME_HTML);
	RUN(cmd_flame, svg_mem, FLAME_SVG);
	RUN(cmd_flame, svg_offcpu, FLAME_SVG);
	RUN(cmd_flame, svg_gpu, FLAME_SVG);
	if (RUN(cmd_sqlite, sqlite, NONE) == 0)
		check_db(db);
	unlink(db);
	RUN(cmd_export, export_ch, NONE);
	int trace_rc = RUN(cmd_check, check_trace, NONE);
	if (RUN(cmd_archive, archive, NONE) == 0) {
		int archive_rc = RUN(cmd_check, check_archive, NONE);
		/* check: 0 intact, 1 damaged or incomplete, 2 unusable */
		if (trace_rc != 2 && archive_rc == 2) {
			fprintf(stderr, "fuzz check failed: archive --redact of a usable trace is "
				"unusable (check exit %d, the trace's %d)\n", archive_rc, trace_rc);
			abort();
		}
	}
	unlink(tar);
#undef RUN
	close(fd);
	return 0;
}
