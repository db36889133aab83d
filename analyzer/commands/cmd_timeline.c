/* `flightrec-analyze timeline`: Chrome trace event JSON for ui.perfetto.dev
 * from one or many trace files.  Parses options, finds the clock offsets and
 * the origin (a first pass with only model_nccl, which aligns the nodes on
 * collective exits: the JSON's times count from the earliest event, and
 * both are known only after reading every file), then streams the events
 * through the writer (out_timeline.c) with those offsets.  Not the layout: see out_timeline.h. */
#include "cli.h"
#include "commands.h"
#include "model_nccl.h"
#include "out_common.h"
#include "out_timeline.h"
#include "trace_set.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char timeline_help[] =
	"usage: " CLI_PROG " timeline FILE... -o OUT.json\n"
	"\n"
	"Write the traces (one file per node, aligned on one clock) as Chrome\n"
	"trace event JSON, which ui.perfetto.dev and chrome://tracing open: one\n"
	"track per process (named with host and rank), CUDA calls, system calls\n"
	"and NCCL calls as slices on their thread, RDMA work requests as async\n"
	"slices from post to completion, GPU memory in use as a counter, steps on\n"
	"a track of their own.  CPU samples are left out (see 'flame' and\n"
	"'report').  Times are microseconds from the earliest event.\n"
	"\n"
	"options:\n"
	"  -o, --output OUT.json  where to write ('-' for standard output)\n"
	"\n"
	"examples:\n"
	"  " CLI_PROG " timeline run.frec -o run.json    # then open it in ui.perfetto.dev\n"
	"  " CLI_PROG " timeline node*.frec -o job.json\n";

static int first_event(const char **files, size_t n, int64_t *origin, int64_t *offsets,
		       FILE *errout)
{
	struct frec_error err = { .offset = -1 };
	struct trace_set *ts = NULL;
	if (trace_set_open(files, n, &ts, &err) || !trace_set_add_model(ts, &model_nccl_ops, NULL) ||
	    trace_set_run(ts, &err)) {
		if (!err.what[0])
			frec_error_set(&err, "timeline", -1, ENOMEM, "out of memory");
		cli_print_error(errout, &err);
		if (ts)
			trace_set_free(ts);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		offsets[i] = out_clock_offset_ns(ts, i);
	*origin = out_timeline_first_event_ns(ts);
	if (*origin == INT64_MAX) { /* no events: the earliest recording start */
		for (size_t i = 0; i < trace_set_count(ts); i++) {
			const struct trace_file *f = trace_set_file(ts, i);
			int64_t s = (int64_t)f->hdr.start_real_ns;
			if (s < *origin)
				*origin = s;
		}
	}
	trace_set_free(ts);
	return 0;
}

int cmd_timeline(int argc, char **argv, FILE *out, FILE *errout)
{
	struct cli_file_output fo;
	int rc = cli_parse_file_output(argc, argv, "timeline", timeline_help, "OUT.json", 0, &fo, out, errout);
	if (rc)
		return rc < 0 ? CLI_OK : rc;
	const char **files = fo.files;
	size_t n_files = fo.n_files;
	const char *output = fo.output;
	int64_t origin;
	int64_t *offsets = calloc(n_files, sizeof(*offsets));
	if (!offsets || first_event(files, n_files, &origin, offsets, errout)) {
		if (!offsets)
			fprintf(errout, CLI_PROG " timeline: out of memory\n");
		free(offsets);
		free(files);
		return CLI_FAIL;
	}
	struct frec_error err = { .offset = -1 };
	struct trace_set *ts;
	if (trace_set_open(files, n_files, &ts, &err)) {
		cli_print_error(errout, &err);
		free(files);
		free(offsets);
		return CLI_FAIL;
	}
	free(files);
	FILE *dst = out;
	int to_file = strcmp(output, "-") != 0;
	if (to_file && !(dst = fopen(output, "w"))) {
		fprintf(errout, CLI_PROG ": %s: cannot create: %s\n", output, strerror(errno));
		trace_set_free(ts);
		free(offsets);
		return CLI_FAIL;
	}
	struct out_timeline *t = NULL;
	rc = CLI_FAIL;
	if (out_timeline_begin(ts, dst, origin, &t, &err) ||
	    out_timeline_set_offsets(t, offsets, n_files) || trace_set_run(ts, &err) ||
	    out_timeline_end(t, ts, &err)) {
		cli_print_error(errout, &err);
	} else {
		cli_warn_troubled(ts, errout);
		const struct out_timeline_stats *s = out_timeline_stats(t);
		if (to_file)
			fprintf(errout, CLI_PROG ": %s: %" PRIu64 " slices (%" PRIu64 " that did not nest "
				"written as async), %" PRIu64 " async events, %" PRIu64 " counter values, %"
				PRIu64 " steps\n", output, s->slices + s->demoted, s->demoted, s->async,
				s->counters, s->steps);
		rc = CLI_OK;
	}
	if (to_file && fclose(dst) && rc == CLI_OK) {
		fprintf(errout, CLI_PROG ": %s: write failed: %s\n", output, strerror(errno));
		rc = CLI_FAIL;
	}
	if (rc != CLI_OK && to_file)
		unlink(output);
	out_timeline_free(t);
	trace_set_free(ts);
	free(offsets);
	return rc;
}
