/* The distributed-training analysis on synthetic multi-node traces: clock
 * alignment recovers a known realtime offset, the straggler verdict (latest
 * in >= half the collectives, lateness above max(2% of the step, 3 MAD)) on
 * crafted timings including null cases with noise, step detection from
 * markers and from the collective period, communicators whose init was not
 * recorded, and the stragglers command's JSON.
 *
 * The generator simulates a data-parallel job in true time: per step each
 * rank computes, then makes K collectives; an instance releases every rank
 * when the last one has entered, and each leaves after a small wake-up
 * latency.  Each node gets its own monotonic origin and a realtime clock
 * that may be off by skew_ms.  Not a test of the recorder. */
#include "check.h"
#include "test_analyzer_synth.h"

#include "align.h"
#include "commands.h"
#include "model_stragglers.h"
#include "trace_set.h"

#include <math.h>

#include "test_analyzer_job.h"
struct run {
	struct trace_set *ts;
	const struct stragglers_result *r;
};

static int analyze(const struct job *j, int ignore_markers, struct run *out)
{
	char paths[MAX_NODES][512];
	if (write_job(j, "strag", paths))
		return -1;
	const char *p[MAX_NODES];
	for (int n = 0; n < j->nodes; n++)
		p[n] = paths[n];
	struct frec_error err;
	if (trace_set_open(p, (size_t)j->nodes, &out->ts, &err))
		return -1;
	void *m = trace_set_use_model(out->ts, "stragglers", NULL);
	if (!m)
		return -1;
	if (ignore_markers)
		model_stragglers_ignore_step_markers(m);
	if (trace_set_run(out->ts, &err)) {
		fprintf(stderr, "run: %s\n", err.what);
		return -1;
	}
	out->r = model_stragglers_result(m);
	return 0;
}

static struct job base_job(void)
{
	struct job j = { .nodes = 2, .ranks_per_node = 2, .steps = 30, .k = 1, .compute_ms = 40,
			 .jitter_ms = 0.5, .slow_rank = -1, .slow_share = 1, .with_init = 1,
			 .with_markers = 0, .seed = 1 };
	return j;
}

static int32_t verdict_rank(const struct stragglers_result *r)
{
	return r->verdict.found ? r->nccl->ranks[r->verdict.rank_index].rank : -1;
}

/* Node b's realtime clock is 250 ms ahead; the monotonic origins differ. */
static void test_alignment(void)
{
	struct job j = base_job();
	j.skew_ms[1] = 250;
	struct run run;
	CHECK(analyze(&j, 0, &run) == 0);
	struct align_node a, b;
	align_node_get(run.ts, 0, &a);
	align_node_get(run.ts, 1, &b);
	CHECK(a.is_reference && a.refined && a.skew_ns == 0);
	CHECK(b.refined && !b.is_reference);
	CHECK(fabs((double)b.skew_ns / MS - 250) < 0.2);
	CHECK(b.uncertainty_ns >= 0 && b.uncertainty_ns < (int64_t)(0.5 * MS));
	CHECK(b.n_sync == 30);
	/* after alignment, one instant has one common time on both nodes:
	 * mono_origin + x on each node is true time x */
	int64_t ca = (int64_t)5000000000ull + trace_set_time_offset_ns(run.ts, 0);
	int64_t cb = (int64_t)(10000000000ull + 777777ull) + trace_set_time_offset_ns(run.ts, 1);
	CHECK(llabs(ca - cb) < (int64_t)(0.2 * MS));
	CHECK(verdict_rank(run.r) == -1);
	CHECK(run.r->nccl->n_ranks == 4);
	for (size_t i = 0; i < run.r->nccl->n_ranks; i++) {
		CHECK(run.r->nccl->ranks[i].rank == (int32_t)i);
		CHECK(run.r->nccl->ranks[i].rank_from_env);
	}
	trace_set_free(run.ts);

	/* anchors only (one node): no refinement, no crash */
	j.nodes = 1;
	CHECK(analyze(&j, 0, &run) == 0);
	align_node_get(run.ts, 0, &a);
	CHECK(!a.refined && a.uncertainty_ns == -1);
	CHECK(trace_set_time_offset_ns(run.ts, 0) == (int64_t)(EPOCH_NS - 5000000000ull));
	trace_set_free(run.ts);
}

static void test_straggler(void)
{
	struct job j = base_job();
	j.slow_rank = 2;
	j.slow_ms = 10;
	j.slow_from_step = 5;
	j.skew_ms[0] = -40; /* both clocks off: alignment still brings them together */
	j.skew_ms[1] = 130;
	struct run run;
	CHECK(analyze(&j, 0, &run) == 0);
	const struct straggler_verdict *v = &run.r->verdict;
	CHECK(verdict_rank(run.r) == 2);
	/* generator step 5 = period step 4 (period steps begin at call 1) */
	CHECK(v->since_step >= 3 && v->since_step <= 5);
	CHECK(fabs(v->cost_ms_per_step - 10) < 1.5);
	CHECK(v->confidence > 0.8 && v->confidence <= 1);
	CHECK(v->n_frames >= 1 && !strcmp(v->frames[0].name, "slow_data_loader"));
	CHECK(v->frames[0].others_share == 0);
	CHECK(v->n_syscalls == 1 && !strcmp(v->syscalls[0].name, "read"));
	CHECK(strstr(v->evidence, "slow_data_loader") != NULL);
	double score = run.r->rows[v->rank_index].score; /* 40 / 50 in steps 5.. */
	CHECK(score > 0.75 && score < 0.85);
	for (size_t i = 0; i < run.r->n_rows; i++)
		if (i != v->rank_index)
			CHECK(run.r->rows[i].score > 0.95);
	struct align_node b;
	align_node_get(run.ts, 1, &b);
	CHECK(fabs((double)b.skew_ns / MS - 170) < 0.5);
	trace_set_free(run.ts);
}

/* Null cases: noise only; latest always but by less than 2% of the step;
 * late by a lot but in fewer than half of the collectives. */
static void test_null_cases(void)
{
	for (unsigned seed = 1; seed <= 5; seed++) {
		struct job j = base_job();
		j.jitter_ms = 3;
		j.seed = seed;
		struct run run;
		CHECK(analyze(&j, 0, &run) == 0);
		CHECK(verdict_rank(run.r) == -1);
		CHECK(run.r->why_none[0] != '\0');
		trace_set_free(run.ts);
	}
	struct job j = base_job();
	j.jitter_ms = 0.05;
	j.slow_rank = 1;
	j.slow_ms = 0.5; /* 1.2% of a 40 ms step */
	struct run run;
	CHECK(analyze(&j, 0, &run) == 0);
	CHECK(run.r->candidate == 1);
	CHECK(run.r->rows[1].latest >= 25);
	CHECK(verdict_rank(run.r) == -1);
	CHECK(strstr(run.r->why_none, "threshold") != NULL);
	trace_set_free(run.ts);

	j = base_job();
	j.slow_rank = 3;
	j.slow_ms = 15;
	j.slow_share = 0.3;
	CHECK(analyze(&j, 0, &run) == 0);
	CHECK(verdict_rank(run.r) == -1);
	CHECK(strstr(run.r->why_none, "half") != NULL);
	trace_set_free(run.ts);

	/* the same rank slow in 70% of the steps is named */
	j.slow_share = 0.7;
	j.seed = 3;
	CHECK(analyze(&j, 0, &run) == 0);
	CHECK(verdict_rank(run.r) == 3);
	trace_set_free(run.ts);
}

static void test_steps(void)
{
	struct job j = base_job();
	j.k = 3;
	struct run run;
	CHECK(analyze(&j, 0, &run) == 0);
	CHECK(run.r->nccl->step_source == NCCL_STEPS_PERIOD);
	CHECK(run.r->nccl->period == 3);
	CHECK(run.r->rows[0].steps == 29); /* the first step has no call before it */
	CHECK(fabs(run.r->rows[0].mean_step_ms - 41.4) < 1.0);
	CHECK(run.r->complete_collectives == 90);
	trace_set_free(run.ts);

	j.with_markers = 1;
	CHECK(analyze(&j, 0, &run) == 0);
	CHECK(run.r->nccl->step_source == NCCL_STEPS_MARKER);
	CHECK(run.r->rows[0].steps == 30);
	CHECK(fabs(run.r->rows[0].mean_step_ms - 41.4) < 1.0);
	trace_set_free(run.ts);

	CHECK(analyze(&j, 1, &run) == 0); /* --step-marker-less */
	CHECK(run.r->nccl->step_source == NCCL_STEPS_PERIOD);
	CHECK(run.r->rows[0].steps == 29);
	trace_set_free(run.ts);

	/* a straggler with 3 collectives per step costs its delay once per step */
	j.slow_rank = 0;
	j.slow_ms = 8;
	CHECK(analyze(&j, 0, &run) == 0);
	CHECK(verdict_rank(run.r) == 0);
	CHECK(fabs(run.r->verdict.cost_ms_per_step - 8) < 1.5);
	trace_set_free(run.ts);
}

/* No ncclCommInitRank recorded (attach latency, --pid): the communicator is
 * inferred, the straggler still found. */
static void test_no_init(void)
{
	struct job j = base_job();
	j.with_init = 0;
	j.slow_rank = 1;
	j.slow_ms = 12;
	j.skew_ms[1] = 250;
	struct run run;
	CHECK(analyze(&j, 0, &run) == 0);
	CHECK(run.r->nccl->inferred_ranks == 4);
	CHECK(run.r->nccl->unknown_comm_calls == 0);
	CHECK(run.r->complete_collectives == 30);
	CHECK(verdict_rank(run.r) == 1);
	struct align_node b;
	align_node_get(run.ts, 1, &b);
	CHECK(fabs((double)b.skew_ns / MS - 250) < 0.5);
	trace_set_free(run.ts);
}

static void test_command(void)
{
	struct job j = base_job();
	j.slow_rank = 3;
	j.slow_ms = 10;
	char paths[MAX_NODES][512];
	CHECK(write_job(&j, "strag", paths) == 0);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	FILE *err = fopen("/dev/null", "w");
	char cmd[] = "stragglers", json[] = "--json";
	char *argv[] = { cmd, paths[0], paths[1], json, NULL };
	CHECK(cmd_stragglers(4, argv, out, err) == 0);
	fclose(out);
	static const char head[] = "{\"ranks\":[{\"rank\":0,\"host\":\"node-a\",\"pid\":1000,"
				   "\"steps\":29,\"mean_step_ms\":";
	CHECK(text && strncmp(text, head, sizeof(head) - 1) == 0);
	CHECK(text && strstr(text, "\"straggler\":{\"rank\":3,\"confidence\":") != NULL);
	CHECK(text && strstr(text, "\"cost_ms_per_step\":") != NULL);
	CHECK(text && strstr(text, "\"evidence\":\"rank 3 is the last") != NULL);
	free(text);

	j.slow_rank = -1;
	CHECK(write_job(&j, "strag", paths) == 0);
	text = NULL;
	out = open_memstream(&text, &len);
	CHECK(cmd_stragglers(4, argv, out, err) == 0);
	fclose(out);
	CHECK(text && strstr(text, "\"straggler\":null") != NULL);
	free(text);

	/* text output */
	text = NULL;
	out = open_memstream(&text, &len);
	char *argv2[] = { cmd, paths[0], paths[1], NULL };
	CHECK(cmd_stragglers(3, argv2, out, err) == 0);
	fclose(out);
	CHECK(text && strstr(text, "straggler: none") != NULL);
	CHECK(text && strstr(text, "node-b") != NULL);
	free(text);

	/* a trace without NCCL calls: one clear line, exit 1 */
	char empty[512];
	synth_path("strag_empty.frec", empty, sizeof(empty));
	struct synth s;
	CHECK(synth_open(&s, empty) == 0);
	synth_process(&s, 1, 0, "x", "x");
	CHECK(synth_close(&s, 0, 0) == 0);
	char *argv3[] = { cmd, empty, NULL };
	CHECK(cmd_stragglers(2, argv3, stdout, err) == 1);
	fclose(err);
}

int main(void)
{
	test_alignment();
	test_straggler();
	test_null_cases();
	test_steps();
	test_no_init();
	test_command();
	return check_finish();
}
