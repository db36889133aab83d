/* `flightrec-analyze timeline`: Chrome trace event JSON or Perfetto's
 * protobuf trace for ui.perfetto.dev from one or many trace files.  Parses options and streams the events
 * through the writer (out_timeline.c) in one pass: the decoder aligns the
 * files' clocks before it (align.h).  Not the layout: see out_timeline.h. */
#include "cli.h"
#include "commands.h"
#include "out_timeline.h"
#include "trace_set.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <sys/types.h>
#include <string.h>

static const char timeline_help[] =
	"usage: " CLI_PROG " timeline FILE... -o OUT [--format json|perfetto] [--from S]\n"
	"                            [--to S] [--pid PID] [--rank R]\n"
	"\n"
	"Write the traces (one file per node, aligned on one clock) as Chrome\n"
	"trace event JSON, which ui.perfetto.dev and chrome://tracing open, or as\n"
	"Perfetto's own protobuf trace (--format perfetto): one\n"
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
	"  -o, --output OUT  where to write ('-' for standard output)\n"
	"  --format FMT     json (default): Chrome trace event JSON, times in\n"
	"                   microseconds; perfetto: a perfetto.protos.Trace\n"
	"                   (.pftrace) for ui.perfetto.dev and trace_processor,\n"
	"                   ns times, GPU memory as counter tracks in bytes, and\n"
	"                   no 256 MB limit: the one for a long or many-rank\n"
	"                   recording\n"
	"  --from S, --to S  only the events that meet the window [S, S'] in\n"
	"                   seconds from the earliest event (the times the whole\n"
	"                   file shows: a window's events keep their times); each\n"
	"                   GPU memory counter starts with its value at --from\n"
	"  --pid PID        only process PID (in any file)\n"
	"  --rank R         only the processes whose launcher rank (RANK) is R\n"
	"\n"
	"examples:\n"
	"  " CLI_PROG " timeline run.frec -o run.json    # then open it in ui.perfetto.dev\n"
	"  " CLI_PROG " timeline node*.frec -o job.json\n"
	"  " CLI_PROG " timeline node*.frec --format perfetto -o job.pftrace\n"
	"  " CLI_PROG " timeline node*.frec --rank 3 --from 120 --to 125 -o r3.json\n";

/* "S" as ns; 0, or CLI_USAGE after saying why. */
static int parse_seconds(const char *opt, const char *v, int64_t *ns, FILE *errout)
{
	char *end;
	double sec = v ? strtod(v, &end) : 0;
	if (!v || end == v || *end || !isfinite(sec) || sec < 0 || sec > 1e9) {
		fprintf(errout, CLI_PROG " timeline: %s takes seconds from the earliest event "
			"(e.g. %s 12.5)%s%s%s\n", opt, opt, v ? ", not '" : "", v ? v : "", v ? "'" : "");
		return CLI_USAGE;
	}
	*ns = (int64_t)(sec * 1e9 + 0.5);
	return 0;
}

/* Takes --from/--to/--pid/--rank/--format out of argv (into q and *format),
 * leaving the rest for cli_parse_file_output; 0 or CLI_USAGE. */
static int timeline_filter(int *argc, char **argv, struct out_timeline_filter *q,
			   enum out_timeline_format *format, FILE *errout)
{
	int n = 1, from = 0, to = 0;
	q->to_ns = INT64_MAX;
	for (int i = 1; i < *argc; i++) {
		const char *a = argv[i];
		int m;
		if (strcmp(a, "--") == 0) {
			while (i < *argc)
				argv[n++] = argv[i++];
			break;
		}
		if (strcmp(a, "--from") == 0 || strcmp(a, "--to") == 0) {
			int is_from = a[2] == 'f';
			if (parse_seconds(a, i + 1 < *argc ? argv[i + 1] : NULL,
					  is_from ? &q->from_ns : &q->to_ns, errout))
				return CLI_USAGE;
			*(is_from ? &from : &to) = 1;
			i++;
		} else if (strcmp(a, "--format") == 0) {
			const char *v = i + 1 < *argc ? argv[i + 1] : NULL;
			if (v && !strcmp(v, "json")) {
				*format = OUT_TIMELINE_JSON;
			} else if (v && !strcmp(v, "perfetto")) {
				*format = OUT_TIMELINE_PERFETTO;
			} else {
				fprintf(errout, CLI_PROG " timeline: --format takes json or perfetto%s%s%s\n",
					v ? ", not '" : "", v ? v : "", v ? "'" : "");
				return CLI_USAGE;
			}
			i++;
		} else if (strcmp(a, "--rank") == 0) {
			char *end;
			long r = i + 1 < *argc ? strtol(argv[i + 1], &end, 10) : -1;
			if (i + 1 >= *argc || end == argv[i + 1] || *end || r < 0 || r > INT32_MAX) {
				fprintf(errout, CLI_PROG " timeline: --rank takes a rank (0, 1, ...)\n");
				return CLI_USAGE;
			}
			q->filter_rank = 1;
			q->rank = r;
			i++;
		} else if ((m = cli_pid_option(*argc, argv, &i, "timeline", &q->pid, &q->filter_pid,
					       errout))) {
			if (m < 0)
				return CLI_USAGE;
		} else {
			argv[n++] = argv[i];
		}
	}
	*argc = n;
	argv[n] = NULL;
	q->window = from || to;
	if (q->window && q->to_ns < q->from_ns) {
		fprintf(errout, CLI_PROG " timeline: --to is before --from\n");
		return CLI_USAGE;
	}
	return 0;
}

/* Past this, a JSON timeline is too big for the viewers (256 MB: the
 * Chrome trace viewer's string limit; Perfetto's web UI fails not far
 * above).  FLIGHTREC_TIMELINE_BIG_BYTES sets another bound (the tests). */
static uint64_t timeline_big_bytes(void)
{
	const char *env = getenv("FLIGHTREC_TIMELINE_BIG_BYTES");
	char *end;
	unsigned long long v = env ? strtoull(env, &end, 10) : 0;
	return env && *env && !*end ? (uint64_t)v : 256ull << 20;
}

int cmd_timeline(int argc, char **argv, FILE *out, FILE *errout)
{
	struct cli_file_output fo;
	struct out_timeline_filter q = { 0 };
	enum out_timeline_format format = OUT_TIMELINE_JSON;
	char **args = calloc((size_t)argc + 1, sizeof(*args));
	if (!args) {
		fprintf(errout, CLI_PROG " timeline: out of memory\n");
		return CLI_FAIL;
	}
	memcpy(args, argv, (size_t)argc * sizeof(*args));
	int rc = timeline_filter(&argc, args, &q, &format, errout);
	if (!rc)
		rc = cli_parse_file_output(argc, args, "timeline", timeline_help, "OUT", 0, &fo,
					   out, errout);
	free(args);
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
	if (out_timeline_begin(ts, dst.f, format, &q, &t, &err) || trace_set_run(ts, &err) ||
	    out_timeline_end(t, ts, &err)) {
		cli_print_error(errout, &err);
	} else {
		cli_warn_troubled(ts, errout);
		const struct out_timeline_stats *s = out_timeline_stats(t);
		if (dst.is_file)
			fprintf(errout, CLI_PROG ": %s: %" PRIu64 " slices (%" PRIu64 " that did not nest "
				"written as async), %" PRIu64 " async events, %" PRIu64 " counter values, %"
				PRIu64 " steps, %" PRIu64 " GPU kernels, %" PRIu64 " GPU-idle intervals\n",
				fo.output, s->slices + s->gpu_kernels + s->demoted, s->demoted, s->async,
				s->counters, s->steps, s->gpu_kernels, s->gpu_idle);
		if (dst.is_file && s->filtered)
			fprintf(errout, CLI_PROG ": %s: %" PRIu64 " events outside --from/--to, --pid or "
				"--rank left out\n", fo.output, s->filtered);
		off_t bytes = dst.is_file ? ftello(dst.f) : -1;
		if (format == OUT_TIMELINE_JSON && bytes > 0 && (uint64_t)bytes > timeline_big_bytes())
			fprintf(errout, CLI_PROG ": %s is %.1f MB: chrome://tracing refuses JSON past "
				"256 MB and ui.perfetto.dev runs out of memory not far above; write "
				"Perfetto's own format (--format perfetto -o OUT.pftrace), a window "
				"(--from SEC --to SEC) or some processes (--pid PID, --rank R), and see "
				"the time range with 'info'\n", fo.output, (double)bytes / 1e6);
		rc = CLI_OK;
	}
	rc = cli_dest_close(&dst, rc, errout);
	out_timeline_free(t);
	trace_set_free(ts);
	return rc;
}
