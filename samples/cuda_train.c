/* cuda_train: a deterministic "training job" on the CUDA runtime API, for
 * recording with flightrec's cuda probes.
 *
 * What it is for: giving tests a CUDA workload whose every allocation, copy,
 * launch and synchronisation is known in advance, so a recording can be
 * checked number by number.  It links against libcudart.so.12 (in this tree
 * the stand-in, samples/cudart/; it would run unchanged on NVIDIA's).
 * What it is NOT for: training anything.  Kernels are host stubs whose
 * addresses stand for kernels; no data is computed.
 *
 * Usage: cuda_train [--steps N] [--step-ms M] [--device D]
 *   --steps N    training steps (default 20, at least 1)
 *   --step-ms M  CPU work per step in cpu_work, so CPU samples exist (default 5)
 *   --device D   cudaSetDevice(D) first (default 0; the stand-in has
 *                FLIGHTREC_FAKE_GPUS devices)
 *
 * What it does (MiB = 1,048,576 bytes; every size is a multiple of 256, so
 * the stand-in's 256-byte rounding changes nothing):
 *   init_weights      3 x cudaMalloc 256 MiB = 805,306,368 bytes, live until
 *                     free_weights at the end of the run
 *   alloc_io_buffers  1 x cudaMalloc 64 MiB = 67,108,864 bytes (device input
 *                     buffer, freed in free_io_buffers at the end); host
 *                     buffers: malloc 64 MiB + 1 MiB (pageable) and
 *                     cudaMallocHost 16 MiB = 16,777,216 bytes (pinned,
 *                     cudaFreeHost in free_io_buffers); one cudaStreamCreate
 *   train_step (step marker; once per step, in this order):
 *     load_batch      cudaMemcpy H2D 64 MiB = 67,108,864 bytes from PAGEABLE
 *                     memory (blocking, on the critical path)
 *     leaky_cache     cudaMalloc 1 MiB = 1,048,576 bytes, never freed
 *     forward         2 x cudaMalloc 512 MiB = 1,073,741,824 bytes
 *     launch_kernels  4 x cudaLaunchKernel on the stream (gemm_forward_kernel,
 *                     relu_kernel, gemm_backward_kernel, sgd_update_kernel)
 *     try_huge_alloc  ONLY in step N/2 (0-based, integer division; step 10
 *                     of 20): cudaMalloc of the device's total memory as
 *                     cudaMemGetInfo reports it (17,179,869,184 bytes with
 *                     the stand-in's default 16 GiB) -> cudaErrorMemoryAllocation
 *                     (2); the run continues
 *     backward        2 x cudaFree of forward's buffers
 *     pinned_upload   cudaMemcpyAsync H2D 16 MiB = 16,777,216 bytes from the
 *                     PINNED buffer on the stream, then at once
 *                     cudaStreamSynchronize(stream)
 *     report_metrics  cudaMemcpy D2H 1 MiB = 1,048,576 bytes into PAGEABLE
 *                     memory, then cudaDeviceSynchronize
 *     cpu_work        --step-ms of CPU
 *   free_io_buffers, free_weights: 4 x cudaFree, 1 x cudaFreeHost.
 *
 * Exact totals for N steps (the summary line prints each; the test
 * samples/cudart/check_cuda_train.sh recomputes them; device_inuse_at_exit
 * is cudaMemGetInfo's total - free at the end, the library's own count of
 * the leak):
 *   peak in use       1,946,157,056 + N x 1,048,576 bytes, first reached in
 *                     the last step after forward (N = 20: 1,967,128,576)
 *     at the peak, by allocating function:
 *       init_weights      805,306,368
 *       alloc_io_buffers   67,108,864
 *       forward         1,073,741,824
 *       leaky_cache     N x 1,048,576  (N = 20: 20,971,520)
 *   leaked at exit    N allocations, N x 1,048,576 bytes, all leaky_cache
 *   cudaMalloc        4 + 3N succeed, 1 fails (try_huge_alloc)
 *   cudaFree          2N + 4; cudaMallocHost 1; cudaFreeHost 1
 *   copies            H2D pageable (cudaMemcpy):        N x 67,108,864
 *                     H2D pinned   (cudaMemcpyAsync):   N x 16,777,216
 *                     D2H pageable (cudaMemcpy):        N x  1,048,576
 *                     D2H pinned, D2D:                  none
 *   launches          4N; cudaStreamSynchronize N; cudaDeviceSynchronize N
 *
 * Time per step on the stand-in with its defaults (approximate: sleeps):
 * load_batch ~8.4 ms (64 MiB at 8 GB/s); the 4 kernels queue 4 x 50 us,
 * which backward's first cudaFree waits for (cudaFree synchronizes the
 * device, as NVIDIA's does); pinned_upload ~0.68 ms (16 MiB at 25 GB/s,
 * all inside cudaStreamSynchronize); report_metrics ~0.14 ms; cpu_work
 * --step-ms.
 *
 * Every function named above is noinline and calls out of itself (no leaf:
 * GCC drops the frame pointer of a leaf even with
 * -mno-omit-leaf-frame-pointer, and a frame-pointer walk then skips the
 * caller), so each appears in the stacks of its CUDA calls.
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
#include <time.h>

#define MiB (1024ull * 1024ull)
/* noipa (GCC): no inlining and no .isra/.constprop clones, so each
 * function keeps its own frame and its plain name in stacks. */
#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noipa))
#endif

#define WEIGHT_BYTES (256 * MiB)
#define N_WEIGHTS 3
#define IO_DEVICE_BYTES (64 * MiB)
#define BATCH_BYTES (64 * MiB)
#define PINNED_BYTES (16 * MiB)
#define METRICS_BYTES (1 * MiB)
#define ACTIVATION_BYTES (512 * MiB)
#define N_ACTIVATIONS 2
#define LEAK_BYTES (1 * MiB)
#define KERNELS_PER_STEP 4

/* Who allocated the bytes now in use (the program's own ledger, printed in
 * the summary so a recording can be compared against it). */
enum owner { OWN_WEIGHTS, OWN_IO, OWN_FORWARD, OWN_LEAKY, N_OWNERS };
static const char *const owner_names[N_OWNERS] = {
	"init_weights", "alloc_io_buffers", "forward", "leaky_cache",
};

struct ledger {
	uint64_t inuse_bytes[N_OWNERS];
	uint64_t at_peak_bytes[N_OWNERS];
	uint64_t peak_bytes;
	uint64_t leak_allocs;
	unsigned malloc_ok, malloc_failed, frees;
	unsigned h2d_pageable, h2d_pinned, d2h_pageable, kernels, stream_syncs, device_syncs;
	uint64_t failed_alloc_bytes;
	int failed_alloc_result;
};

struct job {
	int steps;
	int step_ms;
	int device;
	void *weights[N_WEIGHTS];
	void *io_dev;
	void *activations[N_ACTIVATIONS];
	unsigned char *batch_host;   /* pageable */
	unsigned char *metrics_host; /* pageable */
	void *pinned_host;
	cudaStream_t stream;
	struct ledger led;
};

static int g_failed;

/* Checks a call that must succeed; a failure fails the run at the end. */
static void check(cudaError_t err, const char *what)
{
	if (err != cudaSuccess) {
		fprintf(stderr, "cuda_train: %s: %s (%d)\n", what, cudaGetErrorString(err), (int)err);
		g_failed = 1;
	}
}

static uint64_t ledger_total(const struct ledger *led)
{
	uint64_t total = 0;
	for (int i = 0; i < N_OWNERS; i++)
		total += led->inuse_bytes[i];
	return total;
}

static void ledger_alloc(struct ledger *led, enum owner who, uint64_t bytes)
{
	led->malloc_ok++;
	led->inuse_bytes[who] += bytes;
	uint64_t total = ledger_total(led);
	if (total > led->peak_bytes) {
		led->peak_bytes = total;
		memcpy(led->at_peak_bytes, led->inuse_bytes, sizeof(led->at_peak_bytes));
	}
}

/* Books the result of a cudaMalloc made by `who` (called after the call,
 * so the CUDA call's caller is the named function itself). */
static NOINLINE void booked_alloc(struct job *job, enum owner who, uint64_t bytes, cudaError_t err,
				  const char *what)
{
	check(err, what);
	if (err == cudaSuccess)
		ledger_alloc(&job->led, who, bytes);
}

static NOINLINE void booked_free(struct job *job, enum owner who, uint64_t bytes, cudaError_t err,
				 const char *what)
{
	check(err, what);
	job->led.frees++;
	if (err == cudaSuccess)
		job->led.inuse_bytes[who] -= bytes;
}

/* Kernel stubs: their addresses are the "kernels" launched (as nvcc's host
 * stubs are); they are never called.  Distinct bodies keep distinct
 * addresses. */
NOINLINE void gemm_forward_kernel(void) { puts("gemm_forward_kernel"); }
NOINLINE void relu_kernel(void) { puts("relu_kernel"); }
NOINLINE void gemm_backward_kernel(void) { puts("gemm_backward_kernel"); }
NOINLINE void sgd_update_kernel(void) { puts("sgd_update_kernel"); }

static NOINLINE void init_weights(struct job *job)
{
	for (int i = 0; i < N_WEIGHTS; i++)
		booked_alloc(job, OWN_WEIGHTS, WEIGHT_BYTES, cudaMalloc(&job->weights[i], WEIGHT_BYTES),
			     "init_weights: cudaMalloc");
}

static NOINLINE void alloc_io_buffers(struct job *job)
{
	booked_alloc(job, OWN_IO, IO_DEVICE_BYTES, cudaMalloc(&job->io_dev, IO_DEVICE_BYTES),
		     "alloc_io_buffers: cudaMalloc");
	job->batch_host = malloc(BATCH_BYTES);
	job->metrics_host = malloc(METRICS_BYTES);
	if (!job->batch_host || !job->metrics_host) {
		fprintf(stderr, "cuda_train: out of host memory\n");
		exit(1);
	}
	memset(job->batch_host, 0x5a, BATCH_BYTES); /* real, touched pages */
	check(cudaMallocHost(&job->pinned_host, PINNED_BYTES), "alloc_io_buffers: cudaMallocHost");
	if (job->pinned_host)
		memset(job->pinned_host, 0xa5, PINNED_BYTES);
	check(cudaStreamCreate(&job->stream), "alloc_io_buffers: cudaStreamCreate");
}

static NOINLINE void load_batch(struct job *job)
{
	job->batch_host[0]++; /* a new batch */
	check(cudaMemcpy(job->io_dev, job->batch_host, BATCH_BYTES, cudaMemcpyHostToDevice),
	      "load_batch: cudaMemcpy");
	job->led.h2d_pageable++;
}

static NOINLINE void leaky_cache(struct job *job)
{
	void *p = NULL; /* dropped: the leak */
	cudaError_t err = cudaMalloc(&p, LEAK_BYTES);
	booked_alloc(job, OWN_LEAKY, LEAK_BYTES, err, "leaky_cache: cudaMalloc");
	if (err == cudaSuccess)
		job->led.leak_allocs++;
}

static NOINLINE void forward(struct job *job)
{
	for (int i = 0; i < N_ACTIVATIONS; i++)
		booked_alloc(job, OWN_FORWARD, ACTIVATION_BYTES,
			     cudaMalloc(&job->activations[i], ACTIVATION_BYTES), "forward: cudaMalloc");
}

static NOINLINE void launch_kernels(struct job *job)
{
	void (*const kernels[KERNELS_PER_STEP])(void) = {
		gemm_forward_kernel, relu_kernel, gemm_backward_kernel, sgd_update_kernel,
	};
	dim3 grid = { 256, 1, 1 }, block = { 256, 1, 1 };
	for (int i = 0; i < KERNELS_PER_STEP; i++) {
		void *args[] = { &job->activations[0], &job->activations[1], &job->weights[i % N_WEIGHTS] };
		check(cudaLaunchKernel((const void *)kernels[i], grid, block, args, 0, job->stream),
		      "launch_kernels: cudaLaunchKernel");
		job->led.kernels++;
	}
}

/* Asks for the whole device while it is in use: must fail. */
static NOINLINE void try_huge_alloc(struct job *job)
{
	size_t free_bytes = 0, total_bytes = 0;
	check(cudaMemGetInfo(&free_bytes, &total_bytes), "try_huge_alloc: cudaMemGetInfo");
	void *p = NULL;
	cudaError_t err = cudaMalloc(&p, total_bytes);
	job->led.failed_alloc_bytes = total_bytes;
	job->led.failed_alloc_result = (int)err;
	printf("cuda_train: try_huge_alloc %zu bytes (%zu free) -> %d (%s)\n", total_bytes,
	       free_bytes, (int)err, cudaGetErrorName(err));
	if (err == cudaErrorMemoryAllocation && p == NULL) {
		job->led.malloc_failed++;
		(void)cudaGetLastError(); /* handled: clear it */
	} else {
		fprintf(stderr, "cuda_train: try_huge_alloc did not fail as it must\n");
		g_failed = 1;
		if (err == cudaSuccess)
			cudaFree(p);
	}
}

static NOINLINE void backward(struct job *job)
{
	for (int i = 0; i < N_ACTIVATIONS; i++)
		booked_free(job, OWN_FORWARD, ACTIVATION_BYTES, cudaFree(job->activations[i]),
			    "backward: cudaFree");
}

/* The async-then-sync pattern: an async copy waited for at once. */
static NOINLINE void pinned_upload(struct job *job)
{
	check(cudaMemcpyAsync(job->io_dev, job->pinned_host, PINNED_BYTES, cudaMemcpyHostToDevice,
			      job->stream),
	      "pinned_upload: cudaMemcpyAsync");
	job->led.h2d_pinned++;
	check(cudaStreamSynchronize(job->stream), "pinned_upload: cudaStreamSynchronize");
	job->led.stream_syncs++;
}

static NOINLINE void report_metrics(struct job *job)
{
	check(cudaMemcpy(job->metrics_host, job->io_dev, METRICS_BYTES, cudaMemcpyDeviceToHost),
	      "report_metrics: cudaMemcpy");
	job->led.d2h_pageable++;
	check(cudaDeviceSynchronize(), "report_metrics: cudaDeviceSynchronize");
	job->led.device_syncs++;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static NOINLINE void cpu_work(int ms)
{
	uint64_t until = mono_ns() + (uint64_t)ms * 1000000ull;
	volatile uint64_t x = 1;
	while (mono_ns() < until)
		for (int i = 0; i < 1000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
}

/* One training step; a good --step-marker. */
NOINLINE void train_step(struct job *job, int step)
{
	load_batch(job);
	leaky_cache(job);
	forward(job);
	launch_kernels(job);
	if (step == job->steps / 2)
		try_huge_alloc(job);
	backward(job);
	pinned_upload(job);
	report_metrics(job);
	cpu_work(job->step_ms);
}

static NOINLINE void free_io_buffers(struct job *job)
{
	booked_free(job, OWN_IO, IO_DEVICE_BYTES, cudaFree(job->io_dev), "free_io_buffers: cudaFree");
	check(cudaFreeHost(job->pinned_host), "free_io_buffers: cudaFreeHost");
	check(cudaStreamDestroy(job->stream), "free_io_buffers: cudaStreamDestroy");
	free(job->batch_host);
	free(job->metrics_host);
}

static NOINLINE void free_weights(struct job *job)
{
	for (int i = 0; i < N_WEIGHTS; i++)
		booked_free(job, OWN_WEIGHTS, WEIGHT_BYTES, cudaFree(job->weights[i]),
			    "free_weights: cudaFree");
}

static void print_summary(const struct job *job)
{
	const struct ledger *led = &job->led;
	size_t free_bytes = 0, total_bytes = 0; /* the library's view, to cross-check */
	check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
	printf("cuda_train: summary steps=%d peak_bytes=%llu", job->steps,
	       (unsigned long long)led->peak_bytes);
	for (int i = 0; i < N_OWNERS; i++)
		printf(" %s=%llu", owner_names[i], (unsigned long long)led->at_peak_bytes[i]);
	printf(" leak_bytes=%llu leak_allocs=%llu failed_alloc_bytes=%llu failed_alloc_result=%d"
	       " cuda_malloc_ok=%u cuda_malloc_failed=%u cuda_free=%u"
	       " h2d_pageable=%ux%llu h2d_pinned_async=%ux%llu d2h_pageable=%ux%llu"
	       " kernels=%u stream_syncs=%u device_syncs=%u device_inuse_at_exit=%llu\n",
	       (unsigned long long)ledger_total(led), (unsigned long long)led->leak_allocs,
	       (unsigned long long)led->failed_alloc_bytes, led->failed_alloc_result,
	       led->malloc_ok, led->malloc_failed, led->frees,
	       led->h2d_pageable, (unsigned long long)BATCH_BYTES,
	       led->h2d_pinned, (unsigned long long)PINNED_BYTES,
	       led->d2h_pageable, (unsigned long long)METRICS_BYTES,
	       led->kernels, led->stream_syncs, led->device_syncs,
	       (unsigned long long)(total_bytes - free_bytes));
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

static NOINLINE int run(struct job *job)
{
	int ndev = 0;
	check(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount");
	check(cudaSetDevice(job->device), "cudaSetDevice");
	if (g_failed)
		return 1;
	printf("cuda_train: %d device(s), using %d, %d steps\n", ndev, job->device, job->steps);
	fflush(stdout);
	init_weights(job);
	alloc_io_buffers(job);
	for (int step = 0; step < job->steps && !g_failed; step++)
		train_step(job, step);
	free_io_buffers(job);
	free_weights(job);
	print_summary(job);
	return g_failed;
}

int main(int argc, char **argv)
{
	static struct job job = { .steps = 20, .step_ms = 5, .device = 0 };
	for (int i = 1; i < argc; i++) {
		int *target = NULL, min = 0;
		if (!strcmp(argv[i], "--steps"))
			target = &job.steps, min = 1;
		else if (!strcmp(argv[i], "--step-ms"))
			target = &job.step_ms;
		else if (!strcmp(argv[i], "--device"))
			target = &job.device;
		if (!target || i + 1 >= argc || parse_int(argv[++i], min, target)) {
			fprintf(stderr, "usage: cuda_train [--steps N>=1] [--step-ms M] [--device D]\n");
			return 2;
		}
	}
	return run(&job);
}
