/* `flightrec-analyze summary`: the whole recording in at most
 * SUMMARY_MAX_TOKENS tokens (bytes / 4), Markdown or JSON, for a person
 * skimming or an LLM agent asked to make the job faster.  This file parses
 * options, asks for the models the other commands use (so the numbers are
 * theirs), and picks the first level of out_summary.c that fits the
 * budget.  Not the layout (out_summary.c). */
#include "cli.h"
#include "commands.h"
#include "model.h"
#include "model_cpu.h"
#include "model_findings.h"
#include "model_mem.h"
#include "model_rdma.h"
#include "model_stragglers.h"
#include "out_summary.h"
#include "trace_set.h"

#include <stdlib.h>
#include <string.h>

static const char summary_help[] =
	"usage: " CLI_PROG " summary FILE... [--format md|json]\n"
	"\n"
	"The whole recording in at most 2,000 tokens, counted as bytes / 4 (the\n"
	"output stays under 8,000 bytes), for a person skimming or an LLM agent\n"
	"asked to optimise the job.  Sections, always in this order, each one line\n"
	"when its data is missing (\"no CUDA events\"):\n"
	"  Recording         command, hosts and ranks, per file: duration,\n"
	"                    processes, probes (events), status\n"
	"  Findings          the first 5 of 'findings': kind, cost ms and share of\n"
	"                    wall x processes, where (innermost frames), fix\n"
	"  CPU               the 5 heaviest stacks, shown by the frames a person can\n"
	"                    act on: Python frames, the job's own binaries (outside\n"
	"                    /usr, /lib, site-packages ...) and the innermost named\n"
	"                    native frame; interpreter internals, other library\n"
	"                    frames and unnamed offsets between them collapsed as\n"
	"                    [+N]; start-up frames dropped; the innermost 6 kept (a\n"
	"                    kernel part as its innermost frame after \"...\"),\n"
	"                    stacks equal after that merged; share of samples\n"
	"  GPU memory        peak bytes and time (memory's files[].peak_bytes, the\n"
	"                    largest file), top 3 holders at the peak of the largest\n"
	"                    process, failed allocations, never freed by the end\n"
	"  Stragglers        the verdict of 'stragglers' and its cost per step, or none\n"
	"  RDMA              connections, error completions, p50/p99 latency of the\n"
	"                    3 connections with the most errors, then the slowest\n"
	"  Drops and damage  losses by probe and reason, damaged regions\n"
	"Deterministic: the same files give the same bytes.  When the text would\n"
	"pass the budget, lower-priority lines go first: CPU stacks beyond 3, then\n"
	"holders beyond 1, RDMA connections and loss rows, long texts, findings\n"
	"beyond 3 ... (the heading line says what was shortened).\n"
	"\n"
	"options:\n"
	"  --format md     Markdown (default)\n"
	"  --format json   one JSON object with the same numbers, keys:\n"
	"    budget      {rule:\"bytes/4\", max_tokens, level, shortened:[...]}\n"
	"    recording   {command, files_total, ranks, files:[{path, host, command,\n"
	"                duration_ns, duration_exact, processes, complete, status,\n"
	"                probes:[{name, events, drops}]}]}\n"
	"    findings    {gpu_processes, gpu_idle_ms, wall_ms, steps, total,\n"
	"                top:[{kind, cost_ms, share, where, fix}]}\n"
	"    cpu         {samples, stacks, top:[{samples, share, stack}]}\n"
	"    gpu_memory  {peak_bytes, peak_s, file, host, holders_pid, holders_device,\n"
	"                holders:[{bytes, stack}], failed_allocations, first_failure:\n"
	"                {t_s, pid, bytes, in_use_bytes, function, error_name} or null,\n"
	"                never_freed_bytes, never_freed_allocations, caching_allocator}\n"
	"    stragglers  {ranks, complete_collectives, median_step_ms, straggler:\n"
	"                {rank, pid, cost_ms_per_step, since_step, confidence, host,\n"
	"                evidence} or null, no_straggler_reason}\n"
	"    rdma        {connections, posts, completions, error_completions,\n"
	"                flush_errors, top:[{host, pid, local_qp, ops, errors, p50_us,\n"
	"                p99_us}]}\n"
	"    drops       {losses:[{host, probe, reason, count, lost}], loss_rows,\n"
	"                losses_total, damaged_regions, chunks_missing,\n"
	"                malformed_records}\n"
	"    a section without data is {\"missing\": WHY}; numbers are printed as the\n"
	"    other commands' --json print them (cost_ms %.3f, share %.4f, ...)\n"
	"\n"
	"examples:\n"
	"  " CLI_PROG " summary run.frec\n"
	"  " CLI_PROG " summary node*.frec --format json > summary.json\n";

int cmd_summary(int argc, char **argv, FILE *out, FILE *errout)
{
	const char **files = calloc((size_t)argc, sizeof(*files));
	size_t n_files = 0;
	enum summary_format fmt = SUMMARY_MD;
	if (!files) {
		fprintf(errout, CLI_PROG " summary: out of memory\n");
		return CLI_FAIL;
	}
	for (int i = 1; i < argc; i++) {
		const char *v;
		int m = cli_option(argc, argv, &i, "--format", NULL, &v, "summary", errout);
		if (m < 0) {
			free(files);
			return CLI_USAGE;
		}
		if (m) {
			if (!strcmp(v, "md")) {
				fmt = SUMMARY_MD;
			} else if (!strcmp(v, "json")) {
				fmt = SUMMARY_JSON;
			} else {
				fprintf(errout, CLI_PROG " summary: unknown format '%s' (md or json)\n", v);
				free(files);
				return CLI_USAGE;
			}
		} else if (cli_is_help(argv[i])) {
			fputs(summary_help, out);
			free(files);
			return CLI_OK;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(errout, CLI_PROG " summary: unknown option '%s' (" CLI_PROG
				" summary --help lists them)\n", argv[i]);
			free(files);
			return CLI_USAGE;
		} else {
			files[n_files++] = argv[i];
		}
	}
	if (!n_files) {
		fprintf(errout, CLI_PROG " summary: no trace file given\nusage: " CLI_PROG
			" summary FILE... [--format md|json]\n");
		free(files);
		return CLI_USAGE;
	}
	struct trace_set *ts = cli_open(files, n_files, errout);
	free(files);
	if (!ts)
		return CLI_FAIL;
	/* the models the other commands ask for, with their options */
	struct model_opts mo = { 0 };
	void *cpu = trace_set_use_model(ts, "cpu", &mo);
	void *mem = cpu ? trace_set_use_model(ts, "mem", &mo) : NULL;
	void *strag = mem ? trace_set_use_model(ts, "stragglers", NULL) : NULL;
	void *rdma = strag ? trace_set_use_model(ts, "rdma", &mo) : NULL;
	void *fx = rdma ? trace_set_use_model(ts, "findings", &mo) : NULL;
	if (!fx) {
		fprintf(errout, CLI_PROG " summary: out of memory\n");
		trace_set_free(ts);
		return CLI_FAIL;
	}
	if (cli_run_set(ts, errout))
		return CLI_FAIL;
	struct summary_input in = {
		.ts = ts, .findings = model_findings_result(fx), .cpu = model_cpu_result(cpu),
		.mem = model_mem_result(mem), .stragglers = model_stragglers_result(strag),
		.rdma = model_rdma_result(rdma),
	};
	/* the first level that fits; the last one is bounded by construction */
	char *text = NULL;
	size_t len = 0;
	int rc = CLI_OK;
	for (size_t level = 0; level < summary_levels(); level++) {
		free(text);
		text = NULL;
		FILE *m = open_memstream(&text, &len);
		int failed = !m || summary_write(&in, fmt, level, m);
		if ((m && fclose(m)) || failed) {
			fprintf(errout, CLI_PROG " summary: out of memory\n");
			rc = CLI_FAIL;
			break;
		}
		if (summary_tokens(len) <= SUMMARY_MAX_TOKENS)
			break;
	}
	if (rc == CLI_OK && (fwrite(text, 1, len, out) != len || fflush(out) || ferror(out))) {
		fprintf(errout, CLI_PROG " summary: write failed on standard output\n");
		rc = CLI_FAIL;
	}
	free(text);
	trace_set_free(ts);
	return rc;
}
