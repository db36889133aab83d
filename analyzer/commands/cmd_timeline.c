/* `flightrec-analyze timeline`: Chrome trace event JSON for ui.perfetto.dev
 * from one or many trace files.  Parses options and streams the events
 * through the writer (out_timeline.c) in one pass: the decoder aligns the
 * files' clocks before it (align.h).  Not the layout: see out_timeline.h. */
#include "cli.h"
#include "commands.h"
#include "out_timeline.h"
#include "trace_set.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

static const char timeline_help[] =
	"usage: " CLI_PROG " timeline FILE... -o OUT.json\n"
	"\n"
	"Write the traces (one file per node, aligned on one clock) as Chrome\n"
	"trace event JSON, which ui.perfetto.dev and chrome://tracing open: one\n"
	"track per process (named with host and rank), CUDA calls, system calls,\n"
	"NCCL calls and every other probed call (e.g. ibv_create_qp) as slices on\n"
	"their thread, RDMA work requests as async\n"
	"slices from post to completion, GPU memory in use as a counter, steps on\n"
	"a track of their own, GPU idle (as 'findings' reads it) on a \"GPU idle\"\n"
	"track per process, each interval named by its main cause.  CPU samples\n"
	"are left out (see 'flame' and 'report').  Times are microseconds from\n"
	"the earliest event.\n"
	"\n"
	"options:\n"
	"  -o, --output OUT.json  where to write ('-' for standard output)\n"
	"\n"
	"examples:\n"
	"  " CLI_PROG " timeline run.frec -o run.json    # then open it in ui.perfetto.dev\n"
	"  " CLI_PROG " timeline node*.frec -o job.json\n";

int cmd_timeline(int argc, char **argv, FILE *out, FILE *errout)
{
	struct cli_file_output fo;
	int rc = cli_parse_file_output(argc, argv, "timeline", timeline_help, "OUT.json", 0, &fo, out, errout);
	if (rc)
		return rc < 0 ? CLI_OK : rc;
	struct trace_set *ts = cli_open(fo.files, fo.n_files, errout);
	free(fo.files);
	struct cli_dest dst;
	if (!ts || cli_dest_open(&dst, fo.output, out, errout)) {
		if (ts)
			trace_set_free(ts);
		return CLI_FAIL;
	}
	struct frec_error err = { .offset = -1 };
	struct out_timeline *t = NULL;
	rc = CLI_FAIL;
	if (out_timeline_begin(ts, dst.f, &t, &err) || trace_set_run(ts, &err) ||
	    out_timeline_end(t, ts, &err)) {
		cli_print_error(errout, &err);
	} else {
		cli_warn_troubled(ts, errout);
		const struct out_timeline_stats *s = out_timeline_stats(t);
		if (dst.is_file)
			fprintf(errout, CLI_PROG ": %s: %" PRIu64 " slices (%" PRIu64 " that did not nest "
				"written as async), %" PRIu64 " async events, %" PRIu64 " counter values, %"
				PRIu64 " steps, %" PRIu64 " GPU-idle intervals\n", fo.output,
				s->slices + s->demoted, s->demoted, s->async, s->counters, s->steps,
				s->gpu_idle);
		rc = CLI_OK;
	}
	rc = cli_dest_close(&dst, rc, errout);
	out_timeline_free(t);
	trace_set_free(ts);
	return rc;
}
