/* `flightrec-analyze explain FUNCTION FILE...`: one function's whole
 * story, for a person or an agent about to open its code.  This file
 * parses options, asks for the models the other commands use (so the
 * numbers are flame's, cuda's, memory's and findings'), and hands the
 * story (func_story.c) to its layout (out_explain.c). */
#include "cli.h"
#include "commands.h"
#include "func_story.h"
#include "model.h"
#include "model_cpu.h"
#include "model_findings.h"
#include "model_mem.h"
#include "model_stack_calls.h"
#include "out_explain.h"
#include "trace_set.h"

#include <stdlib.h>

static const char explain_help[] =
	"usage: " CLI_PROG " explain FUNCTION FILE... [--pid PID] [--top N] [--json]\n"
	"\n"
	"One function's whole story: what to know before changing it.\n"
	"  CPU        samples under it (total) and ending in it (self), as shares\n"
	"             of every sample; its callers and callees with theirs (the\n"
	"             numbers of 'flame --kind cpu')\n"
	"  where      its module and symbol offset (from the trace's mappings), or\n"
	"             for a Python frame its file and heaviest line\n"
	"  CUDA       the calls made under it: calls, time, errors per function\n"
	"             (counted as 'cuda' counts them)\n"
	"  GPU memory bytes allocated under it and in use under it at the peak\n"
	"             ('flame --kind mem-alloc' / 'mem-inuse')\n"
	"  syscalls   the system calls made under it: calls, time, failures\n"
	"  findings   those whose 'where' holds it, with their cost\n"
	"  processes  the processes and ranks that ran it\n"
	"FUNCTION is a frame name as flame prints it; a Python frame matches\n"
	"with every line (\"forward\" matches \"forward (model.py:12)\").  When no\n"
	"frame matches, the frames whose names hold it are listed (exit 1).\n"
	"\n"
	"options:\n"
	"  --pid PID  only process PID\n"
	"  --top N    rows per list (default 10)\n"
	"  --json     one JSON object (keys: " CLI_PROG " explain --help, out_explain.h)\n"
	"\n"
	"examples:\n"
	"  " CLI_PROG " explain forward_backward run.frec\n"
	"  " CLI_PROG " explain 'Linear.forward' node*.frec --json\n";

static const struct cli_table_spec explain_spec = {
	.cmd = "explain", .help = explain_help, .usage = "FUNCTION FILE...", .takes_pid = 1,
	.number_name = "--top", .number_min = 1, .number_max = 1000, .number_default = 10,
};

int cmd_explain(int argc, char **argv, FILE *out, FILE *errout)
{
	struct cli_table_args a;
	int rc = cli_parse_table_args(argc, argv, &explain_spec, &a, out, errout);
	if (rc)
		return rc < 0 ? CLI_OK : rc;
	if (a.n_files < 2 || !a.files[0][0]) {
		fprintf(errout, CLI_PROG " explain: %s (usage: " CLI_PROG
			" explain FUNCTION FILE...)\n", a.n_files < 2 ? "no trace file given"
								: "empty function name");
		free(a.files);
		return CLI_USAGE;
	}
	const char *fn = a.files[0];
	struct trace_set *ts = cli_open(a.files + 1, a.n_files - 1, errout);
	free(a.files);
	if (!ts)
		return CLI_FAIL;
	struct model_opts mo = { .filter_pid = a.filter_pid, .pid = a.pid };
	void *cpu = trace_set_use_model(ts, "cpu", &mo);
	void *mem = cpu ? trace_set_use_model(ts, "mem", &mo) : NULL;
	void *calls = mem ? trace_set_use_model(ts, "stack_calls", &mo) : NULL;
	void *fx = calls ? trace_set_use_model(ts, "findings", &mo) : NULL;
	if (!fx) {
		fprintf(errout, CLI_PROG " explain: out of memory\n");
		trace_set_free(ts);
		return CLI_FAIL;
	}
	if (cli_run_set(ts, errout))
		return CLI_FAIL;
	const struct findings_result *fr = model_findings_result(fx);
	struct story_input in = { .cpu = model_cpu_result(cpu), .mem = model_mem_result(mem),
				  .findings = fr, .calls = model_stack_calls_result(calls) };
	struct func_story s;
	struct frec_error err = { .offset = -1 };
	if (func_story_build(ts, &in, fn, &s, &err)) {
		cli_print_error(errout, &err);
		func_story_free(&s);
		trace_set_free(ts);
		return CLI_FAIL;
	}
	if (a.json)
		out_explain_json(out, &s, fr, a.number);
	else
		out_explain_text(out, &s, fr, a.number);
	rc = s.found ? CLI_OK : CLI_FAIL;
	if (fflush(out) || ferror(out)) {
		fprintf(errout, CLI_PROG " explain: write failed on standard output\n");
		rc = CLI_FAIL;
	}
	if (!s.found)
		fprintf(errout, CLI_PROG " explain: no frame is '%s'%s\n", fn,
			s.n_candidates ? "; the closest are listed" : "");
	func_story_free(&s);
	trace_set_free(ts);
	return rc;
}
