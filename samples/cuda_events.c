/* cuda_events: a training step captured once as a CUDA graph and replayed,
 * its streams ordered with events, for recording with flightrec's cuda
 * probes.
 *
 * What it is for: giving tests a workload whose every event record, event
 * query (and its answer), stream wait on an event and graph launch is known
 * in advance: how many, from which function, with which handles.  It links
 * against libcudart.so.12 (in this tree the stand-in, samples/cudart/).
 * What it is NOT for: training anything, nor timing: kernels are host stubs
 * whose addresses stand for kernels.
 *
 * Usage: cuda_events [--steps N] [--kernel-us U]
 *   --steps N      steps (default 4, at least 1)
 *   --kernel-us U  every kernel's time on the stand-in's fake GPU (default
 *                  10000): set as FLIGHTREC_FAKE_KERNEL_US before the first
 *                  CUDA call (NVIDIA's library ignores it).  A step's graph
 *                  runs 3 kernels, so poll_step's query comes 3 x U after
 *                  nothing: "not ready" unless the process stalls that long
 *                  between two calls (then "done"; both count, and the
 *                  program prints how many were not ready).
 *
 * What it does (every function named is noinline and makes its calls
 * itself, so it is the leaf frame of their stacks):
 *   setup             cudaStreamCreate x2 (main, side), cudaEventCreate x2
 *                     (step_done, copy_done), cudaMalloc 16 MiB,
 *                     cudaMallocHost 16 MiB
 *   upload_then_wait  cudaMemcpyAsync H2D 16 MiB from pinned memory on main,
 *                     cudaEventRecord(copy_done, main),
 *                     cudaEventSynchronize(copy_done): an async copy waited
 *                     for at once, through an event (once)
 *   capture_step      cudaStreamBeginCapture(main, Global), 3 x
 *                     cudaLaunchKernel on main (captured, not run: forward,
 *                     backward, optimizer kernels), cudaStreamEndCapture,
 *                     cudaGraphInstantiate
 *   per step (a good --step-marker: train_step):
 *     replay_step       cudaGraphLaunch(exec, main)
 *     mark_step_done    cudaEventRecord(step_done, main)
 *     poll_step         cudaEventQuery(step_done) -> cudaErrorNotReady (600)
 *     join_side_stream  cudaStreamWaitEvent(side, step_done, 0), then
 *                       cudaLaunchKernel(metrics_kernel) on side
 *     per_thread_replay the per-thread default stream's variants, stream
 *                       NULL: cudaStreamWaitEvent_ptsz(NULL, step_done, 0),
 *                       cudaGraphLaunch_ptsz(exec, NULL),
 *                       cudaEventRecord_ptsz(step_done, NULL)
 *     wait_step         cudaEventSynchronize(step_done), then
 *                       cudaEventQuery(step_done) -> cudaSuccess (0)
 *   teardown          cudaDeviceSynchronize, cudaGraphExecDestroy,
 *                     cudaGraphDestroy, 2 x cudaEventDestroy,
 *                     2 x cudaStreamDestroy, cudaFree, cudaFreeHost
 *
 * Exact counts for N steps (the summary line prints each; "_ptsz" is the
 * per-thread-stream variant):
 *   cudaGraphLaunch N, cudaGraphLaunch_ptsz N            (graph exec, stream)
 *   cudaEventRecord N + 1 (N mark_step_done, 1 upload_then_wait),
 *   cudaEventRecord_ptsz N
 *   cudaEventQuery 2N: N poll_step -> 600, N wait_step -> 0
 *   cudaStreamWaitEvent N, cudaStreamWaitEvent_ptsz N
 *   cudaEventSynchronize N + 1, cudaLaunchKernel 3 + N, cudaMemcpyAsync 1
 * The "handles" line prints main, side, step_done, copy_done and exec as
 * numbers, so a recording's ptr and stream fields can be checked.
 */
#ifdef CUDART_STANDIN_REAL_HEADER
#include <cuda_runtime_api.h>
#else
#include "cuda_runtime_api_min.h"
#endif

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NVIDIA exports the per-thread-stream variants; its header declares them
 * only through macros (CUDA_API_PER_THREAD_DEFAULT_STREAM). */
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream);

#define MiB (1024ull * 1024ull)
#define UPLOAD_BYTES (16 * MiB)
#define GRAPH_KERNELS 3
/* noipa (GCC): no inlining and no .isra/.constprop clones, so each
 * function keeps its own frame and its plain name in stacks. */
#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noipa))
#endif

struct counts {
	unsigned graph_launches, graph_launches_ptsz, event_records, event_records_ptsz;
	unsigned event_queries, not_ready, stream_waits, stream_waits_ptsz, event_syncs, kernels;
};

struct job {
	int steps;
	cudaStream_t main_stream, side;
	cudaEvent_t step_done, copy_done;
	cudaGraph_t graph;
	cudaGraphExec_t exec;
	void *dev, *pinned;
	struct counts n;
};

static int g_failed;

/* Checks a call's result against the one it must return. */
static void expect(cudaError_t err, cudaError_t want, const char *what)
{
	if (err != want) {
		fprintf(stderr, "cuda_events: %s: %s (%d), want %d\n", what, cudaGetErrorName(err),
			(int)err, (int)want);
		g_failed = 1;
	}
}

static void check(cudaError_t err, const char *what)
{
	expect(err, cudaSuccess, what);
}

/* Kernel stubs: their addresses are the "kernels" launched; never called. */
NOINLINE void forward_kernel(void) { puts("forward_kernel"); }
NOINLINE void backward_kernel(void) { puts("backward_kernel"); }
NOINLINE void optimizer_kernel(void) { puts("optimizer_kernel"); }
NOINLINE void metrics_kernel(void) { puts("metrics_kernel"); }

static NOINLINE void setup(struct job *job)
{
	check(cudaStreamCreate(&job->main_stream), "setup: cudaStreamCreate");
	check(cudaStreamCreate(&job->side), "setup: cudaStreamCreate");
	check(cudaEventCreate(&job->step_done), "setup: cudaEventCreate");
	check(cudaEventCreate(&job->copy_done), "setup: cudaEventCreate");
	check(cudaMalloc(&job->dev, UPLOAD_BYTES), "setup: cudaMalloc");
	check(cudaMallocHost(&job->pinned, UPLOAD_BYTES), "setup: cudaMallocHost");
	if (job->pinned)
		memset(job->pinned, 0x5a, UPLOAD_BYTES);
}

static NOINLINE void upload_then_wait(struct job *job)
{
	check(cudaMemcpyAsync(job->dev, job->pinned, UPLOAD_BYTES, cudaMemcpyHostToDevice,
			      job->main_stream), "upload_then_wait: cudaMemcpyAsync");
	check(cudaEventRecord(job->copy_done, job->main_stream), "upload_then_wait: cudaEventRecord");
	job->n.event_records++;
	check(cudaEventSynchronize(job->copy_done), "upload_then_wait: cudaEventSynchronize");
	job->n.event_syncs++;
}

static NOINLINE void capture_step(struct job *job)
{
	void (*const kernels[GRAPH_KERNELS])(void) = {
		forward_kernel, backward_kernel, optimizer_kernel,
	};
	dim3 grid = { 128, 1, 1 }, block = { 256, 1, 1 };
	check(cudaStreamBeginCapture(job->main_stream, cudaStreamCaptureModeGlobal),
	      "capture_step: cudaStreamBeginCapture");
	for (int i = 0; i < GRAPH_KERNELS; i++) {
		void *args[] = { &job->dev };
		check(cudaLaunchKernel((const void *)kernels[i], grid, block, args, 0, job->main_stream),
		      "capture_step: cudaLaunchKernel");
		job->n.kernels++;
	}
	check(cudaStreamEndCapture(job->main_stream, &job->graph), "capture_step: cudaStreamEndCapture");
	check(cudaGraphInstantiate(&job->exec, job->graph, 0), "capture_step: cudaGraphInstantiate");
}

static NOINLINE void replay_step(struct job *job)
{
	check(cudaGraphLaunch(job->exec, job->main_stream), "replay_step: cudaGraphLaunch");
	job->n.graph_launches++;
}

static NOINLINE void mark_step_done(struct job *job)
{
	check(cudaEventRecord(job->step_done, job->main_stream), "mark_step_done: cudaEventRecord");
	job->n.event_records++;
}

/* The graph was launched a moment ago: its kernels are still running. */
static NOINLINE void poll_step(struct job *job)
{
	cudaError_t err = cudaEventQuery(job->step_done);
	job->n.event_queries++;
	job->n.not_ready += err == cudaErrorNotReady;
	if (err != cudaSuccess)
		expect(err, cudaErrorNotReady, "poll_step: cudaEventQuery");
	(void)cudaGetLastError(); /* not ready is an answer, not a failure */
}

static NOINLINE void join_side_stream(struct job *job)
{
	dim3 grid = { 1, 1, 1 }, block = { 32, 1, 1 };
	check(cudaStreamWaitEvent(job->side, job->step_done, 0), "join_side_stream: cudaStreamWaitEvent");
	job->n.stream_waits++;
	check(cudaLaunchKernel((const void *)metrics_kernel, grid, block, NULL, 0, job->side),
	      "join_side_stream: cudaLaunchKernel");
	job->n.kernels++;
}

/* What code built with --default-stream per-thread calls: NULL is the
 * calling thread's stream. */
static NOINLINE void per_thread_replay(struct job *job)
{
	check(cudaStreamWaitEvent_ptsz(NULL, job->step_done, 0),
	      "per_thread_replay: cudaStreamWaitEvent_ptsz");
	job->n.stream_waits_ptsz++;
	check(cudaGraphLaunch_ptsz(job->exec, NULL), "per_thread_replay: cudaGraphLaunch_ptsz");
	job->n.graph_launches_ptsz++;
	check(cudaEventRecord_ptsz(job->step_done, NULL), "per_thread_replay: cudaEventRecord_ptsz");
	job->n.event_records_ptsz++;
}

static NOINLINE void wait_step(struct job *job)
{
	check(cudaEventSynchronize(job->step_done), "wait_step: cudaEventSynchronize");
	job->n.event_syncs++;
	cudaError_t err = cudaEventQuery(job->step_done);
	job->n.event_queries++;
	job->n.not_ready += err == cudaErrorNotReady;
	expect(err, cudaSuccess, "wait_step: cudaEventQuery");
}

NOINLINE void train_step(struct job *job)
{
	replay_step(job);
	mark_step_done(job);
	poll_step(job);
	join_side_stream(job);
	per_thread_replay(job);
	wait_step(job);
}

static NOINLINE void teardown(struct job *job)
{
	check(cudaDeviceSynchronize(), "teardown: cudaDeviceSynchronize");
	check(cudaGraphExecDestroy(job->exec), "teardown: cudaGraphExecDestroy");
	check(cudaGraphDestroy(job->graph), "teardown: cudaGraphDestroy");
	check(cudaEventDestroy(job->step_done), "teardown: cudaEventDestroy");
	check(cudaEventDestroy(job->copy_done), "teardown: cudaEventDestroy");
	check(cudaStreamDestroy(job->side), "teardown: cudaStreamDestroy");
	check(cudaStreamDestroy(job->main_stream), "teardown: cudaStreamDestroy");
	check(cudaFree(job->dev), "teardown: cudaFree");
	check(cudaFreeHost(job->pinned), "teardown: cudaFreeHost");
}

static NOINLINE int run(struct job *job)
{
	setup(job);
	if (g_failed)
		return 1;
	printf("cuda_events: handles main=%llu side=%llu step_done=%llu copy_done=%llu",
	       (unsigned long long)(uintptr_t)job->main_stream,
	       (unsigned long long)(uintptr_t)job->side,
	       (unsigned long long)(uintptr_t)job->step_done,
	       (unsigned long long)(uintptr_t)job->copy_done);
	upload_then_wait(job);
	capture_step(job);
	printf(" exec=%llu\n", (unsigned long long)(uintptr_t)job->exec);
	fflush(stdout);
	for (int step = 0; step < job->steps && !g_failed; step++)
		train_step(job);
	teardown(job);
	const struct counts *n = &job->n;
	printf("cuda_events: summary steps=%d cudaGraphLaunch=%u cudaGraphLaunch_ptsz=%u"
	       " cudaEventRecord=%u cudaEventRecord_ptsz=%u cudaEventQuery=%u not_ready=%u"
	       " cudaStreamWaitEvent=%u cudaStreamWaitEvent_ptsz=%u cudaEventSynchronize=%u"
	       " cudaLaunchKernel=%u\n",
	       job->steps, n->graph_launches, n->graph_launches_ptsz, n->event_records,
	       n->event_records_ptsz, n->event_queries, n->not_ready, n->stream_waits,
	       n->stream_waits_ptsz, n->event_syncs, n->kernels);
	return g_failed;
}

static int parse_int(const char *s, int min, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < min || v > 1000000)
		return -1;
	*out = (int)v;
	return 0;
}

int main(int argc, char **argv)
{
	static struct job job = { .steps = 4 };
	int kernel_us = 10000;
	for (int i = 1; i < argc; i++) {
		int *target = NULL, min = 0;
		if (!strcmp(argv[i], "--steps"))
			target = &job.steps, min = 1;
		else if (!strcmp(argv[i], "--kernel-us"))
			target = &kernel_us;
		if (!target || i + 1 >= argc || parse_int(argv[++i], min, target)) {
			fprintf(stderr, "usage: cuda_events [--steps N>=1] [--kernel-us U]\n");
			return 2;
		}
	}
	char us[16];
	snprintf(us, sizeof(us), "%d", kernel_us);
	setenv("FLIGHTREC_FAKE_KERNEL_US", us, 1); /* read at the first CUDA call */
	return run(&job);
}
