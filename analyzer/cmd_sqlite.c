/* `flightrec-analyze sqlite`: one SQLite database from any number of trace
 * files (schema: analyzer/SQLITE_SCHEMA.md).  Parses options and connects
 * the decoder to the writer (out_sqlite.c); the database is written under a
 * temporary name and renamed into place only when complete, so a failure
 * never leaves a half-written OUT.db behind. */
#include "cli.h"
#include "commands.h"
#include "out_sqlite.h"
#include "trace_set.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char sqlite_help[] =
	"usage: " CLI_PROG " sqlite FILE... -o OUT.db [--force]\n"
	"\n"
	"Write every event of the traces (one file per node) into one SQLite\n"
	"database: processes with host and rank, threads, stacks and frames, CPU\n"
	"samples, system calls, CUDA calls and allocations, memory in use over\n"
	"time, NCCL calls, RDMA work requests and completions, step marks, drops\n"
	"per probe and damaged regions.  Times are nanoseconds on a common clock\n"
	"(UTC since the epoch).  The schema is documented in SQLITE_SCHEMA.md\n"
	"and versioned in the meta table.\n"
	"\n"
	"options:\n"
	"  -o, --output OUT.db  the database to create\n"
	"  --force              replace OUT.db when it exists\n"
	"\n"
	"examples:\n"
	"  " CLI_PROG " sqlite run.frec -o run.db\n"
	"  " CLI_PROG " sqlite node*.frec -o job.db\n"
	"  sqlite3 run.db \"SELECT e.name, count(*), sum(duration_ns)/1e6 AS ms FROM syscalls\n"
	"      JOIN enum_syscalls e USING(nr) GROUP BY nr ORDER BY ms DESC LIMIT 10\"\n";

int cmd_sqlite(int argc, char **argv, FILE *out, FILE *errout)
{
	const char **files = calloc((size_t)argc + 1, sizeof(*files));
	size_t n_files = 0;
	const char *output = NULL;
	int force = 0, only_files = 0;
	if (!files) {
		fprintf(errout, CLI_PROG " sqlite: out of memory\n");
		return CLI_FAIL;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *value = NULL;
		int m;
		if (only_files || a[0] != '-' || !a[1]) {
			files[n_files++] = a;
		} else if (strcmp(a, "--") == 0) {
			only_files = 1;
		} else if (cli_is_help(a)) {
			fputs(sqlite_help, out);
			free(files);
			return CLI_OK;
		} else if (strcmp(a, "--force") == 0) {
			force = 1;
		} else if ((m = cli_option(argc, argv, &i, "--output", "-o", &value, "sqlite", errout))) {
			if (m < 0) {
				free(files);
				return CLI_USAGE;
			}
			output = value;
		} else {
			fprintf(errout, CLI_PROG " sqlite: unknown option '%s' (see '" CLI_PROG " sqlite --help')\n", a);
			free(files);
			return CLI_USAGE;
		}
	}
	if (!n_files || !output) {
		fprintf(errout, CLI_PROG " sqlite: %s (usage: " CLI_PROG " sqlite FILE... -o OUT.db)\n",
			!n_files ? "no trace file given" : "no output given");
		free(files);
		return CLI_USAGE;
	}
	if (!force && access(output, F_OK) == 0) {
		fprintf(errout, CLI_PROG ": %s: exists; pass --force to replace it\n", output);
		free(files);
		return CLI_FAIL;
	}
	struct frec_error err = { .offset = -1 };
	struct trace_set *ts;
	if (trace_set_open(files, n_files, &ts, &err)) {
		cli_print_error(errout, &err);
		free(files);
		return CLI_FAIL;
	}
	free(files);
	size_t tlen = strlen(output) + 32;
	char *tmp = malloc(tlen);
	if (!tmp) {
		fprintf(errout, CLI_PROG " sqlite: out of memory\n");
		trace_set_free(ts);
		return CLI_FAIL;
	}
	snprintf(tmp, tlen, "%s.tmp-%ld", output, (long)getpid());
	unlink(tmp);
	struct out_sqlite *db = NULL;
	int rc = CLI_FAIL;
	if (out_sqlite_open(tmp, &db, &err) || out_sqlite_attach(db, ts, &err)) {
		cli_print_error(errout, &err);
		goto out;
	}
	if (trace_set_run(ts, &err)) {
		if (out_sqlite_error(db))
			fprintf(errout, CLI_PROG ": %s: %s\n", tmp, out_sqlite_error(db));
		else
			cli_print_error(errout, &err);
		goto out;
	}
	cmd_warn_troubled(ts, errout);
	if (out_sqlite_finish(db, ts, &err)) {
		cli_print_error(errout, &err);
		goto out;
	}
	uint64_t rows = out_sqlite_rows(db);
	out_sqlite_close(db);
	db = NULL;
	if (rename(tmp, output)) {
		fprintf(errout, CLI_PROG ": %s: cannot create: %s\n", output, strerror(errno));
		goto out;
	}
	fprintf(errout, CLI_PROG ": %s: %" PRIu64 " rows from %zu file%s\n", output, rows,
		trace_set_count(ts), trace_set_count(ts) == 1 ? "" : "s");
	rc = CLI_OK;
out:
	out_sqlite_close(db);
	if (rc != CLI_OK)
		unlink(tmp);
	free(tmp);
	trace_set_free(ts);
	return rc;
}
