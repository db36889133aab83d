/* `flightrec-analyze stragglers`: the per-rank table (rank, host, pid,
 * steps, mean step, mean wait inside NCCL calls, straggler score), each
 * node's clock skew, the verdict with its evidence, and a collective that
 * hangs (model_nccl.h, nccl_hang.c); text or --json (the shape
 * /work/shared/CLI.md fixes, with extra fields).  Not the analysis
 * (model_stragglers.c, model_nccl.c, align.c): this file parses options and
 * lays out the result. */
#include "align.h"
#include "cli.h"
#include "cli_jobs.h"
#include "out_common.h"
#include "out_stragglers_json.h"
#include "commands.h"
#include "model_stragglers.h"
#include "trace_set.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char stragglers_help[] =
	"usage: " CLI_PROG " stragglers FILE... [--json] [--step-marker-less] [--jobs N]\n"
	"\n"
	"Which rank of a distributed job the others wait for, and why.  Give one\n"
	"trace per node; their clocks are aligned on the realtime anchors, then on\n"
	"the exits of collectives (every rank leaves a blocking collective at the\n"
	"same instant), and each node's estimated clock skew is shown.\n"
	"\n"
	"  ranks      processes that made NCCL calls; the rank is RANK from the\n"
	"             launcher's environment, else the NCCL init rank\n"
	"  steps      from --step-marker events when every rank has them, else\n"
	"             every K-th collective (K: the period of the call sequence)\n"
	"  wait       time inside NCCL calls per step\n"
	"  score      fastest rank's median compute time per step over this\n"
	"             rank's (1 = fastest; below 0.75 is flagged with '*')\n"
	"  verdict    the rank latest to enter at least half of the collectives,\n"
	"             when its median lateness exceeds the larger of 2% of the\n"
	"             step and 3 MAD of the others' lateness; else none\n"
	"  evidence   what it does in its compute segments that others do not:\n"
	"             functions in its CPU samples, system call time, off-CPU time\n"
	"  hang       a collective some ranks entered and never left: inside it\n"
	"             when the recorder last looked (it writes the calls in flight\n"
	"             at the end), or, with NCCL's asynchronous collectives, inside\n"
	"             a synchronize or polling an event that waits for it; with the\n"
	"             ranks of its communicator that never entered it (also ranks\n"
	"             no given trace shows, when the communicator's ranks are the\n"
	"             global ones); reported when the wait exceeds twice the longest\n"
	"             gap between that communicator's earlier collectives\n"
	"\n"
	"options:\n"
	"  --json               one JSON object: ranks, straggler (or null), hang\n"
	"                       (or null), nodes\n"
	"  --step-marker-less   ignore step-marker events; steps from the period\n"
	CLI_JOBS_HELP
	"\n"
	"examples:\n"
	"  " CLI_PROG " stragglers nodeA.frec nodeB.frec\n"
	"  " CLI_PROG " stragglers node*.frec --json > stragglers.json\n";

static const struct cli_table_spec stragglers_spec = {
	.cmd = "stragglers", .help = stragglers_help,
	.flag_name = "--step-marker-less",
};

static const char *steps_from(const struct nccl_result *nc)
{
	switch (nc->step_source) {
	case NCCL_STEPS_MARKER: return "marker";
	case NCCL_STEPS_PERIOD: return "period";
	case NCCL_STEPS_EACH: return "each_collective";
	}
	return "unknown";
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

static const char *hang_how(enum nccl_hang_how how)
{
	switch (how) {
	case NCCL_HANG_IN_CALL: return "in_call";
	case NCCL_HANG_SYNC: return "synchronize";
	case NCCL_HANG_POLL: return "event_poll";
	}
	return "unknown";
}

/* CLI.md's "hang": {"op","seq","waiting_ranks","missing_ranks","waiting_s"}
 * or null, then extra fields. */
static void hang_json(const struct nccl_result *nc, FILE *out)
{
	const struct nccl_hang *h = &nc->hang;
	fputs(",\"hang\":", out);
	if (!h->found) {
		fputs("null,\"no_hang_reason\":", out);
		out_json_str(out, h->why_none[0] ? h->why_none
				  : "no rank was inside a collective it had not left when its "
				    "recorder last looked");
		return;
	}
	fputs("{\"op\":", out);
	out_json_str(out, nccl_op_name(h->func));
	fprintf(out, ",\"seq\":%" PRIu64 ",\"waiting_ranks\":[", h->seq + 1);
	for (size_t i = 0; i < h->n_waiting; i++)
		fprintf(out, "%s%d", i ? "," : "", nc->ranks[h->waiting[i].rank_index].rank);
	fputs("],\"missing_ranks\":[", out);
	for (size_t i = 0; i < h->n_missing; i++)
		fprintf(out, "%s%d", i ? "," : "", h->missing[i]);
	fprintf(out, "],\"waiting_s\":%.3f,\"threshold_s\":%.3f,\"count\":%" PRIu64
		",\"comm_nranks\":%d,\"ranks_without_trace\":%u,\"waiting\":[", h->waiting_s,
		h->threshold_s, h->count, h->nranks, h->without_trace);
	for (size_t i = 0; i < h->n_waiting; i++) {
		const struct nccl_rank *rk = &nc->ranks[h->waiting[i].rank_index];
		fprintf(out, "%s{\"rank\":%d,\"host\":", i ? "," : "", rk->rank);
		out_json_str(out, rk->host);
		fprintf(out, ",\"pid\":%u,\"how\":\"%s\",\"waiting_s\":%.3f}", rk->pid,
			hang_how(h->waiting[i].how), h->waiting[i].waiting_s);
	}
	fputs("]},\"no_hang_reason\":null", out);
}

/* One line: what hangs, who waits, who never came. */
static void hang_text(const struct nccl_result *nc, FILE *out)
{
	const struct nccl_hang *h = &nc->hang;
	if (!h->found) {
		if (h->why_none[0])
			fprintf(out, "\nhang: none (%s)\n", h->why_none);
		return;
	}
	fprintf(out, "\nhang: %s #%" PRIu64 " never completed: rank%s ", nccl_op_name(h->func),
		h->seq + 1, h->n_waiting == 1 ? "" : "s");
	for (size_t i = 0; i < h->n_waiting; i++)
		fprintf(out, "%s%d", i ? "," : "", nc->ranks[h->waiting[i].rank_index].rank);
	fprintf(out, " waited up to %.2f s in it; ", h->waiting_s);
	if (h->n_missing) {
		fprintf(out, "rank%s ", h->n_missing == 1 ? "" : "s");
		for (size_t i = 0; i < h->n_missing; i++)
			fprintf(out, "%s%d", i ? "," : "", h->missing[i]);
		fprintf(out, " never entered it");
	} else {
		fprintf(out, "no rank that a trace shows is missing from it");
	}
	if (h->without_trace)
		fprintf(out, " (%u more rank%s of its communicator have no trace here)",
			h->without_trace, h->without_trace == 1 ? "" : "s");
	fputc('\n', out);
}

static void stragglers_json(struct trace_set *ts, const struct stragglers_result *r, FILE *out)
{
	const struct nccl_result *nc = r->nccl;
	fputs("{\"ranks\":[", out);
	for (size_t i = 0; i < r->n_rows; i++) {
		const struct straggler_row *row = &r->rows[i];
		const struct nccl_rank *rk = &nc->ranks[i];
		fprintf(out, "%s{\"rank\":%d,\"host\":", i ? "," : "", rk->rank);
		out_json_str(out, rk->host);
		fprintf(out, ",\"pid\":%u,\"steps\":%zu,\"mean_step_ms\":", rk->pid, row->steps);
		strag_json_num(out, row->mean_step_ms, "%.3f");
		fputs(",\"mean_wait_ms\":", out);
		strag_json_num(out, row->steps ? row->mean_wait_ms : -1, "%.3f");
		fputs(",\"straggler_score\":", out);
		strag_json_num(out, row->score, "%.4f");
		fprintf(out, ",\"file\":%u,\"rank_source\":\"%s\",\"local_rank\":%d,\"world_size\":%d"
			",\"latest\":%" PRIu64 ",\"median_lateness_ms\":%.3f,\"median_compute_ms\":",
			rk->file_index, rk->rank_from_env ? "env" : rk->rank >= 0 ? "nccl" : "unknown",
			rk->local_rank, rk->world_size, row->latest, row->median_lateness_ms);
		strag_json_num(out, row->median_compute_ms, "%.3f");
		fputc('}', out);
	}
	fputs("],\"straggler\":", out);
	const struct straggler_verdict *v = &r->verdict;
	if (!v->found) {
		fputs("null", out);
	} else {
		const struct nccl_rank *rk = &nc->ranks[v->rank_index];
		fprintf(out, "{\"rank\":%d,\"confidence\":%.3f,\"cost_ms_per_step\":%.3f,\"evidence\":",
			rk->rank, v->confidence, v->cost_ms_per_step);
		out_json_str(out, v->evidence);
		fprintf(out, ",\"since_step\":%d,\"host\":", v->since_step);
		out_json_str(out, rk->host);
		fprintf(out, ",\"pid\":%u,\"latest\":%" PRIu64 ",\"collectives\":%" PRIu64
			",\"median_lateness_ms\":%.3f,\"threshold_ms\":%.3f,",
			rk->pid, v->latest, v->collectives, v->median_lateness_ms, v->threshold_ms);
		strag_json_causes(out, v);
		fputs(",\"offcpu_share\":", out);
		strag_json_num(out, v->offcpu_share, "%.3f");
		fprintf(out, ",\"samples\":%" PRIu64 "}", v->samples);
	}
	fputs(",\"no_straggler_reason\":", out);
	if (v->found)
		fputs("null", out);
	else
		out_json_str(out, r->why_none);
	hang_json(nc, out);
	fputs(",\"nodes\":[", out);
	for (size_t i = 0; i < trace_set_count(ts); i++) {
		struct align_node n;
		align_node_get(ts, i, &n);
		fprintf(out, "%s{\"file\":", i ? "," : "");
		out_json_str(out, trace_set_file(ts, i)->path);
		fputs(",\"host\":", out);
		out_json_str(out, n.host ? n.host : "");
		fprintf(out, ",\"reference\":%s,\"refined\":%s,\"skew_ms\":%.3f,\"uncertainty_ms\":",
			n.is_reference ? "true" : "false", n.refined ? "true" : "false",
			(double)n.skew_ns / 1e6);
		strag_json_num(out, n.uncertainty_ns < 0 ? -1 : (double)n.uncertainty_ns / 1e6, "%.3f");
		fprintf(out, ",\"sync_events\":%" PRIu64 "}", n.n_sync);
	}
	fprintf(out, "],\"steps_from\":\"%s\",\"collectives_per_step\":%u,"
		"\"complete_collectives\":%zu,\"median_step_ms\":", steps_from(nc), nc->period,
		r->complete_collectives);
	strag_json_num(out, r->median_step_ms, "%.3f");
	fprintf(out, ",\"unknown_comm_calls\":%" PRIu64 "}\n", nc->unknown_comm_calls);
}

static void stragglers_text(struct trace_set *ts, const struct stragglers_result *r, FILE *out)
{
	const struct nccl_result *nc = r->nccl;
	size_t n_files = trace_set_count(ts);
	fprintf(out, "stragglers: %zu rank%s on %zu node%s, %zu complete collectives; steps ",
		nc->n_ranks, nc->n_ranks == 1 ? "" : "s", n_files, n_files == 1 ? "" : "s",
		r->complete_collectives);
	if (nc->step_source == NCCL_STEPS_MARKER)
		fputs("from step markers\n", out);
	else if (nc->step_source == NCCL_STEPS_PERIOD)
		fprintf(out, "from the collective period (%u per step)\n", nc->period);
	else
		fputs("unknown (no period in the collectives: one step per collective)\n", out);
	if (nc->unknown_comm_calls)
		fprintf(out, "  %" PRIu64 " collectives on communicators whose init was not "
			"recorded could not be matched\n", nc->unknown_comm_calls);
	if (n_files > 1) {
		fprintf(out, "\nnodes (clocks aligned on collective exits):\n");
		fprintf(out, "  %-20s %-24s %12s %14s %6s\n", "HOST", "FILE", "SKEW", "UNCERTAINTY",
			"SYNC");
		for (size_t i = 0; i < n_files; i++) {
			struct align_node n;
			align_node_get(ts, i, &n);
			char unc[32];
			if (n.is_reference)
				snprintf(unc, sizeof(unc), "(reference)");
			else if (n.uncertainty_ns < 0)
				snprintf(unc, sizeof(unc), "(anchors only)");
			else
				snprintf(unc, sizeof(unc), "+-%.3f ms", (double)n.uncertainty_ns / 1e6);
			fprintf(out, "  %-20s %-24s %+9.3f ms %14s %6" PRIu64 "\n", n.host ? n.host : "",
				base_name(trace_set_file(ts, i)->path), (double)n.skew_ns / 1e6, unc,
				n.n_sync);
		}
	}
	fprintf(out, "\n  %-5s %-20s %-8s %6s %13s %13s %7s %7s\n", "RANK", "HOST", "PID", "STEPS",
		"MEAN STEP ms", "MEAN WAIT ms", "SCORE", "LATEST");
	for (size_t i = 0; i < r->n_rows; i++) {
		const struct straggler_row *row = &r->rows[i];
		const struct nccl_rank *rk = &nc->ranks[i];
		char rank[16], step[32], wait[32], score[32];
		snprintf(rank, sizeof(rank), rk->rank >= 0 ? "%d" : "?", rk->rank);
		snprintf(step, sizeof(step), row->steps ? "%.2f" : "-", row->mean_step_ms);
		snprintf(wait, sizeof(wait), row->steps ? "%.2f" : "-", row->mean_wait_ms);
		snprintf(score, sizeof(score), row->score >= 0 ? "%.2f%s" : "-", row->score,
			 row->score >= 0 && row->score < STRAGGLER_SCORE_FLAG ? "*" : " ");
		fprintf(out, "  %-5s %-20s %-8u %6zu %13s %13s %7s %7" PRIu64 "\n", rank, rk->host,
			rk->pid, row->steps, step, wait, score, row->latest);
	}
	const struct straggler_verdict *v = &r->verdict;
	if (!v->found) {
		fprintf(out, "\nstraggler: none (%s)\n", r->why_none);
	} else {
		const struct nccl_rank *rk = &nc->ranks[v->rank_index];
		fprintf(out, "\nstraggler: rank %d (host %s, pid %u) since step %d, confidence %.2f, "
			"costs %.2f ms per step\n", rk->rank, rk->host, rk->pid, v->since_step,
			v->confidence, v->cost_ms_per_step);
		fprintf(out, "  evidence: %s\n", v->evidence);
	}
	hang_text(nc, out);
}

int cmd_stragglers(int argc, char **argv, FILE *out, FILE *errout)
{
	struct cli_table_args a;
	unsigned jobs;
	if (cli_take_jobs(&argc, argv, "stragglers", &jobs, errout))
		return CLI_USAGE;
	int rc = cli_parse_table_args(argc, argv, &stragglers_spec, &a, out, errout);
	if (rc)
		return rc < 0 ? CLI_OK : rc;
	void *strag;
	struct trace_set *ts = cli_open_with_model("stragglers", (const char *const *)a.files,
						     a.n_files, "stragglers", NULL,
						     &strag, errout);
	free(a.files);
	if (!ts)
		return CLI_FAIL;
	trace_set_set_jobs(ts, jobs);
	if (a.flag)
		model_stragglers_ignore_step_markers(strag);
	if (cli_run_set(ts, errout))
		return CLI_FAIL;
	const struct stragglers_result *r = model_stragglers_result(strag);
	if (!r->nccl->n_ranks) {
		fprintf(errout, CLI_PROG ": %s%s: no NCCL calls in %s (was the nccl probe attached? "
			"see '" CLI_PROG " info')\n", trace_set_file(ts, 0)->path,
			trace_set_count(ts) > 1 ? " ..." : "",
			trace_set_count(ts) > 1 ? "these traces" : "this trace");
		trace_set_free(ts);
		return CLI_FAIL;
	}
	if (a.json)
		stragglers_json(ts, r, out);
	else
		stragglers_text(ts, r, out);
	rc = CLI_OK;
	if (fflush(out) || ferror(out)) {
		fprintf(errout, CLI_PROG " stragglers: write failed on standard output\n");
		rc = CLI_FAIL;
	}
	trace_set_free(ts);
	return rc;
}
