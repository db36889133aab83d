/* `flightrec-analyze memory`: the GPU memory ledger of one or many traces,
 * per process and device: peak, in use at the end, leaks, failed
 * allocations with their top holders, frees of memory allocated before the
 * recording, the caching-allocator label and a compact in-use-over-time
 * table; text or --json.  Not the model (model_mem.c) nor the layout
 * (outputs/out_memory.c): this file parses the options, asks for the
 * models and hands their result to the writer. */
#include "cli.h"
#include "out_common.h"
#include "out_memory.h"
#include "commands.h"
#include "model_cuda.h"
#include "model_mem.h"
#include "out_mem_stacks.h"
#include "trace_set.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char memory_help[] =
	"usage: " CLI_PROG " memory FILE... [--pid PID] [--rows N] [--json]\n"
	"\n"
	"GPU memory as the CUDA allocation calls saw it (cudaMalloc, cuMemAlloc,\n"
	"cuMemCreate, ... and pinned host memory apart), per process and device:\n"
	"  peak            the largest bytes in use, and when (seconds from the\n"
	"                  start of the recording), with the top stacks then\n"
	"  in use at end   allocations never freed by the end of the recording\n"
	"                  ('leaks'; for a caching allocator: cached segments)\n"
	"  failed          allocations that returned an error (e.g. out of\n"
	"                  memory), with their stack and the top holders then\n"
	"  before recording  frees of addresses allocated before the recording\n"
	"                  started (their size is unknown)\n"
	"  caching allocator  processes that keep what they allocate (PyTorch's\n"
	"                  CUDACachingAllocator): the numbers are reserved\n"
	"                  segments, and live tensors inside them are invisible\n"
	"  in use over time  a table of N rows (the largest value in each)\n"
	"\n"
	"options:\n"
	"  --pid PID   only process PID\n"
	"  --rows N    rows of the in-use-over-time table (default 20, 1..2000)\n"
	"  --json      one JSON object: files, series (with up to 2048 in-use\n"
	"              points each), failed_allocations\n"
	"\n"
	"examples:\n"
	"  " CLI_PROG " memory run.frec\n"
	"  " CLI_PROG " memory run.frec --pid 4242 --rows 40\n"
	"  " CLI_PROG " memory node*.frec --json > memory.json\n"
	"  " CLI_PROG " flame run.frec --kind mem-inuse --format html -o peak.html\n";

static const struct cli_table_spec memory_spec = {
	.cmd = "memory", .help = memory_help, .takes_pid = 1,
	.number_name = "--rows", .number_min = 1, .number_max = 2000,
	.number_default = 20,
};

int cmd_memory(int argc, char **argv, FILE *out, FILE *errout)
{
	struct cli_table_args a;
	int rc = cli_parse_table_args(argc, argv, &memory_spec, &a, out, errout);
	if (rc)
		return rc < 0 ? CLI_OK : rc;
	struct model_opts mo = { .filter_pid = a.filter_pid, .pid = a.pid };
	void *mem;
	struct trace_set *ts = cli_open_with_model("memory", (const char *const *)a.files,
						     a.n_files, "mem", &mo,
						     &mem, errout);
	free(a.files);
	if (!ts)
		return CLI_FAIL;
	if (cli_run_set(ts, errout))
		return CLI_FAIL;
	const struct mem_result *r = model_mem_result(mem);
	if (!r->mem_events) {
		const char *path = trace_set_file(ts, 0)->path;
		if (a.filter_pid && r->cuda_events)
			fprintf(errout, CLI_PROG ": %s: no CUDA memory events of pid %u (see '" CLI_PROG
				" info' for the processes)\n", path, a.pid);
		else
			fprintf(errout, CLI_PROG ": %s: no CUDA memory events in this trace (was the cuda "
				"probe attached? see '" CLI_PROG " info')\n", path);
		trace_set_free(ts);
		return CLI_FAIL;
	}
	if (a.json)
		out_memory_json(ts, r, out);
	else
		out_memory_text(ts, r, a.number, out);
	rc = CLI_OK;
	if (fflush(out) || ferror(out)) {
		fprintf(errout, CLI_PROG " memory: write failed on standard output\n");
		rc = CLI_FAIL;
	}
	trace_set_free(ts);
	return rc;
}
