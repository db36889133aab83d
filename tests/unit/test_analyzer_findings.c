/* The findings model on synthetic traces built for exact answers
 * (test_analyzer_findings_trace.h, which derives each number): the idle
 * kinds of the standard findings trace; launch_bound with its exact cost,
 * where, evidence and place among the others; a healthy GPU-bound run with
 * as many launches, which has no finding above the threshold and no
 * launch_bound at all; a run whose launches alternate between two streams
 * (no launch_bound, and the output says how idle is read with several
 * streams); the same launches each with a probed driver launch inside
 * (counted once); a recording without CPU samples (launch_bound not evaluated,
 * its time unexplained); small_batch always listed as not evaluated.  The
 * outputs' findings tests (report, sqlite, timeline, the browser's) check
 * that they carry what this model gives. */
#include "check.h"
#include "test_analyzer_common.h"
#include "test_analyzer_findings_trace.h"

#include "commands.h"

/* `findings TRACE [--json]` as a string, without its last newline. */
static char *findings_of(const char *trace, int json)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	char *argv[] = { "findings", (char *)trace, json ? "--json" : NULL, NULL };
	CHECK_EQ_U64(cmd_findings(json ? 3 : 2, argv, mem, stderr), 0);
	fclose(mem);
	if (len && buf[len - 1] == '\n')
		buf[len - 1] = '\0';
	return buf;
}

static char *launch_findings(const char *name, enum launch_mode mode, int samples, int json)
{
	char path[512];
	synth_path(name, path, sizeof(path));
	struct synth s;
	CHECK_EQ_U64(synth_open(&s, path), 0);
	findings_launch_body(&s, 2000000000ull, mode, samples);
	CHECK_EQ_U64(synth_close(&s, 0, 0), 0);
	return findings_of(path, json);
}

#define HAS(text, needle) CHECK((text) && strstr((text), (needle)) != NULL)
#define HASNT(text, needle) CHECK((text) && strstr((text), (needle)) == NULL)

static const char small_batch[] = "{\"kind\":\"small_batch\",\"why\":\"kernel grid sizes and GPU "
	"occupancy are not recorded";

/* The standard findings trace: one launch per step, nothing launch-bound. */
static void test_standard_trace(void)
{
	char path[512];
	synth_path("analyzer_findings_std.frec", path, sizeof(path));
	struct synth s;
	CHECK_EQ_U64(synth_open(&s, path), 0);
	findings_trace_body(&s, 2000000000ull);
	CHECK_EQ_U64(synth_close(&s, 0, 0), 0);
	char *json = findings_of(path, 1);
	HAS(json, "\"gpu_idle_ms\":{\"500\":40.000},\"unexplained_ms\":{\"500\":4.000},"
		  "\"streams\":{\"500\":1},\"devices\":{\"500\":1},");
	HAS(json, "\"findings\":[{\"kind\":\"host_sync\",\"cost_ms\":26.000,");
	HAS(json, "},{\"kind\":\"pageable_copy\",\"cost_ms\":10.000,");
	HASNT(json, "\"kind\":\"launch_bound\"");
	HASNT(json, "per_stream_idle");
	HAS(json, small_batch);
	free(json);
}

/* 20 launches 100 us apart, a synchronize that waits 15 us: 19 gaps of
 * 75 us idle a step (the last kernel ran within 25 us). */
static void test_launch_bound(void)
{
	char *json = launch_findings("analyzer_findings_launch.frec", LAUNCH_BOUND, 1, 1);
	HAS(json, "{\"steps\":10,\"steps_from\":\"sync_period\",\"wall_ms\":30.100,");
	HAS(json, "\"gpu_idle_ms\":{\"510\":25.090},\"unexplained_ms\":{\"510\":0.000},"
		  "\"streams\":{\"510\":1},\"devices\":{\"510\":1},");
	/* most costly first: launch_bound 14.25 ms, then host_sync 10.84 ms */
	HAS(json, "\"findings\":[{\"kind\":\"launch_bound\",\"cost_ms\":14.250,"
		  "\"cost_ms_per_step\":1.425,\"share\":0.4734,\"pids\":[510],\"ranks\":[],"
		  "\"where\":[\"main\",\"train_step\",\"run_small_ops\",\"cudaLaunchKernel\"],"
		  "\"evidence\":\"10 runs of launches paced by the host: their closing synchronize "
		  "waited 0.015 ms on average, less than the median time between launches; 20 "
		  "launches per run, 0.100 ms apart on average (the launch calls 5.0 us each), while "
		  "each run\\u0027s last kernel ran within 0.025 ms; 190 gaps left the GPU idle "
		  "(14.25 ms) if no kernel ran longer than that");
	HAS(json, "\"fix\":\"issue fewer, larger kernels: capture the step in a CUDA graph");
	HAS(json, "},{\"kind\":\"host_sync\",\"cost_ms\":10.840,\"cost_ms_per_step\":1.084,"
		  "\"share\":0.3601,\"pids\":[510],\"ranks\":[],"
		  "\"where\":[\"main\",\"train_step\",\"cudaStreamSynchronize\"]");
	HAS(json, "\"below\":[]}");
	HAS(json, small_batch);
	HASNT(json, "{\"kind\":\"launch_bound\",\"why\"");
	free(json);
	char *text = launch_findings("analyzer_findings_launch.frec", LAUNCH_BOUND, 1, 0);
	HAS(text, "\n1. launch_bound: 14.2 ms of GPU idle (1.43 ms per step, 47.3% of wall x 1 process)\n"
		  "   pids: 510\n   where: main;train_step;run_small_ops;cudaLaunchKernel\n");
	HAS(text, "\n2. host_sync: 10.8 ms of GPU idle");
	free(text);
}

/* The same launches with the GPU behind (the synchronize waits 3 ms): a
 * healthy run, no finding above 3%, launch_bound nowhere. */
static void test_gpu_bound_is_healthy(void)
{
	char *json = launch_findings("analyzer_findings_gpubound.frec", LAUNCH_GPU_BOUND, 1, 1);
	HAS(json, "\"wall_ms\":50.100,");
	HAS(json, "\"gpu_idle_ms\":{\"510\":0.990},\"unexplained_ms\":{\"510\":0.000},");
	HAS(json, "\"findings\":[],\"below\":[{\"kind\":\"host_sync\",\"cost_ms\":0.990,"
		  "\"cost_ms_per_step\":0.099,\"share\":0.0198,");
	HASNT(json, "\"kind\":\"launch_bound\"");
	free(json);
	char *text = launch_findings("analyzer_findings_gpubound.frec", LAUNCH_GPU_BOUND, 1, 0);
	HAS(text, "\nno finding above 3% of wall time\n");
	free(text);
}

/* Every other launch on a second stream, the synchronize waits for the
 * first only: no launch_bound; the idle rule for several streams is said. */
static void test_two_streams(void)
{
	char *json = launch_findings("analyzer_findings_2streams.frec", LAUNCH_TWO_STREAMS, 1, 1);
	HAS(json, "\"gpu_idle_ms\":{\"510\":10.840},\"unexplained_ms\":{\"510\":0.000},"
		  "\"streams\":{\"510\":2},\"devices\":{\"510\":1},");
	HAS(json, "{\"kind\":\"per_stream_idle\",\"why\":\"pid 510 queued work on 2 streams of 1 "
		  "device: idle is read per process, any synchronize taken to empty them all");
	HAS(json, "\"findings\":[{\"kind\":\"host_sync\",\"cost_ms\":10.840,");
	HASNT(json, "\"kind\":\"launch_bound\"");
	free(json);
	char *text = launch_findings("analyzer_findings_2streams.frec", LAUNCH_TWO_STREAMS, 1, 0);
	HAS(text, "pid 510: GPU idle 10.8 ms in 11 intervals (36.0% of wall), unexplained 0.0 ms; "
		  "2 streams, 1 device (see per_stream_idle below)\n");
	free(text);
}

/* A driver launch inside every runtime launch, its stream in another
 * form: one launch, one stream, the same costs. */
static void test_nested_driver_launches(void)
{
	char *json = launch_findings("analyzer_findings_nested.frec", LAUNCH_NESTED, 1, 1);
	HAS(json, "\"gpu_idle_ms\":{\"510\":25.090},\"unexplained_ms\":{\"510\":0.000},"
		  "\"streams\":{\"510\":1},\"devices\":{\"510\":1},");
	HAS(json, "\"findings\":[{\"kind\":\"launch_bound\",\"cost_ms\":14.250,");
	HAS(json, "190 gaps left the GPU idle (14.25 ms)");
	HASNT(json, "per_stream_idle");
	free(json);
}

/* No CPU samples: the gaps' time cannot be told from waiting; it is
 * unexplained, and launch_bound is listed as not evaluated. */
static void test_without_samples(void)
{
	char *json = launch_findings("analyzer_findings_nosamples.frec", LAUNCH_BOUND, 0, 1);
	HAS(json, "\"gpu_idle_ms\":{\"510\":25.090},\"unexplained_ms\":{\"510\":25.090},");
	HAS(json, "{\"kind\":\"launch_bound\",\"why\":\"no CPU samples (--probes without cpu)");
	HAS(json, "\"findings\":[],\"below\":[]");
	free(json);
}

int main(void)
{
	test_standard_trace();
	test_launch_bound();
	test_gpu_bound_is_healthy();
	test_two_streams();
	test_nested_driver_launches();
	test_without_samples();
	return check_finish();
}
