/* `flightrec-analyze diff BEFORE... -- AFTER...`: two recordings
 * compared, for the question "what did my change do".  This file parses
 * the two sides, runs the same models on each (those `findings`, `flame`,
 * `cuda` and `memory` ask for), and hands them to trace_diff.c and its
 * layout (out_diff.c). */
#include "cli.h"
#include "commands.h"
#include "model.h"
#include "model_cpu.h"
#include "model_findings.h"
#include "model_mem.h"
#include "model_stack_calls.h"
#include "model_stragglers.h"
#include "out_diff.h"
#include "trace_diff.h"
#include "trace_set.h"

#include <stdlib.h>
#include <string.h>

static const char diff_help[] =
	"usage: " CLI_PROG " diff BEFORE... -- AFTER... [--top N] [--json]\n"
	"\n"
	"Two recordings of a job compared (before and after a change; each side\n"
	"one or more trace files or archives), like perf diff, for training:\n"
	"  step time, GPU idle share, GPU memory peak and the straggler verdict\n"
	"  before -> after;\n"
	"  each finding's GPU idle cost per step before -> after: new, gone,\n"
	"  both, or below the threshold on both;\n"
	"  the functions whose CPU time (under them, with their share of the\n"
	"  samples), CUDA time (of the calls they make themselves) or GPU memory\n"
	"  in use at the peak (of the\n"
	"  allocations they make) changed most, then the same by whole stack,\n"
	"  then the CUDA functions by time.\n"
	"Deltas are per step when both sides know their steps (as findings\n"
	"counts them), else per second; CPU time from the samples and the\n"
	"estimated sampling rate (samples per unit when it is unknown).\n"
	"It says when the two are not comparable: different probes (event\n"
	"families), sampling rates (estimated from a thread's consecutive\n"
	"samples) or ranks.\n"
	"\n"
	"options:\n"
	"  --top N   rows per list (default 10)\n"
	"  --json    one JSON object: unit, comparable, notes, before, after\n"
	"            ({files, gpu_processes, ranks, steps, steps_from, wall_s,\n"
	"            step_ms, gpu_idle_ms, gpu_idle_share, cpu_samples, sample_hz,\n"
	"            mem_peak_bytes, probes, straggler}), step_ms, gpu_idle_share,\n"
	"            mem_peak_bytes ({before, after, delta}), findings ([{kind,\n"
	"            status, cost_ms_before, cost_ms_after, delta_ms}] per unit),\n"
	"            functions {cpu_ms (with share_before/after), cuda_ms,\n"
	"            gpu_bytes_at_peak},\n"
	"            stacks {cpu_ms, cuda_ms, gpu_bytes_at_peak} ([{function|\n"
	"            stack, before, after, delta}]), cuda_calls_ms, changed (rows\n"
	"            per list before --top)\n"
	"\n"
	"examples:\n"
	"  " CLI_PROG " diff before.frec -- after.frec\n"
	"  " CLI_PROG " diff old/node*.frec -- new/node*.frec --json\n";

struct side {
	struct trace_set *ts;
	struct diff_input in;
};

static int side_open(const char *const *files, size_t n, struct side *s, FILE *errout)
{
	memset(s, 0, sizeof(*s));
	if (!(s->ts = cli_open(files, n, errout)))
		return CLI_FAIL;
	struct model_opts mo = { 0 };
	void *cpu = trace_set_use_model(s->ts, "cpu", &mo);
	void *mem = cpu ? trace_set_use_model(s->ts, "mem", &mo) : NULL;
	void *calls = mem ? trace_set_use_model(s->ts, "stack_calls", &mo) : NULL;
	void *strag = calls ? trace_set_use_model(s->ts, "stragglers", NULL) : NULL;
	void *fx = strag ? trace_set_use_model(s->ts, "findings", &mo) : NULL;
	if (!fx) {
		fprintf(errout, CLI_PROG " diff: out of memory\n");
		trace_set_free(s->ts);
		s->ts = NULL;
		return CLI_FAIL;
	}
	if (cli_run_set(s->ts, errout)) {
		s->ts = NULL;
		return CLI_FAIL;
	}
	s->in = (struct diff_input){ .ts = s->ts, .cpu = model_cpu_result(cpu),
				     .mem = model_mem_result(mem), .findings = model_findings_result(fx),
				     .stragglers = model_stragglers_result(strag),
				     .calls = model_stack_calls_result(calls) };
	return CLI_OK;
}

int cmd_diff(int argc, char **argv, FILE *out, FILE *errout)
{
	const char **files = calloc((size_t)argc + 1, sizeof(*files));
	size_t n_before = 0, n = 0;
	int json = 0, split = 0;
	unsigned top = 10;
	if (!files) {
		fprintf(errout, CLI_PROG " diff: out of memory\n");
		return CLI_FAIL;
	}
	for (int i = 1; i < argc; i++) {
		int m;
		if (!strcmp(argv[i], "--") && !split) {
			split = 1;
			n_before = n;
		} else if (cli_is_help(argv[i])) {
			fputs(diff_help, out);
			free(files);
			return CLI_OK;
		} else if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if ((m = cli_uint_option(argc, argv, &i, "--top", "diff", 1, 1000, &top, errout))) {
			if (m < 0) {
				free(files);
				return CLI_USAGE;
			}
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(errout, CLI_PROG " diff: unknown option '%s' (see '" CLI_PROG
				" diff --help')\n", argv[i]);
			free(files);
			return CLI_USAGE;
		} else {
			files[n++] = argv[i];
		}
	}
	if (!split || !n_before || n == n_before) {
		fprintf(errout, CLI_PROG " diff: %s (usage: " CLI_PROG " diff BEFORE... -- AFTER...)\n",
			!split ? "no '--' between the two sides" : !n_before ? "no BEFORE file"
									   : "no AFTER file");
		free(files);
		return CLI_USAGE;
	}
	struct side before, after;
	int rc = side_open(files, n_before, &before, errout);
	if (rc == CLI_OK && (rc = side_open(files + n_before, n - n_before, &after, errout))) {
		trace_set_free(before.ts);
	}
	free(files);
	if (rc)
		return rc;
	struct trace_diff d;
	struct frec_error err = { .offset = -1 };
	if (trace_diff_build(&before.in, &after.in, &d, &err)) {
		cli_print_error(errout, &err);
		rc = CLI_FAIL;
	} else {
		if (json)
			out_diff_json(out, &d, top);
		else
			out_diff_text(out, &d, top);
		if (fflush(out) || ferror(out)) {
			fprintf(errout, CLI_PROG " diff: write failed on standard output\n");
			rc = CLI_FAIL;
		}
	}
	trace_diff_free(&d);
	trace_set_free(before.ts);
	trace_set_free(after.ts);
	return rc;
}
