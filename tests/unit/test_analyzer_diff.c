/* diff on synthetic traces: a recording against itself changes nothing
 * (every list empty, every finding "both", comparable); the small-kernel
 * job healthy (GPU-bound: the synchronize waits 3 ms) then launch-bound
 * (it waits 15 us, the host sets the pace) has launch_bound new with its
 * cost per step (and host_sync, under the threshold before, listed), the
 * step 2 ms shorter, and train_step (which calls the synchronize) leading
 * the functions by CUDA time with the exact change (3 ms + the 10 us
 * synchronize before the first step over 10 steps, to 15 + 1 us);
 * and in reverse the finding is gone.  A CPU-only recording against a
 * CUDA one is not comparable and says why, per second. */
#include "check.h"
#include "test_analyzer_findings_trace.h"
#include "test_analyzer_run.h"

#include "commands.h"

static char *diff_of(const char *before, const char *after, int json)
{
	struct cmd_run r = json ? CMD_RUN(cmd_diff, "diff", (char *)before, "--", (char *)after, "--json")
				: CMD_RUN(cmd_diff, "diff", (char *)before, "--", (char *)after);
	CHECK_EQ_U64(r.rc, 0);
	if (r.rc)
		fprintf(stderr, "diff: %s", r.err);
	free(r.err);
	return r.out;
}

static void launch_trace(const char *path, enum launch_mode mode)
{
	struct synth s;
	CHECK_EQ_U64(synth_open(&s, path), 0);
	findings_launch_body(&s, 2000000000ull, mode, 1);
	CHECK_EQ_U64(synth_close(&s, 0, 0), 0);
}

static int has(const char *text, const char *want)
{
	if (strstr(text, want))
		return 1;
	fprintf(stderr, "missing: %s\nin: %s\n", want, text);
	return 0;
}

int main(void)
{
	char bound[512], healthy[512], std[512], fx[512];
	synth_path("analyzer_diff_bound.frec", bound, sizeof(bound));
	synth_path("analyzer_diff_healthy.frec", healthy, sizeof(healthy));
	synth_path("analyzer_diff_std.frec", std, sizeof(std));
	synth_path("analyzer_diff_findings.frec", fx, sizeof(fx));
	launch_trace(bound, LAUNCH_BOUND);
	launch_trace(healthy, LAUNCH_GPU_BOUND);
	CHECK_EQ_U64(std_trace_write(std, 1), 0);
	struct synth s;
	CHECK_EQ_U64(synth_open(&s, fx), 0);
	findings_trace_body(&s, 2000000000ull);
	CHECK_EQ_U64(synth_close(&s, 0, 0), 0);

	/* itself: nothing changed */
	char *d = diff_of(fx, fx, 1);
	CHECK(has(d, "{\"unit\":\"step\",\"comparable\":true,\"notes\":[],"));
	CHECK(has(d, "\"step_ms\":{\"before\":5.1,\"after\":5.1,\"delta\":0}"));
	CHECK(has(d, "{\"kind\":\"pageable_copy\",\"status\":\"both\",\"cost_ms_before\":1.000,"
		     "\"cost_ms_after\":1.000,\"delta_ms\":0.000}"));
	CHECK(has(d, "{\"kind\":\"host_sync\",\"status\":\"both\",\"cost_ms_before\":2.600,"));
	CHECK(has(d, "\"changed\":{\"functions_cpu\":0,\"functions_cuda\":0,\"functions_memory\":0,"
		     "\"stacks_cpu\":0,\"stacks_cuda\":0,\"stacks_memory\":0,\"cuda_calls\":0}"));
	char *again = diff_of(fx, fx, 1);
	CHECK_STR(d, again);
	free(again);
	free(d);

	/* healthy -> launch-bound: the finding appears with its cost, the
	 * step is 2 ms shorter, train_step's synchronize 2.985 ms shorter */
	d = diff_of(healthy, bound, 1);
	CHECK(has(d, "\"comparable\":true"));
	CHECK(has(d, "\"step_ms\":{\"before\":5.01,\"after\":3.01,\"delta\":-2}"));
	CHECK(has(d, "{\"kind\":\"launch_bound\",\"status\":\"new\",\"cost_ms_before\":0.000,"
		     "\"cost_ms_after\":1.425,\"delta_ms\":1.425}"));
	CHECK(has(d, "\"cuda_ms\":[{\"function\":\"train_step\",\"before\":3.001,\"after\":0.016,"
		     "\"delta\":-2.985}"));
	CHECK(has(d, "\"cuda_calls_ms\":[{\"function\":\"cudaStreamSynchronize\",\"before\":3,"
		     "\"after\":0.015,\"delta\":-2.985}"));
	free(d);
	d = diff_of(bound, healthy, 1);
	CHECK(has(d, "{\"kind\":\"launch_bound\",\"status\":\"gone\",\"cost_ms_before\":1.425,"
		     "\"cost_ms_after\":0.000,\"delta_ms\":-1.425}"));
	free(d);
	d = diff_of(healthy, bound, 0);
	CHECK(has(d, "deltas per step; comparable\n"));
	CHECK(has(d, "step time: 5.010 -> 3.010 ms (-2.000 ms, -39.9%)\n"));
	CHECK(has(d, "  new   launch_bound          0.000 -> 1.425      (+1.425)\n"));
	CHECK(has(d, "functions by the CUDA time of the calls they make:\n      -2.985       3.001 -> 0.016      ms/step  train_step\n"));
	free(d);

	/* CPU only against CUDA: per second, not comparable, why */
	d = diff_of(std, fx, 1);
	CHECK(has(d, "{\"unit\":\"second\",\"comparable\":false,\"notes\":[\"probes differ: cuda "
		     "events after only\""));
	CHECK(has(d, "\"steps known after only: deltas per second\""));
	free(d);

	/* usage */
	struct cmd_run r = CMD_RUN(cmd_diff, "diff", fx, fx);
	CHECK_EQ_U64(r.rc, 2);
	CHECK(has(r.err, "no '--' between the two sides"));
	cmd_run_free(&r);
	r = CMD_RUN(cmd_diff, "diff", fx, "--");
	CHECK_EQ_U64(r.rc, 2);
	CHECK(has(r.err, "no AFTER file"));
	cmd_run_free(&r);
	return check_finish();
}
