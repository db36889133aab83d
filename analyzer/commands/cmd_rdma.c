/* `flightrec-analyze rdma`: one row per local queue pair view of a
 * connection (both ends labelled), latency by opcode and size bucket, error
 * completions by status and class, empty polls and port counters; text or
 * --json (the shape in CLI.md, with more fields).  Not the model
 * (model_rdma.c) nor the layout (outputs/out_rdma.c): this file parses the
 * options, asks for the model and hands its result to the writer. */
#include "cli.h"
#include "out_common.h"
#include "out_rdma.h"
#include "commands.h"
#include "model_rdma.h"
#include "trace_set.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char rdma_help[] =
	"usage: " CLI_PROG " rdma FILE... [--pid PID] [--json]\n"
	"\n"
	"RDMA verbs traffic, one row per local queue pair (QP) of a connection; the\n"
	"two QPs of a connection are two rows, each naming the other (joined across\n"
	"the files by QP numbers and GIDs, so give every node's file):\n"
	"  ops, bytes   work requests completed successfully (sends and receives)\n"
	"               and their bytes; an unsignaled chain counts when the\n"
	"               signaled request after it completes\n"
	"  MB/s, ops/s  over the QP's active span (first post .. last completion)\n"
	"  p50/p99/max  post -> completion latency of the successful send-queue\n"
	"               requests: the completion event (poll_cq's return) minus the\n"
	"               post call's entry, within 0.8%\n"
	"  errors       error completions by status, flushes (IBV_WC_WR_FLUSH_ERR,\n"
	"               the QP was already in error) counted apart, not as losses\n"
	"then latency by opcode and size (<4K, 4K-64K, 64K-1M, >=1M), poll_cq\n"
	"calls that found nothing (per recording), and port counter increases.\n"
	"\n"
	"options:\n"
	"  --pid PID  only the QPs of process PID (their remote ends are still\n"
	"             labelled only when that process talks to itself)\n"
	"  --json     {\"connections\":[{\"local_qp\",\"remote_qp\",\"pid\",\"ops\",\n"
	"             \"bytes\",\"latency_us\":{\"p50\",\"p99\",\"max\"},\"errors\",\n"
	"             \"error_status\":{NAME:count}, ...}], \"counters\", \"files\"}\n"
	"\n"
	"examples:\n"
	"  " CLI_PROG " rdma run.frec\n"
	"  " CLI_PROG " rdma node1.frec node2.frec --json > rdma.json\n";

static const struct cli_table_spec rdma_spec = {
	.cmd = "rdma", .help = rdma_help, .takes_pid = 1,
};

int cmd_rdma(int argc, char **argv, FILE *out, FILE *errout)
{
	struct cli_table_args a;
	int rc = cli_parse_table_args(argc, argv, &rdma_spec, &a, out, errout);
	if (rc)
		return rc < 0 ? CLI_OK : rc;
	struct model_opts mo = { .filter_pid = a.filter_pid, .pid = a.pid };
	void *rdma;
	struct trace_set *ts = cli_open_with_model("rdma", (const char *const *)a.files,
						     a.n_files, "rdma", &mo,
						     &rdma, errout);
	free(a.files);
	if (!ts)
		return CLI_FAIL;
	if (cli_run_set(ts, errout))
		return CLI_FAIL;
	const struct rdma_result *r = model_rdma_result(rdma);
	if (!r->posts && !r->completions && !r->ctrl_calls && !r->n_counters) {
		const char *path = trace_set_file(ts, 0)->path;
		if (a.filter_pid)
			fprintf(errout, CLI_PROG ": %s: no RDMA verbs calls of pid %u in this trace (see '"
				CLI_PROG " info' for the processes)\n", path, a.pid);
		else
			fprintf(errout, CLI_PROG ": %s: no RDMA verbs calls nor port counters in this trace "
				"(was the rdma probe attached? see '" CLI_PROG " info')\n", path);
		trace_set_free(ts);
		return CLI_FAIL;
	}
	if (a.json)
		out_rdma_json(r, out);
	else
		out_rdma_text(r, out);
	rc = CLI_OK;
	if (fflush(out) || ferror(out)) {
		fprintf(errout, CLI_PROG " rdma: write failed on standard output\n");
		rc = CLI_FAIL;
	}
	trace_set_free(ts);
	return rc;
}
