/* The hang rule of the NCCL model (analyzer/models/nccl_hang.c) on
 * synthetic multi-node jobs (test_analyzer_job.h) in which one rank never
 * enters collective K: the waiting ranks found inside the collective
 * (FR_REC_INFLIGHT), inside a stream synchronize after enqueuing it, polling
 * an event after it to the end of the trace, or inside the group end that
 * holds it; a call the recorder found in flight that returned before the
 * end (its event wins); the missing rank named from its own trace, and from
 * no trace at all; a wait shorter than the threshold is no hang; the
 * stragglers command's JSON and text.  Not a test of the recorder (the integration
 * test tests/integration/test_hang.py records real hangs). */
#include "check.h"
#include "test_analyzer_synth.h"

#include "commands.h"
#include "model_stragglers.h"
#include "trace_set.h"

#include <math.h>

#include "test_analyzer_job.h"

struct run {
	struct trace_set *ts;
	const struct nccl_hang *h;
	const struct nccl_result *nc;
};

/* Writes the job and analyzes the first n_files of its nodes' traces. */
static int analyze(const struct job *j, int n_files, struct run *out)
{
	char paths[MAX_NODES][512];
	if (write_job(j, "hang", paths))
		return -1;
	const char *p[MAX_NODES];
	for (int n = 0; n < n_files; n++)
		p[n] = paths[n];
	struct frec_error err;
	if (trace_set_open(p, (size_t)n_files, &out->ts, &err))
		return -1;
	void *m = trace_set_use_model(out->ts, "stragglers", NULL);
	if (!m || trace_set_run(out->ts, &err))
		return -1;
	out->nc = model_stragglers_result(m)->nccl;
	out->h = &out->nc->hang;
	return 0;
}

static struct job hang_job(int mode)
{
	struct job j = { .nodes = 2, .ranks_per_node = 2, .steps = 30, .k = 1, .compute_ms = 40,
			 .jitter_ms = 0.5, .slow_rank = -1, .slow_share = 1, .with_init = 1,
			 .seed = 7, .hang_at = 12, .hang_rank = 3, .hang_mode = mode,
			 .hang_wait_ms = 5000 };
	return j;
}

static void check_waiting(const struct run *run, const int32_t *ranks, size_t n,
			  enum nccl_hang_how how)
{
	CHECK_EQ_U64(run->h->n_waiting, n);
	for (size_t i = 0; i < n && i < run->h->n_waiting; i++) {
		CHECK(run->nc->ranks[run->h->waiting[i].rank_index].rank == ranks[i]);
		CHECK(run->h->waiting[i].how == how);
	}
}

static void check_missing(const struct run *run, const int32_t *ranks, size_t n)
{
	CHECK_EQ_U64(run->h->n_missing, n);
	for (size_t i = 0; i < n && i < run->h->n_missing; i++)
		CHECK(run->h->missing[i] == ranks[i]);
}

/* Each way of waiting: the same hang, AllReduce #12, ranks 0-2 waiting
 * 5 s, rank 3 missing. */
static void test_modes(void)
{
	static const enum nccl_hang_how how[] = { NCCL_HANG_IN_CALL, NCCL_HANG_SYNC,
						  NCCL_HANG_POLL, NCCL_HANG_IN_CALL };
	static const int32_t waiting[] = { 0, 1, 2 }, missing[] = { 3 };
	for (int mode = JOB_HANG_BLOCKING; mode <= JOB_HANG_GROUP; mode++) {
		struct job j = hang_job(mode);
		struct run run;
		CHECK(analyze(&j, 2, &run) == 0);
		if (!run.ts)
			continue;
		const struct nccl_hang *h = run.h;
		if (!h->found)
			fprintf(stderr, "  mode %d: no hang (%s)\n", mode, h->why_none);
		CHECK(h->found);
		CHECK(h->func == FR_NCCL_ALL_REDUCE);
		CHECK_EQ_U64(h->seq + 1, 12);
		CHECK(h->nranks == 4);
		check_waiting(&run, waiting, 3, how[mode]);
		check_missing(&run, missing, 1);
		CHECK_EQ_U64(h->without_trace, 0);
		/* from the last entry: exactly the 5 s the recorders waited, the
		 * earlier entries a step's jitter more */
		CHECK(h->waiting_s >= 4.99 && h->waiting_s < 5.1);
		CHECK(h->threshold_s < 1.0);
		trace_set_free(run.ts);
	}
}

/* A call in flight when the recorder looked whose return is in the trace
 * too: that rank left, it is neither waiting nor missing. */
static void test_returned(void)
{
	static const int32_t waiting[] = { 0, 2 }, missing[] = { 3 };
	for (int mode = JOB_HANG_BLOCKING; mode <= JOB_HANG_SYNC; mode++) {
		struct job j = hang_job(mode);
		j.hang_returned = 1 + 1;
		struct run run;
		CHECK(analyze(&j, 2, &run) == 0);
		CHECK(run.h->found);
		check_waiting(&run, waiting, 2, mode == JOB_HANG_SYNC ? NCCL_HANG_SYNC
									: NCCL_HANG_IN_CALL);
		check_missing(&run, missing, 1);
		trace_set_free(run.ts);
	}
}

/* The culprit alone on its node, whose trace is not given: the missing rank
 * is the communicator's rank no trace shows. */
static void test_culprit_without_trace(void)
{
	struct job j = hang_job(JOB_HANG_BLOCKING);
	j.nodes = 4;
	j.ranks_per_node = 1;
	struct run run;
	CHECK(analyze(&j, 3, &run) == 0);
	static const int32_t waiting[] = { 0, 1, 2 }, missing[] = { 3 };
	CHECK(run.h->found);
	check_waiting(&run, waiting, 3, NCCL_HANG_IN_CALL);
	check_missing(&run, missing, 1);
	trace_set_free(run.ts);

	/* with its trace, where nothing is in flight: the same answer */
	CHECK(analyze(&j, 4, &run) == 0);
	CHECK(run.h->found);
	check_waiting(&run, waiting, 3, NCCL_HANG_IN_CALL);
	check_missing(&run, missing, 1);
	trace_set_free(run.ts);
}

/* The third collective of a step (an AllGather) and the first rank
 * missing: the op and the seq are the hung collective's own. */
static void test_op_and_rank(void)
{
	struct job j = hang_job(JOB_HANG_SYNC);
	j.k = 3;
	j.hang_at = 3 * 5 + 3;
	j.hang_rank = 0;
	struct run run;
	CHECK(analyze(&j, 2, &run) == 0);
	static const int32_t waiting[] = { 1, 2, 3 }, missing[] = { 0 };
	CHECK(run.h->found);
	CHECK(run.h->func == FR_NCCL_ALL_GATHER);
	CHECK_EQ_U64(run.h->seq + 1, 18);
	check_waiting(&run, waiting, 3, NCCL_HANG_SYNC);
	check_missing(&run, missing, 1);
	trace_set_free(run.ts);
}

/* Waits a step can explain are no hang: a recording that stops while the
 * ranks wait 30 ms for a late one, and one that stops mid-job; nor is an
 * event that was polled for a while and then given up on. */
static void test_no_hang(void)
{
	struct job j = hang_job(JOB_HANG_BLOCKING);
	j.hang_wait_ms = 30;
	struct run run;
	CHECK(analyze(&j, 2, &run) == 0);
	CHECK(!run.h->found);
	CHECK(run.h->n_waiting == 3); /* seen, and said why it is none */
	CHECK(strstr(run.h->why_none, "AllReduce #12") != NULL);
	trace_set_free(run.ts);

	j.hang_at = 0;
	CHECK(analyze(&j, 2, &run) == 0);
	CHECK(!run.h->found);
	CHECK(run.h->n_waiting == 0);
	trace_set_free(run.ts);

	j = hang_job(JOB_HANG_POLL);
	j.hang_poll_ms = 100;
	CHECK(analyze(&j, 2, &run) == 0);
	CHECK(!run.h->found);
	CHECK(run.h->n_waiting == 0);
	trace_set_free(run.ts);
}

static void test_command(void)
{
	struct job j = hang_job(JOB_HANG_POLL);
	char paths[MAX_NODES][512];
	CHECK(write_job(&j, "hang_cmd", paths) == 0);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	FILE *err = fopen("/dev/null", "w");
	char cmd[] = "stragglers", json[] = "--json";
	char *argv[] = { cmd, paths[0], paths[1], json, NULL };
	CHECK(cmd_stragglers(4, argv, out, err) == 0);
	fclose(out);
	CHECK(text && strstr(text, "\"hang\":{\"op\":\"AllReduce\",\"seq\":12,"
			     "\"waiting_ranks\":[0,1,2],\"missing_ranks\":[3],\"waiting_s\":5.0") != NULL);
	CHECK(text && strstr(text, "\"no_hang_reason\":null") != NULL);
	free(text);

	text = NULL;
	out = open_memstream(&text, &len);
	char *argv2[] = { cmd, paths[0], paths[1], NULL };
	CHECK(cmd_stragglers(3, argv2, out, err) == 0);
	fclose(out);
	CHECK(text && strstr(text, "hang: AllReduce #12 never completed: ranks 0,1,2 waited up "
			     "to 5.0") != NULL);
	CHECK(text && strstr(text, "; rank 3 never entered it\n") != NULL);
	free(text);

	j.hang_at = 0;
	CHECK(write_job(&j, "hang_cmd", paths) == 0);
	text = NULL;
	out = open_memstream(&text, &len);
	CHECK(cmd_stragglers(4, argv, out, err) == 0);
	fclose(out);
	CHECK(text && strstr(text, "\"hang\":null,\"no_hang_reason\":\"") != NULL);
	free(text);
	fclose(err);
}

int main(void)
{
	test_modes();
	test_returned();
	test_culprit_without_trace();
	test_op_and_rank();
	test_no_hang();
	test_command();
	return check_finish();
}
