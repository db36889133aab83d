/* flightrec-analyze: dispatches a subcommand to its cmd_*.c.  Nothing else
 * lives here: commands are in the library so tests can run them. */
#include "cli.h"
#include "flightrec_version.h"
#include "frec_format.h"
#include "commands.h"

#include <stdio.h>
#include <string.h>

static const struct {
	const char *name;
	int (*run)(int argc, char **argv, FILE *out, FILE *errout);
	const char *summary;
} commands[] = {
	{ "info", cmd_info, "what a trace holds: processes, time range, events by type, drops, chunks" },
	{ "check", cmd_check, "integrity: exit 0 intact, 1 damaged or incomplete, 2 unusable" },
	{ "flame", cmd_flame, "flame graph of CPU samples or GPU memory: folded stacks, SVG or HTML" },
	{ "dump", cmd_dump, "every event as JSON lines, stacks symbolized" },
	{ "rdma", cmd_rdma, "RDMA per connection: ops, bytes, latency p50/p99/max, error completions" },
	{ "memory", cmd_memory, "GPU memory: peak, in use over time, leaks, failed allocations" },
	{ "cuda", cmd_cuda, "CUDA API calls: time per function, copies, async copies then sync" },
	{ "sqlite", cmd_sqlite, "every event into one SQLite database (schema: SQLITE_SCHEMA.md)" },
	{ "timeline", cmd_timeline, "Chrome trace event JSON for ui.perfetto.dev" },
	{ "report", cmd_report, "one self-contained offline HTML report" },
	{ "stragglers", cmd_stragglers, "which rank the others wait for, its cost per step, and why" },
	{ "archive", cmd_archive, "traces bundled into one tar.zst with a manifest, optionally redacted" },
	{ "findings", cmd_findings, "why the GPUs wait, what each cause costs, what to change" },
	{ "summary", cmd_summary, "the whole recording in 2,000 tokens (md or json) for a person or an LLM" },
	{ "explain", cmd_explain, "one function's story: CPU share, callers, callees, CUDA, memory, findings" },
	{ "diff", cmd_diff, "two recordings compared: step time, findings, functions that changed" },
	{ "export", cmd_export, "export clickhouse: findings, stragglers, stacks ... into ClickHouse tables" },
	{ "mcp", cmd_mcp, "an MCP server on stdio for LLM agents, over the commands above" },
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
	fprintf(out,
		"usage: " CLI_PROG " COMMAND [OPTIONS] FILE...\n"
		"\n"
		"Offline analyzer for flightrec traces: runs anywhere, as any user, with\n"
		"nothing but the trace files (one per node).\n"
		"\n"
		"commands:\n");
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(out, "  %-7s %s\n", commands[i].name, commands[i].summary);
	fprintf(out,
		"\n"
		"Run '" CLI_PROG " COMMAND --help' for a command's options and examples.\n"
		"\n"
		"examples:\n"
		"  " CLI_PROG " check run.frec\n"
		"  " CLI_PROG " info run.frec\n"
		"  " CLI_PROG " flame run.frec --kind cpu --format svg -o cpu.svg\n");
}

/* Edit distance of a and b (b short), capped at 3: enough to tell a typo. */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[32];
	if (lb >= sizeof(row) / sizeof(row[0]) || la > lb + 3 || lb > la + 3)
		return 3;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			if (up + 1 < best)
				best = up + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb] < 3 ? row[lb] : 3;
}

/* The command a mistyped name most likely meant: a prefix of one command,
 * or one within two edits; NULL when none stands out. */
static const char *meant(const char *name)
{
	const char *best = NULL;
	size_t best_d = 3, prefixed = 0;
	for (size_t i = 0; i < N_COMMANDS; i++) {
		if (*name && !strncmp(commands[i].name, name, strlen(name))) {
			prefixed++;
			best = commands[i].name;
			best_d = 0;
		}
	}
	if (prefixed == 1)
		return best;
	best = NULL;
	best_d = 3;
	for (size_t i = 0; i < N_COMMANDS; i++) {
		size_t d = distance(name, commands[i].name);
		if (d < best_d) {
			best_d = d;
			best = commands[i].name;
		}
	}
	return best;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CLI_USAGE;
	}
	const char *name = argv[1];
	if (cli_is_help(name)) {
		usage(stdout);
		return CLI_OK;
	}
	if (strcmp(name, "--version") == 0) {
		printf(CLI_PROG " %s (trace format %d.%d)\n", FLIGHTREC_VERSION, FR_VERSION_MAJOR,
		       FR_VERSION_MINOR);
		return CLI_OK;
	}
	if (strcmp(name, "help") == 0) {
		if (argc < 3) {
			usage(stdout);
			return CLI_OK;
		}
		name = argv[2];
		for (size_t i = 0; i < N_COMMANDS; i++) {
			if (strcmp(commands[i].name, name) == 0) {
				char help[] = "--help";
				char *args[] = { argv[2], help, NULL };
				return commands[i].run(2, args, stdout, stderr);
			}
		}
	} else {
		for (size_t i = 0; i < N_COMMANDS; i++)
			if (strcmp(commands[i].name, name) == 0)
				return commands[i].run(argc - 1, argv + 1, stdout, stderr);
	}
	const char *guess = meant(name);
	if (guess)
		fprintf(stderr, CLI_PROG ": unknown command '%s'; did you mean '%s'? "
			"(" CLI_PROG " --help lists them)\n", name, guess);
	else
		fprintf(stderr, CLI_PROG ": unknown command '%s' (" CLI_PROG " --help lists them)\n",
			name);
	return CLI_USAGE;
}
