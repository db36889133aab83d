/* `flightrec-analyze findings`: why the GPUs wait, what each cause costs,
 * where it is and what to change; text, or --json in the shape
 * /work/shared/CLI.md fixes (with extra fields: steps_from, step_ms,
 * steps_regular, step_site, min_share, below; out_findings_json.c writes it, shared with the report).  Not the
 * analysis (model_findings.h): this file parses options and lays out the
 * result. */
#include "cli.h"
#include "commands.h"
#include "model_findings.h"
#include "model.h"
#include "out_findings_json.h"
#include "out_common.h"
#include "trace_set.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char findings_help[] =
	"usage: " CLI_PROG " findings FILE... [--json] [--pid PID]\n"
	"\n"
	"Why the GPUs wait, what it costs, and what to change.  GPU idle is read\n"
	"from host signals: after a synchronizing call returns (a synchronize, a\n"
	"synchronous copy, cudaFree, a blocking NCCL call) a process's device has\n"
	"nothing to do until it queues the next launch; what the thread that\n"
	"synchronized did meanwhile is the cause.  Inside an NCCL collective (the\n"
	"call, or the synchronize that waits for an enqueued one) the GPU computes\n"
	"nothing either: that time is the straggler's or the exchange's.  Record\n"
	"with --probes cpu,syscalls,cuda (and nccl, rdma for distributed jobs; one\n"
	"trace per node, all given at once) and a sampling rate such as --freq 999.\n"
	"\n"
	"  dataloader       reading or decoding input on the training thread, or\n"
	"                   waiting there for loader workers (named when their writes\n"
	"                   or wakes ended the waits)\n"
	"  pageable_copy    host-device copies from pageable memory\n"
	"  sync_checkpoint  saving state on the training thread: serializing (CPU in\n"
	"                   *save*/*serializ* code), writes, fsync, close, rename\n"
	"  host_sync        synchronizing calls inside the step (.item(): a synchronize,\n"
	"                   or a synchronous copy of <= 64 KiB to the host): the host's\n"
	"                   own work between it and the next launch\n"
	"  launch_bound     the host issues many small kernels slower than the GPU runs\n"
	"                   them: runs of >= 16 launches on one stream whose closing\n"
	"                   synchronize waits less than the median gap between launches;\n"
	"                   the gaps the GPU idled in if no kernel ran longer than the\n"
	"                   run's last one (kernel times are not recorded)\n"
	"  nccl_exchange    collectives moving data on the critical path: the time\n"
	"                   from the last rank's entry to the collective's completion,\n"
	"                   while the GPU had no other work (overlap it with compute)\n"
	"  straggler        the rank the others wait for (stragglers model): its lead\n"
	"                   over the second latest rank, inside the others' collectives\n"
	"  oom, memory_leak, rdma_errors   no idle cost; listed after the others\n"
	"\n"
	"Each finding: its cost in GPU-idle ms (summed over its processes), per step,\n"
	"and as a share of wall time x processes; findings under 3% are not listed.\n"
	"small_batch is not evaluated: no host signal measures GPU occupancy.  Idle\n"
	"is read per process: with several streams or devices a synchronize is taken\n"
	"to empty them all (the output says so under not evaluated, per_stream_idle).\n"
	"The idle after the last synchronize lasts until the process exits.\n"
	"\n"
	"Steps: step markers (--step-marker), else the NCCL collective period, else\n"
	"the outermost repeating unit of the synchronizing calls (a call made once a\n"
	"step, with the calls made many times a step inside it); the first line says\n"
	"which, the median step and how many steps lie within 25% of it.\n"
	"A job recorded with --gpu-kernels carries the GPU's own kernel times: the\n"
	"kernel time inside an interval the host signals call idle is then taken\n"
	"off it, and each process's line says 'measured'; without them its idle\n"
	"is an upper bound ('from host signals').\n"
	"\n"
	"options:\n"
	"  --json      one JSON object (steps, steps_from, step_ms, steps_regular,\n"
	"              step_site, wall_ms, gpu_idle_ms, unexplained_ms, streams,\n"
	"              devices, gpu_time_from (\"kernels\" or \"host_signals\"),\n"
	"              gpu_kernels, gpu_busy_ms, busy_in_host_idle_ms: maps by pid;\n"
	"              processes: the same per process with its host and rank,\n"
	"              for nodes whose pids repeat; not_evaluated, findings)\n"
	"  --pid PID   only this process\n"
	"\n"
	"examples:\n"
	"  sudo flightrec record -o run.frec --probes cpu,syscalls,cuda --freq 999 -- python train.py\n"
	"  " CLI_PROG " findings run.frec\n"
	"  " CLI_PROG " findings node*.frec --json > findings.json\n";

static const struct cli_table_spec findings_spec = {
	.cmd = "findings", .help = findings_help, .takes_pid = 1,
};

static void steps_said(FILE *out, const struct findings_result *r)
{
	const char *from = r->steps_from;
	if (!strcmp(from, "marker"))
		fputs("from step markers", out);
	else if (!strcmp(from, "collective_period"))
		fputs("from the NCCL collective period", out);
	else if (!strcmp(from, "sync_period"))
		fprintf(out, "from the period of the synchronizing calls: %s once a step",
			r->step_site ? r->step_site : "a call");
	else
		fputs("no repeating step found: the whole run is one step", out);
	if (r->step_ms > 0)
		fprintf(out, ", median %.1f ms, %.0f%% of steps within 25%% of it", r->step_ms,
			100 * r->step_regular);
}

static void text_finding(FILE *out, size_t i, const struct finding *f)
{
	fprintf(out, "\n%zu. %s", i, finding_kind_name(f->kind));
	if (f->has_cost)
		fprintf(out, ": %.1f ms of GPU idle (%.2f ms per step, %.1f%% of wall x %zu "
			"process%s)", f->cost_ms, f->cost_ms_per_step, 100 * f->share, f->n_pids,
			f->n_pids == 1 ? "" : "es");
	else
		fputs(" (no idle cost)", out);
	fputs("\n   pids:", out);
	for (size_t j = 0; j < f->n_pids; j++) {
		fprintf(out, " %u", f->pids[j]);
		if (f->ranks[j] >= 0)
			fprintf(out, " (rank %d)", f->ranks[j]);
	}
	if (f->n_where) {
		fputs("\n   where: ", out);
		for (size_t j = 0; j < f->n_where; j++)
			fprintf(out, "%s%s", j ? ";" : "", f->where[j] ? f->where[j] : "[unknown]");
	}
	fprintf(out, "\n   evidence: %s\n   fix: %s\n", f->evidence, f->fix);
}

static void findings_text(const struct findings_result *r, FILE *out)
{
	fprintf(out, "findings: %zu process%s driving a GPU, %zu step%s (", r->n_procs,
		r->n_procs == 1 ? "" : "es", r->steps, r->steps == 1 ? "" : "s");
	steps_said(out, r);
	fprintf(out, "), wall %.1f ms\n", r->wall_ms);
	for (size_t i = 0; i < r->n_procs; i++) {
		const struct findings_proc *p = &r->procs[i];
		fprintf(out, "  pid %u", p->pid);
		if (p->rank >= 0)
			fprintf(out, " (rank %d)", p->rank);
		fprintf(out, ": GPU idle %.1f ms in %" PRIu64 " intervals (%.1f%% of wall), "
			"unexplained %.1f ms", p->idle_ms, p->intervals,
			r->wall_ms > 0 ? 100 * p->idle_ms / r->wall_ms : 0.0, p->unexplained_ms);
		if (p->streams > 1 || p->devices > 1)
			fprintf(out, "; %u streams, %u device%s (see per_stream_idle below)",
				p->streams, p->devices, p->devices == 1 ? "" : "s");
		if (p->gpu_kernels)
			fprintf(out, "; measured: %" PRIu64 " kernel records, %.1f ms busy, %.1f ms of it "
				"inside host-signal intervals and not counted idle", p->gpu_kernels,
				p->gpu_busy_ms, p->busy_in_idle_ms);
		else
			fputs("; from host signals (an upper bound: 'flightrec record --gpu-kernels' "
			      "measures it)", out);
		fputc('\n', out);
	}
	if (!r->n_findings)
		fprintf(out, "\nno finding above %.0f%% of wall time\n", 100 * r->min_share);
	for (size_t i = 0; i < r->n_findings; i++)
		text_finding(out, i + 1, &r->findings[i]);
	if (r->n_below) {
		fprintf(out, "\nunder %.0f%% (not findings):", 100 * r->min_share);
		for (size_t i = 0; i < r->n_below; i++)
			fprintf(out, "%s %s %.1f ms (%.1f%%)", i ? "," : "",
				finding_kind_name(r->below[i].kind), r->below[i].cost_ms,
				100 * r->below[i].share);
		fputc('\n', out);
	}
	if (r->n_not_evaluated) {
		fputs("\nnot evaluated:\n", out);
		for (size_t i = 0; i < r->n_not_evaluated; i++)
			fprintf(out, "  %s: %s\n", r->not_evaluated[i].kind, r->not_evaluated[i].why);
	}
}

int cmd_findings(int argc, char **argv, FILE *out, FILE *errout)
{
	struct cli_table_args a;
	int rc = cli_parse_table_args(argc, argv, &findings_spec, &a, out, errout);
	if (rc)
		return rc < 0 ? CLI_OK : rc;
	struct model_opts mo = { .filter_pid = a.filter_pid, .pid = a.pid };
	void *state;
	struct trace_set *ts = cli_open_with_model("findings", (const char *const *)a.files,
						     a.n_files, "findings", &mo, &state, errout);
	free(a.files);
	if (!ts)
		return CLI_FAIL;
	if (cli_run_set(ts, errout))
		return CLI_FAIL;
	const struct findings_result *r = model_findings_result(state);
	if (a.json) {
		out_findings_json(out, r);
		fputc('\n', out);
	}
	else
		findings_text(r, out);
	rc = CLI_OK;
	if (fflush(out) || ferror(out)) {
		fprintf(errout, CLI_PROG " findings: write failed on standard output\n");
		rc = CLI_FAIL;
	}
	trace_set_free(ts);
	return rc;
}
