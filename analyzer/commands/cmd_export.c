/* `flightrec-analyze export clickhouse`: the traces' recordings, findings,
 * stragglers, collectives, steps, RDMA connections, failed allocations and
 * CPU / GPU-memory folded stacks as rows of ClickHouse tables (columns:
 * analyzer/CLICKHOUSE.md), over its HTTP interface.  This file parses the
 * options, runs the models and orders the export so that it is idempotent
 * per recording and never reports a half-written one as done:
 *
 *   1. every table: ALTER TABLE ... DELETE of the rows of these recordings
 *      (a mutation: 18.16 has no lightweight DELETE), recordings first;
 *      then wait until system.mutations says they are done, so no old row
 *      is counted beside a new one;
 *   2. the data tables, in batches;
 *   3. recordings, last: a recording has its row only when everything
 *      else of it is in.  A failed export leaves no recordings row, the
 *      documented queries join on recordings, and the next export of the
 *      trace deletes what the failed one left.
 *
 * Rows come from the models (ch_rows.c), never from events. */
#include "ch_batch.h"
#include "ch_http.h"
#include "ch_rows.h"
#include "ch_schema.h"
#include "cli.h"
#include "cli_jobs.h"
#include "commands.h"
#include "flame_tree.h"
#include "model.h"
#include "model_cpu.h"
#include "model_findings.h"
#include "model_mem.h"
#include "model_rdma.h"
#include "model_stragglers.h"
#include "trace_set.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char export_help[] =
	"usage: " CLI_PROG " export clickhouse FILE... --url URL [--database DB] [--create]\n"
	"                         [--jobs N]\n"
	"\n"
	"Write what the analyzer finds in the traces into ClickHouse tables, for\n"
	"queries across many runs and nodes: one row per trace in 'recordings'\n"
	"(id, host, command, start, duration, ranks, probes, status, drops,\n"
	"snapshot trigger), and findings, stragglers, collectives and steps per\n"
	"rank, RDMA connections, failed GPU allocations with their holders, and\n"
	"CPU and GPU-memory folded stacks per recording.  Give the traces of one\n"
	"job together (one per node): they share a job_id, and the straggler\n"
	"rows compare their ranks.  The numbers are those of the findings,\n"
	"stragglers, rdma, memory and flame commands.  Tables and queries:\n"
	"CLICKHOUSE.md.\n"
	"\n"
	"Exporting a trace again replaces its rows (ALTER TABLE ... DELETE, then\n"
	"waiting for the deletes to finish, then the new rows; its recordings\n"
	"row is written last), so nothing is counted twice.  Works with\n"
	"ClickHouse 18.16 (Debian 12) and later.\n"
	"\n"
	"options:\n"
	"  --url URL        the server's HTTP interface, e.g. http://127.0.0.1:8123\n"
	"                   (user and password as URL parameters: ?user=U&password=P)\n"
	"  --database DB    the database (default flightrec; letters, digits, _)\n"
	"  --create         create the database and the tables when missing\n"
	CLI_JOBS_HELP
	"\n"
	"examples:\n"
	"  " CLI_PROG " export clickhouse run.frec --url http://127.0.0.1:8123 --create\n"
	"  " CLI_PROG " export clickhouse nodeA.frec nodeB.frec --url http://ch:8123 \\\n"
	"      --database training\n"
	"  clickhouse-client -q \"SELECT kind, count(), sum(cost_ms) FROM flightrec.findings\n"
	"      GROUP BY kind ORDER BY 3 DESC\"\n";

struct export_args {
	const char **files;
	size_t n_files;
	const char *url, *database;
	int create;
};

static int valid_database(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > 64 || isdigit((unsigned char)s[0]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return 0;
	return 1;
}

/* -1 after help, else CLI_OK or CLI_USAGE */
static int export_parse(int argc, char **argv, struct export_args *a, FILE *out, FILE *errout)
{
	if (argc < 2 || cli_is_help(argv[1])) {
		fputs(export_help, argc < 2 ? errout : out);
		return argc < 2 ? CLI_USAGE : -1;
	}
	if (strcmp(argv[1], "clickhouse")) {
		fprintf(errout, CLI_PROG " export: unknown target '%s' (expected clickhouse)\n", argv[1]);
		return CLI_USAGE;
	}
	a->database = "flightrec";
	for (int i = 2; i < argc; i++) {
		const char *v;
		int m;
		if (cli_is_help(argv[i])) {
			fputs(export_help, out);
			return -1;
		}
		if ((m = cli_option(argc, argv, &i, "--url", NULL, &v, "export", errout))) {
			if (m < 0)
				return CLI_USAGE;
			a->url = v;
		} else if ((m = cli_option(argc, argv, &i, "--database", NULL, &v, "export", errout))) {
			if (m < 0)
				return CLI_USAGE;
			a->database = v;
		} else if (strcmp(argv[i], "--create") == 0) {
			a->create = 1;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(errout, CLI_PROG " export: unknown option '%s' (see --help)\n", argv[i]);
			return CLI_USAGE;
		} else {
			a->files[a->n_files++] = argv[i];
		}
	}
	if (!a->n_files) {
		fprintf(errout, CLI_PROG " export: no trace files given (see --help)\n");
		return CLI_USAGE;
	}
	if (!a->url) {
		fprintf(errout, CLI_PROG " export: --url URL is required, e.g. --url http://127.0.0.1:8123\n");
		return CLI_USAGE;
	}
	if (strncmp(a->url, "http://", 7) && strncmp(a->url, "https://", 8)) {
		fprintf(errout, CLI_PROG " export: --url '%s' is not an http:// or https:// URL\n", a->url);
		return CLI_USAGE;
	}
	if (!valid_database(a->database)) {
		fprintf(errout, CLI_PROG " export: --database '%s' is not a plain name (letters, digits, _; "
			"not starting with a digit; at most 64)\n", a->database);
		return CLI_USAGE;
	}
	return CLI_OK;
}

static int create_tables(struct ch_target *t)
{
	char sql[2048];
	snprintf(sql, sizeof(sql), "CREATE DATABASE IF NOT EXISTS %s", t->database);
	if (ch_query(t, sql, NULL))
		return -1;
	for (size_t i = 0; i < ch_n_tables; i++) {
		const struct ch_table *tb = &ch_tables[i];
		snprintf(sql, sizeof(sql), "CREATE TABLE IF NOT EXISTS %s.%s (%s) ENGINE = MergeTree() "
			 "PARTITION BY toYYYYMM(start) ORDER BY %s", t->database, tb->name,
			 tb->columns, tb->order_by);
		if (ch_query(t, sql, NULL))
			return -1;
	}
	return 0;
}

/* The jobs these recordings were exported with before, and this one, as
 * a quoted list in *jobs: the job rows to delete.  Ids are hex: nothing
 * to escape; a reply line that is not an id (a damaged table) is skipped. */
static int previous_jobs(struct ch_target *t, const struct ch_export *x, const char *rec_set,
			 char **jobs)
{
	size_t cap = strlen(rec_set) + 256;
	char *sql = malloc(cap), *reply = NULL;
	if (!sql) {
		snprintf(t->err, sizeof(t->err), "out of memory");
		return -1;
	}
	snprintf(sql, cap, "SELECT DISTINCT job_id FROM %s.job_recordings WHERE recording_id IN (%s) "
		 "FORMAT TabSeparated", t->database, rec_set);
	int rc = ch_query(t, sql, &reply);
	free(sql);
	if (rc)
		return -1;
	size_t n = 1;
	for (const char *c = reply ? reply : ""; *c; c++)
		n += *c == '\n';
	char *list = malloc((n + 1) * (CH_ID_LEN + 4));
	if (!list) {
		free(reply);
		snprintf(t->err, sizeof(t->err), "out of memory");
		return -1;
	}
	size_t len = (size_t)sprintf(list, "'%s'", x->job_id);
	for (char *line = reply, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		size_t k = strspn(line, "0123456789abcdef");
		if (k == CH_ID_LEN && !line[k] && strcmp(line, x->job_id))
			len += (size_t)sprintf(list + len, ",'%s'", line);
	}
	free(reply);
	*jobs = list;
	return 0;
}

/* The delete of every row of these recordings and of their jobs, and the
 * wait for it. */
static int delete_previous(struct ch_target *t, const struct ch_export *x)
{
	size_t cap = 256 + x->n_files * (CH_ID_LEN + 4);
	char *set = malloc(cap), *sql = NULL, *jobs = NULL;
	int rc = -1;
	if (!set) {
		snprintf(t->err, sizeof(t->err), "out of memory");
		goto out;
	}
	size_t len = 0;
	for (size_t i = 0; i < x->n_files; i++) /* ids are hex: nothing to escape */
		len += (size_t)snprintf(set + len, cap - len, "%s'%s'", i ? "," : "", x->rec_ids[i]);
	if (previous_jobs(t, x, set, &jobs))
		goto out;
	size_t sql_cap = cap + strlen(jobs) + 256;
	if (!(sql = malloc(sql_cap))) {
		snprintf(t->err, sizeof(t->err), "out of memory");
		goto out;
	}
	for (size_t i = 0; i < ch_n_tables; i++) {
		const struct ch_table *tb = &ch_tables[i];
		int by_rec = strcmp(tb->key, "recording_id") == 0;
		snprintf(sql, sql_cap, "ALTER TABLE %s.%s DELETE WHERE %s IN (%s)", t->database,
			 tb->name, tb->key, by_rec ? set : jobs);
		if (ch_query(t, sql, NULL))
			goto out;
	}
	/* mutations run in the background: wait for them (bounded) */
	snprintf(sql, sql_cap, "SELECT count() FROM system.mutations WHERE database = '%s' "
		 "AND is_done = 0", t->database);
	for (int tries = 0;; tries++) {
		char *reply = NULL;
		if (ch_query(t, sql, &reply))
			goto out;
		long left = strtol(reply, NULL, 10);
		free(reply);
		if (left == 0)
			break;
		if (tries >= 1200) {
			snprintf(t->err, sizeof(t->err), "%s: the deletes of the earlier rows of these "
				 "recordings did not finish within 2 minutes (%ld mutations pending in "
				 "system.mutations); nothing was written", t->url, left);
			goto out;
		}
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	rc = 0;
out:
	free(set);
	free(sql);
	free(jobs);
	return rc;
}

/* Per recording: CPU samples and GPU memory in use at the peak as flame
 * would fold them for that trace alone (a set's trees merge its files).
 * The trace is opened again from its bytes (trace_file_fd: the file, or an
 * archive member's anonymous copy), so archives work as files do.
 * -2 after printing a line to errout. */
static int put_file_stacks(struct ch_export *x, uint32_t i, void *cpu, void *mem, FILE *errout)
{
	struct trace_set *one = NULL;
	if (!cpu) {
		const struct trace_file *f = trace_set_file(x->ts, i);
		struct frec_error err = { .offset = -1 };
		int fd = trace_file_fd(f);
		if (fd < 0) {
			fprintf(errout, CLI_PROG ": %s: cannot open again: %s\n", f->path, strerror(errno));
			return -2;
		}
		const char *name = f->path;
		int rc = trace_set_open_fds(&fd, &name, 1, &one, &err);
		close(fd);
		if (rc) {
			cli_print_error(errout, &err);
			return -2;
		}
		struct model_opts mo = { 0 };
		cpu = trace_set_use_model(one, "cpu", &mo);
		mem = cpu ? trace_set_use_model(one, "mem", &mo) : NULL;
		if (!mem) {
			snprintf(x->t->err, sizeof(x->t->err), "out of memory");
			trace_set_free(one);
			return -1;
		}
		if (trace_set_run(one, &err)) {
			cli_print_error(errout, &err);
			trace_set_free(one);
			return -2;
		}
	}
	const struct model_cpu_result *cr = model_cpu_result(cpu);
	const struct mem_result *mr = model_mem_result(mem);
	int rc = 0;
	if (cr->tree && flame_tree_total(cr->tree))
		rc = ch_put_stacks(x, i, "cpu", "samples", cr->tree);
	if (!rc && mr->inuse && flame_tree_total(mr->inuse))
		rc = ch_put_stacks(x, i, "mem-inuse", "bytes", mr->inuse);
	trace_set_free(one);
	return rc;
}

static int export_all(struct ch_export *x, struct export_args *a, unsigned jobs, FILE *errout)
{
	struct ch_target *t = x->t;
	struct trace_set *ts = x->ts;
	trace_set_set_jobs(ts, jobs);
	struct model_opts mo = { 0 };
	int single = trace_set_count(ts) == 1;
	void *mem = trace_set_use_model(ts, "mem", &mo);
	void *strag = mem ? trace_set_use_model(ts, "stragglers", NULL) : NULL;
	void *rdma = strag ? trace_set_use_model(ts, "rdma", NULL) : NULL;
	void *findings = rdma ? trace_set_use_model(ts, "findings", NULL) : NULL;
	void *cpu = findings && single ? trace_set_use_model(ts, "cpu", &mo) : NULL;
	if (!findings || (single && !cpu)) {
		fprintf(errout, CLI_PROG " export: out of memory\n");
		return CLI_FAIL;
	}
	struct frec_error err = { .offset = -1 };
	if (trace_set_run(ts, &err)) {
		cli_print_error(errout, &err);
		return CLI_FAIL;
	}
	cli_warn_troubled(ts, errout);
	x->n_files = trace_set_count(ts);
	x->rec_ids = calloc(x->n_files, sizeof(*x->rec_ids));
	x->rec_id_list = calloc(x->n_files, sizeof(*x->rec_id_list));
	if (!x->rec_ids || !x->rec_id_list) {
		fprintf(errout, CLI_PROG " export: out of memory\n");
		return CLI_FAIL;
	}
	for (size_t i = 0; i < x->n_files; i++) {
		const struct trace_file *f = trace_set_file(ts, i);
		ch_recording_id(&f->hdr, sizeof(f->hdr), x->rec_ids[i]);
		x->rec_id_list[i] = x->rec_ids[i];
	}
	ch_job_id(x->rec_id_list, x->n_files, x->job_id);
	x->exported_at_s = (uint64_t)time(NULL);

	char *reply = NULL;
	if (ch_query(t, "SELECT version()", &reply))
		goto fail;
	free(reply);
	if (a->create && create_tables(t))
		goto fail;
	if (delete_previous(t, x))
		goto fail;
	if (ch_put_job_recordings(x) || ch_put_findings(x, model_findings_result(findings)) ||
	    ch_put_stragglers(x, model_stragglers_result(strag)) ||
	    ch_put_rdma(x, model_rdma_result(rdma)) ||
	    ch_put_failed_allocations(x, model_mem_result(mem)))
		goto fail;
	for (uint32_t i = 0; i < x->n_files; i++) {
		int rc = put_file_stacks(x, i, cpu, mem, errout);
		if (rc == -2) {
			fprintf(errout, CLI_PROG " export: %s: not exported (its recordings rows are "
				"not written)\n", a->url);
			return CLI_FAIL;
		}
		if (rc)
			goto fail;
	}
	if (ch_put_recordings(x))
		goto fail;
	fprintf(errout, CLI_PROG ": %s database %s: %" PRIu64 " rows of %zu recording%s (job %s)\n",
		a->url, a->database, t->rows, x->n_files, x->n_files == 1 ? "" : "s", x->job_id);
	return CLI_OK;
fail:
	if (!a->create && strstr(t->err, "doesn't exist"))
		strncat(t->err, " (pass --create to create the tables)",
			sizeof(t->err) - strlen(t->err) - 1);
	fprintf(errout, CLI_PROG " export: %s\n", t->err[0] ? t->err : "failed");
	return CLI_FAIL;
}

int cmd_export(int argc, char **argv, FILE *out, FILE *errout)
{
	unsigned jobs;
	if (cli_take_jobs(&argc, argv, "export", &jobs, errout))
		return CLI_USAGE;
	struct export_args a = { .files = calloc((size_t)argc + 1, sizeof(char *)) };
	if (!a.files) {
		fprintf(errout, CLI_PROG " export: out of memory\n");
		return CLI_FAIL;
	}
	int rc = export_parse(argc, argv, &a, out, errout);
	if (rc) {
		free(a.files);
		return rc < 0 ? CLI_OK : rc;
	}
	if (!ch_http_available()) {
		char line[256];
		ch_http_post(a.url, "", "", 0, NULL, line, sizeof(line));
		fprintf(errout, CLI_PROG " export: %s\n", line);
		free(a.files);
		return CLI_FAIL;
	}
	struct trace_set *ts = cli_open(a.files, a.n_files, errout);
	free(a.files);
	if (!ts)
		return CLI_FAIL;
	struct ch_target t = { .url = a.url, .database = a.database };
	struct ch_export x = { .t = &t, .ts = ts };
	rc = export_all(&x, &a, jobs, errout);
	free(x.rec_ids);
	free(x.rec_id_list);
	trace_set_free(ts);
	return rc;
}
