/* The findings model on synthetic traces built for exact answers
 * (test_analyzer_findings_trace.h, which derives each number): the idle
 * kinds of the standard findings trace; launch_bound with its exact cost,
 * where, evidence and place among the others; a healthy GPU-bound run with
 * as many launches, which has no finding above the threshold and no
 * launch_bound at all; a run whose launches alternate between two streams
 * (no launch_bound, and the output says how idle is read with several
 * streams); the same launches each with a probed driver launch inside
 * (counted once); a recording without CPU samples (launch_bound not evaluated,
 * its time unexplained); small_batch always listed as not evaluated.  NCCL
 * jobs (findings_nccl_body): a straggler job, blocking and enqueued (the
 * straggler's finding holds the stragglers model's wait, nccl_exchange the
 * transfer, nothing counted twice), an exchange-bound job on the GPU, a
 * healthy one, and the multi-node job of test_analyzer_job.h against the
 * stragglers command (and one node of it alone: not split).  The outputs'
 * findings tests (report, sqlite, timeline, the browser's) check that they
 * carry what this model gives. */
#include "check.h"
#include "test_analyzer_common.h"
#include "test_analyzer_findings_trace.h"
#include "test_analyzer_job.h"

#include "commands.h"

#include <math.h>

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
	HAS(json, "{\"steps\":10,\"steps_from\":\"sync_period\",\"step_ms\":3.000,"
		  "\"steps_regular\":1.000,\"step_site\":\"cudaStreamSynchronize\",\"wall_ms\":30.100,");
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
		  "2 streams, 1 device (see per_stream_idle below); from host signals (an upper "
		  "bound: 'flightrec record --gpu-kernels' measures it)\n");
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

static char *ddp_findings(const char *name, enum ddp_mode mode, int json)
{
	char path[512];
	synth_path(name, path, sizeof(path));
	struct synth s;
	CHECK_EQ_U64(synth_open(&s, path), 0);
	findings_nccl_body(&s, 2000000000ull, mode);
	CHECK_EQ_U64(synth_close(&s, 0, 0), 0);
	return findings_of(path, json);
}

/* The number after `key` in text from `from` on (NAN when absent). */
static double num_after(const char *text, const char *from, const char *key)
{
	const char *at = text && from ? strstr(text, from) : NULL;
	at = at ? strstr(at, key) : NULL;
	return at ? strtod(at + strlen(key), NULL) : NAN;
}

/* Sums the values of the JSON object after `key` ({"600":62.000,...}). */
static double sum_object(const char *text, const char *key)
{
	const char *at = text ? strstr(text, key) : NULL;
	double sum = 0;
	if (!at)
		return NAN;
	at += strlen(key);
	while (*at && *at != '}') {
		const char *colon = strchr(at, ':');
		if (!colon)
			break;
		char *end;
		sum += strtod(colon + 1, &end);
		at = end;
	}
	return sum;
}

/* The costs of every costed finding, listed or below the threshold. */
static double sum_costs(const char *json)
{
	double sum = 0;
	for (const char *at = json; (at = strstr(at, "\"cost_ms\":")) != NULL; at++) {
		char *end;
		double v = strtod(at + strlen("\"cost_ms\":"), &end);
		if (end != at + strlen("\"cost_ms\":"))
			sum += v;
	}
	return sum;
}

static const char ddp_where[] = "\"where\":[\"main\",\"train_step\",\"allreduce_grads\","
				"\"ncclAllReduce\"]";

/* A straggler job (test_analyzer_findings_trace.h: DDP_STRAGGLER): the
 * others' wait for rank 2 is the straggler's finding, with the stragglers
 * model's numbers (5 ms x 9 steps x 3 ranks), inside their GPU idle; the
 * exchange after the last rank entered is nccl_exchange, under the
 * threshold; the rest of the waits is unexplained; nothing counted twice.
 * The same job with NCCL's enqueue-and-synchronize gives the same. */
static void test_nccl_straggler(void)
{
	for (int async = 0; async < 2; async++) {
		char *json = ddp_findings(async ? "analyzer_findings_ddp_async.frec"
					  : "analyzer_findings_ddp_strag.frec",
					  async ? DDP_STRAGGLER_ASYNC : DDP_STRAGGLER, 1);
		HAS(json, "{\"steps\":10,\"steps_from\":\"collective_period\",");
		HAS(json, "\"gpu_idle_ms\":{\"600\":62.000,\"601\":57.000,\"602\":2.000,\"603\":52.000},"
			  "\"unexplained_ms\":{\"600\":15.000,\"601\":10.000,\"602\":0.000,\"603\":5.000},");
		HAS(json, "\"findings\":[{\"kind\":\"straggler\",\"cost_ms\":135.000,"
			  "\"cost_ms_per_step\":15.000,\"share\":0.2764,\"pids\":[600,601,603],"
			  "\"ranks\":[0,1,3],\"where\":[\"slow_loader\"],\"evidence\":\"the other 3 ranks "
			  "wait for rank 2 (host node-a, pid 602) 5.00 ms per step each since step 0");
		HAS(json, "\"below\":[{\"kind\":\"nccl_exchange\",\"cost_ms\":8.000,"
			  "\"cost_ms_per_step\":0.800,\"share\":0.0123,\"pids\":[600,601,602,603],"
			  "\"ranks\":[0,1,2,3],");
		HAS(json, ddp_where);
		HAS(json, "after the last rank entered each, moving the data took 8.0 ms (0.200 ms per "
			  "collective on average, 4.0 MiB each: 20.97 GB/s algorithm bandwidth)");
		HAS(json, "before that the ranks waited 165.0 ms for the last to enter (135.0 ms of it "
			  "for the straggler: its own finding; 30.0 ms for ranks no verdict names");
		HASNT(json, "nccl_wait");
		HASNT(json, "{\"kind\":\"nccl_exchange\",\"why\"");
		HASNT(json, "{\"kind\":\"straggler\",\"why\"");
		/* the costs are parts of the idle, none counted twice */
		CHECK(fabs(sum_costs(json) - 143.0) < 1e-9);
		CHECK(sum_costs(json) <= sum_object(json, "\"gpu_idle_ms\":{"));
		free(json);
	}
	char *text = ddp_findings("analyzer_findings_ddp_strag.frec", DDP_STRAGGLER, 0);
	HAS(text, "\n1. straggler: 135.0 ms of GPU idle (15.00 ms per step, 27.6% of wall x 3 "
		  "processes)\n   pids: 600 (rank 0) 601 (rank 1) 603 (rank 3)\n   where: slow_loader\n");
	HAS(text, "\nunder 3% (not findings): nccl_exchange 8.0 ms (1.2%)\n");
	free(text);
}

/* An exchange-bound job on the GPU (DDP_EXCHANGE): each rank's idle
 * interval opens at its compute synchronize and holds the collective;
 * 4 ms of exchange a step on every rank is the first finding (160 ms,
 * 27.6%), with the collective's stack and its fix; no straggler. */
static void test_nccl_exchange_bound(void)
{
	char *json = ddp_findings("analyzer_findings_ddp_exchange.frec", DDP_EXCHANGE, 1);
	HAS(json, "\"wall_ms\":145.000,");
	HAS(json, "\"gpu_idle_ms\":{\"600\":44.000,\"601\":43.000,\"602\":42.000,\"603\":41.000},"
		  "\"unexplained_ms\":{\"600\":3.000,\"601\":2.000,\"602\":1.000,\"603\":0.000},");
	HAS(json, "\"findings\":[{\"kind\":\"nccl_exchange\",\"cost_ms\":160.000,"
		  "\"cost_ms_per_step\":16.000,\"share\":0.2759,\"pids\":[600,601,602,603],"
		  "\"ranks\":[0,1,2,3],");
	HAS(json, ddp_where);
	HAS(json, "moving the data took 160.0 ms (4.000 ms per collective on average, 4.0 MiB each: "
		  "1.05 GB/s algorithm bandwidth)");
	HAS(json, "\"fix\":\"overlap communication with computation: all-reduce gradient buckets "
		  "while backward still runs");
	HAS(json, "\"below\":[{\"kind\":\"host_sync\",\"cost_ms\":4.000,");
	HAS(json, "(4.0 per step, 0.100 ms on average, longest 0.100 ms)");
	HASNT(json, "\"kind\":\"straggler\"");
	CHECK(fabs(sum_costs(json) - 164.0) < 1e-9);
	CHECK(sum_costs(json) <= sum_object(json, "\"gpu_idle_ms\":{"));
	free(json);
	char *text = ddp_findings("analyzer_findings_ddp_exchange.frec", DDP_EXCHANGE, 0);
	HAS(text, "\n1. nccl_exchange: 160.0 ms of GPU idle (16.00 ms per step, 27.6% of wall x 4 "
		  "processes)\n   pids: 600 (rank 0) 601 (rank 1) 602 (rank 2) 603 (rank 3)\n"
		  "   where: main;train_step;allreduce_grads;ncclAllReduce\n");
	free(text);
}

/* A healthy job (DDP_HEALTHY): 0.2 ms of exchange a 10.5 ms step is under
 * the threshold; no finding, no straggler.  A rank that returns late
 * (its thread not running) adds to its idle, not to the exchange. */
static void test_nccl_healthy(void)
{
	char *json = ddp_findings("analyzer_findings_ddp_healthy.frec", DDP_HEALTHY, 1);
	HAS(json, "\"wall_ms\":105.800,");
	HAS(json, "\"gpu_idle_ms\":{\"600\":5.000,\"601\":4.500,\"602\":3.000,\"603\":2.000},"
		  "\"unexplained_ms\":{\"600\":3.000,\"601\":2.500,\"602\":1.000,\"603\":0.000},");
	HAS(json, "\"findings\":[],\"below\":[{\"kind\":\"nccl_exchange\",\"cost_ms\":8.000,"
		  "\"cost_ms_per_step\":0.800,\"share\":0.0189,");
	HAS(json, "; 0.5 ms more returning after the collective had completed on another rank");
	/* read from the collectives alone, and said */
	HAS(json, "{\"kind\":\"dataloader\",\"why\":\"no CUDA calls recorded (cuda probe not "
		  "attached?): GPU idle is read from synchronizes and launches, here only from the "
		  "time inside NCCL calls\"}");
	HASNT(json, "{\"kind\":\"nccl_exchange\",\"why\"");
	free(json);
	char *text = ddp_findings("analyzer_findings_ddp_healthy.frec", DDP_HEALTHY, 0);
	HAS(text, "\nno finding above 3% of wall time\n");
	free(text);
}

/* The multi-node job of test_analyzer_job.h (two nodes, a 250 ms clock
 * error on the second, rank 3 slowed 10 ms a step, two collectives a
 * step): the straggler's cost per step is the stragglers command's for
 * each of the 3 other ranks, and the costs stay within the GPU idle; only
 * one node's trace: the collectives cannot be split (their other ranks
 * are not there), and it says so. */
static void test_nccl_job_two_nodes(void)
{
	struct job j = { .nodes = 2, .ranks_per_node = 2, .steps = 30, .k = 2, .compute_ms = 40,
			 .jitter_ms = 0.5, .slow_rank = 3, .slow_ms = 10, .slow_share = 1,
			 .skew_ms = { 0, 250 }, .with_init = 1, .seed = 7 };
	char paths[MAX_NODES][512];
	CHECK(write_job(&j, "findings_job", paths) == 0);
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	char *sargv[] = { "stragglers", paths[0], paths[1], "--json", NULL };
	CHECK_EQ_U64(cmd_stragglers(4, sargv, mem, stderr), 0);
	fclose(mem);
	double per_step = num_after(buf, "\"straggler\":{", "\"cost_ms_per_step\":");
	CHECK(per_step > 9 && per_step < 11);
	free(buf);
	buf = NULL;
	mem = open_memstream(&buf, &len);
	char *fargv[] = { "findings", paths[0], paths[1], "--json", NULL };
	CHECK_EQ_U64(cmd_findings(4, fargv, mem, stderr), 0);
	fclose(mem);
	HAS(buf, "\"findings\":[{\"kind\":\"straggler\",");
	HAS(buf, "\"pids\":[1000,1001,1100],\"ranks\":[0,1,2],");
	double f_per_step = num_after(buf, "{\"kind\":\"straggler\"", "\"cost_ms_per_step\":");
	CHECK(fabs(f_per_step - 3 * per_step) < 0.01);
	CHECK(sum_costs(buf) <= sum_object(buf, "\"gpu_idle_ms\":{"));
	HAS(buf, "{\"kind\":\"nccl_exchange\",\"cost_ms\":");
	free(buf);
	/* one node alone */
	buf = NULL;
	mem = open_memstream(&buf, &len);
	char *oargv[] = { "findings", paths[0], "--json", NULL };
	CHECK_EQ_U64(cmd_findings(3, oargv, mem, stderr), 0);
	fclose(mem);
	HAS(buf, "{\"kind\":\"nccl_exchange\",\"why\":\"no collective has every rank of its "
		 "communicator in these traces");
	HASNT(buf, "\"kind\":\"nccl_exchange\",\"cost_ms\"");
	HASNT(buf, "\"kind\":\"straggler\",\"cost_ms\"");
	free(buf);
}

int main(void)
{
	test_standard_trace();
	test_launch_bound();
	test_gpu_bound_is_healthy();
	test_two_streams();
	test_nested_driver_launches();
	test_without_samples();
	test_nccl_straggler();
	test_nccl_exchange_bound();
	test_nccl_healthy();
	test_nccl_job_two_nodes();
	return check_finish();
}
