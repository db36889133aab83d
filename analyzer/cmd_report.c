/* `flightrec-analyze report`: one self-contained HTML file from one or many
 * trace files.  Parses options, registers the models and the report's own
 * collector, runs the pass, hands the results to out_report_write.  Not the
 * page (out_report.c, web/report.js). */
#include "cli.h"
#include "commands.h"
#include "model_syscalls.h"
#include "out_report.h"
#include "out_report_data.h"
#include "trace_set.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char report_help[] =
	"usage: " CLI_PROG " report FILE... -o OUT.html\n"
	"\n"
	"Write one self-contained HTML report (all scripts and styles inline; it\n"
	"makes no network request and opens from disk in any current browser):\n"
	"summary with drops and damage, CPU flame graphs per process, GPU memory,\n"
	"CUDA API, copies, stragglers, RDMA and system calls.  Sections whose data\n"
	"the traces lack say so.\n"
	"\n"
	"options:\n"
	"  -o, --output OUT.html  where to write ('-' for standard output)\n"
	"\n"
	"examples:\n"
	"  " CLI_PROG " report run.frec -o report.html\n"
	"  " CLI_PROG " report node*.frec -o job.html\n";

int cmd_report(int argc, char **argv, FILE *out, FILE *errout)
{
	const char **files = calloc((size_t)argc + 1, sizeof(*files));
	size_t n_files = 0;
	const char *output = NULL;
	int only_files = 0;
	if (!files) {
		fprintf(errout, CLI_PROG " report: out of memory\n");
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
			fputs(report_help, out);
			free(files);
			return CLI_OK;
		} else if ((m = cli_option(argc, argv, &i, "--output", "-o", &value, "report", errout))) {
			if (m < 0) {
				free(files);
				return CLI_USAGE;
			}
			output = value;
		} else {
			fprintf(errout, CLI_PROG " report: unknown option '%s' (see '" CLI_PROG " report --help')\n", a);
			free(files);
			return CLI_USAGE;
		}
	}
	if (!n_files || !output) {
		fprintf(errout, CLI_PROG " report: %s (usage: " CLI_PROG " report FILE... -o OUT.html)\n",
			!n_files ? "no trace file given" : "no output given");
		free(files);
		return CLI_USAGE;
	}
	struct frec_error err = { .offset = -1 };
	struct trace_set *ts;
	if (trace_set_open(files, n_files, &ts, &err)) {
		cli_print_error(errout, &err);
		free(files);
		return CLI_FAIL;
	}
	free(files);
	struct report_collect *collect = report_collect_attach(ts, &err);
	void *syscalls = collect ? trace_set_add_model(ts, &model_syscalls_ops, NULL) : NULL;
	/* HOOK: model_mem, model_cuda, stragglers and rdma register here and
	 * pass their result into `in` below. */
	const struct report_data *data = NULL;
	if (!syscalls) {
		frec_error_set(&err, "report", -1, ENOMEM, "out of memory");
		cli_print_error(errout, &err);
		trace_set_free(ts);
		return CLI_FAIL;
	}
	if (trace_set_run(ts, &err) || !(data = report_collect_result(collect, ts, &err))) {
		cli_print_error(errout, &err);
		trace_set_free(ts);
		return CLI_FAIL;
	}
	cmd_warn_troubled(ts, errout);
	FILE *dst = out;
	int to_file = strcmp(output, "-") != 0;
	if (to_file && !(dst = fopen(output, "w"))) {
		fprintf(errout, CLI_PROG ": %s: cannot create: %s\n", output, strerror(errno));
		trace_set_free(ts);
		return CLI_FAIL;
	}
	struct out_report_input in = { .ts = ts, .data = data, .syscalls = syscalls };
	int rc = out_report_write(dst, &in, &err) ? CLI_FAIL : CLI_OK;
	if (to_file && fclose(dst))
		rc = CLI_FAIL;
	if (rc != CLI_OK) {
		fprintf(errout, CLI_PROG ": %s: write failed: %s\n", output, err.what[0] ? err.what : strerror(errno));
		if (to_file)
			unlink(output);
	}
	trace_set_free(ts);
	return rc;
}
