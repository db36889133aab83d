/* `flightrec-analyze mcp ROOT...`: the analyzer as a stdio MCP server for
 * LLM agents (mcp_server.c: protocol; mcp_tools.c: the tools, which run
 * the CLI's own commands).  This file parses options and protects the
 * protocol channel: responses go to a copy of standard output, and
 * standard output itself is pointed at standard error, so a stray print
 * cannot corrupt the channel. */
#include "cli.h"
#include "commands.h"
#include "mcp_redact.h"
#include "mcp_server.h"
#include "redact.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char mcp_help[] =
	"usage: " CLI_PROG " mcp ROOT... [--max-tokens N] [--redact | --redact-all]\n"
	"\n"
	"A Model Context Protocol server on standard input and output (newline-\n"
	"delimited JSON-RPC; logs on standard error) for an LLM agent: Claude Code,\n"
	"Cursor, VS Code, the MCP Inspector ... (as the client's command:\n"
	"  " CLI_PROG " mcp /path/to/traces).  Both protocol eras: the initialize\n"
	"handshake (2025-03-26, 2025-06-18, 2025-11-25) and the stateless 2026-07-28\n"
	"revision (server/discover, _meta in every request).\n"
	"\n"
	"Tools (read-only; each runs the command of the same numbers):\n"
	"  list_traces    trace files and archives under the roots\n"
	"  open_traces    what they hold (info)\n"
	"  get_summary    the recording in 2,000 tokens (summary)\n"
	"  list_findings  why the GPUs wait, one finding with number (findings)\n"
	"  hot_paths      heaviest CPU / GPU memory stacks, through a frame (flame)\n"
	"  explain        one function's story (explain)\n"
	"  get_report     memory, cuda, stragglers or rdma in full\n"
	"  diff           two recordings compared (diff)\n"
	"  query_events   events one by one, filtered and paged (dump)\n"
	"Every result: one text block (the command's text, in a fence labelled\n"
	"untrusted) and structuredContent {tool, truncated, next_cursor, budget,\n"
	"data: the command's JSON}, each within max_tokens (default 2000, counted\n"
	"as bytes / 4), cut with a cursor or trimmed when over.  Strings from\n"
	"traces are normalised (controls, bidi and zero-width characters dropped)\n"
	"and capped at 512 bytes.  Paths are confined to the ROOTs.\n"
	"\n"
	"options:\n"
	"  --max-tokens N  the most any call may ask for (256-8000, default 8000)\n"
	"  --redact        serve what '" CLI_PROG " archive --redact' would show: every\n"
	"                  trace a tool reads is a redacted copy (made once per file,\n"
	"                  kept open and unlinked, never on disk past its making), one\n"
	"                  secret for the server, so a value has the same token in\n"
	"                  every trace and every call; the outputs name a trace as\n"
	"                  the client did\n"
	"  --redact-all    --redact, and the settings that explain behaviour too\n"
	"\n"
	"examples:\n"
	"  " CLI_PROG " mcp /data/traces\n"
	"  claude mcp add flightrec -- " CLI_PROG " mcp $PWD/traces\n"
	"  " CLI_PROG " mcp --redact ~/bug-reports   (a hosted model sees no secrets)\n"
	"\n"
	"redaction:\n";

int cmd_mcp(int argc, char **argv, FILE *out, FILE *errout)
{
	const char **roots = calloc((size_t)argc, sizeof(*roots));
	size_t n = 0;
	unsigned cap = MCP_MAX_TOKENS;
	int redact = 0, redact_all = 0;
	if (!roots) {
		fprintf(errout, CLI_PROG " mcp: out of memory\n");
		return CLI_FAIL;
	}
	for (int i = 1; i < argc; i++) {
		int m;
		if (cli_is_help(argv[i])) {
			fputs(mcp_help, out);
			cli_print_wrapped(out, redact_help_text);
			free(roots);
			return CLI_OK;
		} else if (!strcmp(argv[i], "--redact") || !strcmp(argv[i], "--redact-all")) {
			redact = 1;
			redact_all |= !strcmp(argv[i], "--redact-all");
		} else if ((m = cli_uint_option(argc, argv, &i, "--max-tokens", "mcp", 256,
						 MCP_MAX_TOKENS, &cap, errout))) {
			if (m < 0) {
				free(roots);
				return CLI_USAGE;
			}
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(errout, CLI_PROG " mcp: unknown option '%s' (see '" CLI_PROG
				" mcp --help')\n", argv[i]);
			free(roots);
			return CLI_USAGE;
		} else {
			roots[n++] = argv[i];
		}
	}
	if (!n) {
		fprintf(errout, CLI_PROG " mcp: no ROOT given (usage: " CLI_PROG " mcp ROOT...)\n");
		free(roots);
		return CLI_USAGE;
	}
	struct mcp_roots r;
	char err[512];
	if (mcp_roots_init(&r, roots, n, err, sizeof(err))) {
		fprintf(errout, CLI_PROG " mcp: %s\n", err);
		free(roots);
		return CLI_FAIL;
	}
	free(roots);
	struct mcp_redact *red = NULL;
	if (redact && !(red = mcp_redact_new(&r, redact_all, err, sizeof(err)))) {
		fprintf(errout, CLI_PROG " mcp: %s\n", err);
		mcp_roots_free(&r);
		return CLI_FAIL;
	}
	fflush(out);
	int proto = dup(fileno(out));
	if (proto < 0 || (out == stdout && dup2(fileno(errout), STDOUT_FILENO) < 0)) {
		fprintf(errout, CLI_PROG " mcp: cannot set up standard output\n");
		mcp_redact_free(red);
		mcp_roots_free(&r);
		return CLI_FAIL;
	}
	signal(SIGPIPE, SIG_IGN);
	struct mcp_ctx ctx = { .roots = &r, .cap_tokens = cap, .redact = red };
	int rc = mcp_serve(STDIN_FILENO, proto, &ctx);
	close(proto);
	mcp_redact_free(red);
	mcp_roots_free(&r);
	return rc ? CLI_FAIL : CLI_OK;
}
