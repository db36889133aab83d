/* train_causes: a training loop on the CUDA runtime API in which each
 * known cause of an idle GPU can be switched on alone or with others, and
 * which prints how long it spent in each: the ground truth that
 * `flightrec-analyze findings` is checked against.
 *
 * What it is for: tests/integration/test_findings.py records it and
 * compares each finding's cost with the truth line.  It links against
 * libcudart.so.12 (in this tree the stand-in, samples/cudart/, whose fake
 * GPU runs each kernel for FLIGHTREC_FAKE_KERNEL_US; --kernel-us sets it).
 * What it is NOT for: training anything; kernels are host stubs.
 *
 * Usage: train_causes [--steps N] [--kernel-us U] [--dir DIR]
 *                     [--dataloader] [--pageable] [--checkpoint] [--host-sync]
 *                     [--launch-bound]
 *   --steps N      steps (default 40)
 *   --kernel-us U  each kernel's time on the fake GPU (default 1000; 20
 *                  with --launch-bound: the stand-in has one kernel time)
 *   --dir DIR      where the input file and train.pt go (default .)
 *
 * One step, on the legacy default stream (every cause off: the clean run):
 *   [--dataloader]  load_batch: read() 4 MiB of DIR/input.bin (written once
 *                   at start), then decode_batch: 3 ms of CPU over it
 *   [--pageable]    stage_input_pageable: cudaMemcpy H2D of 16 MiB from
 *                   malloc'd memory (pageable: ~2.1 ms on the fake GPU, plus
 *                   the stand-in's bounce-buffer memcpy)
 *   forward_backward: 4 kernels of --kernel-us each; after each launch but
 *                   the last, prepare_launch spends 300 us of CPU (the
 *                   host's dispatch work, which the queued kernel hides);
 *                   [--host-sync] after each of the first 3 launches
 *                   read_loss calls cudaStreamSynchronize (like .item()), so
 *                   the GPU waits for prepare_launch
 *   [--launch-bound] optimizer_step: 32 small kernels (20 us each unless
 *                   --kernel-us says otherwise), each after dispatch_op
 *                   spends 300 us of CPU (an eager optimizer's per-parameter
 *                   updates and the framework's dispatch): the host issues
 *                   kernels slower than the GPU runs them.  Ten times a real
 *                   framework's dispatch: the stand-in's synchronize wakes
 *                   tens of us late, and the findings rule reads the last
 *                   kernel's time from it
 *   end_of_step:    cudaStreamSynchronize (the step's loss read once)
 *   [--checkpoint]  in steps 5, 15, 25 ... save_checkpoint: DIR/train.pt, 32 MiB
 *                   written with write() in 4 MiB pieces, fsync, close (never
 *                   in the last step: a launch follows each save)
 *
 * The truth line, last on stdout, in milliseconds summed over the steps:
 *   truth steps=N dataloader_ms=A pageable_ms=B checkpoint_ms=C host_sync_ms=D
 *         launch_bound_ms=E
 *   dataloader: load_batch's start to decode_batch's end; pageable: the
 *   cudaMemcpy call; checkpoint: save_checkpoint; host_sync: from each
 *   read_loss synchronize's return to the next launch; launch_bound: the
 *   fake GPU's idle between launches with no synchronize between them,
 *   replayed here as the stand-in runs them (each kernel starts at its
 *   launch or when the one before it ends, and runs --kernel-us).  Causes
 *   off read 0; launch_bound reads near 0 (300 us between 1000 us kernels
 *   leaves the fake GPU no gap, unless the host is descheduled for longer).
 * The line before it, "sync_truth launch_bound_sync_ms=F": the fake GPU's
 * idle from the last kernel of each step (as replayed) to end_of_step's
 * synchronize's return, which kernel records count in a launch-bound run
 * and a replay from host signals cannot see (near 0 unless the host wakes
 * late from the synchronize, as on a loaded machine).
 *
 * The thread's timer slack is 1 ns: the stand-in's synchronize sleeps until
 * its fake GPU is done, and the default 50 us of slack would make every
 * synchronize wait that much past it (a real one spins, or blocks on an
 * interrupt, and returns when the work is done).
 *
 * Every function named above is noinline and calls out of itself (no leaf
 * whose frame pointer GCC would drop), so each shows in the stacks.
 */
#ifdef CUDART_STANDIN_REAL_HEADER
#include <cuda_runtime_api.h>
#else
#include "cuda_runtime_api_min.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define MiB (1024ull * 1024ull)
#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noipa))
#endif

#define INPUT_BYTES (4 * MiB)
#define DECODE_US 3000
#define PAGEABLE_BYTES (16 * MiB)
#define KERNELS_PER_STEP 4
#define PREPARE_US 300
#define CHECKPOINT_EVERY 10
#define CHECKPOINT_BYTES (32 * MiB)
#define CHECKPOINT_PIECE (4 * MiB)
#define SMALL_OPS 32
#define SMALL_KERNEL_US 20
#define DISPATCH_US 300

struct truth {
	uint64_t dataloader_ns, pageable_ns, checkpoint_ns, host_sync_ns, launch_bound_ns;
	uint64_t launch_bound_sync_ns;
};

struct job {
	int steps;
	int dataloader, pageable, checkpoint, host_sync, launch_bound;
	const char *dir;
	int input_fd;
	unsigned char *input;     /* read into, then decoded */
	unsigned char *pageable_host;
	unsigned char *ckpt;      /* the "state" saved */
	void *dev;
	uint64_t sync_returned_ns; /* read_loss's last return, 0: none pending */
	uint64_t kernel_ns;       /* each kernel's time on the fake GPU */
	uint64_t gpu_done_ns;     /* when the kernels launched since the last
				     synchronize end, as replayed; 0: none */
	struct truth truth;
};

static int g_failed;

static void check(cudaError_t err, const char *what)
{
	if (err != cudaSuccess) {
		fprintf(stderr, "train_causes: %s: %s (%d)\n", what, cudaGetErrorString(err), (int)err);
		g_failed = 1;
	}
}

static NOINLINE uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CPU work on buf until us microseconds have passed. */
static NOINLINE uint64_t spin_over(const unsigned char *buf, size_t len, unsigned us)
{
	uint64_t until = mono_ns() + (uint64_t)us * 1000ull, h = 1469598103934665603ull;
	size_t i = 0;
	do {
		for (int k = 0; k < 4096; k++, i = (i + 1) % len)
			h = (h ^ buf[i]) * 1099511628211ull;
	} while (mono_ns() < until);
	return h;
}

/* Kernel stubs: their addresses are the kernels launched. */
NOINLINE void layer_kernel(void) { puts("layer_kernel"); }
NOINLINE void small_kernel(void) { puts("small_kernel"); }

static NOINLINE uint64_t decode_batch(struct job *job)
{
	return spin_over(job->input, INPUT_BYTES, DECODE_US);
}

static NOINLINE void load_batch(struct job *job)
{
	uint64_t t0 = mono_ns();
	size_t got = 0;
	if (lseek(job->input_fd, 0, SEEK_SET) != 0) {
		fprintf(stderr, "train_causes: seek input: %s\n", strerror(errno));
		exit(1);
	}
	while (got < INPUT_BYTES) {
		ssize_t n = read(job->input_fd, job->input + got, INPUT_BYTES - got);
		if (n <= 0) {
			fprintf(stderr, "train_causes: read input: %s\n", n ? strerror(errno) : "short file");
			exit(1);
		}
		got += (size_t)n;
	}
	job->input[0] ^= (unsigned char)decode_batch(job);
	job->truth.dataloader_ns += mono_ns() - t0;
}

/* Every synchronize leaves the fake GPU empty: the replay starts over. */
static void synchronized(struct job *job)
{
	job->gpu_done_ns = 0;
}

/* Just before a launch: the fake GPU's idle since its last kernel ended
 * (none before the first launch after a synchronize: that idle is another
 * cause's), then this kernel queued behind it. */
static void replay_launch(struct job *job)
{
	uint64_t now = mono_ns(), start = now;
	if (job->gpu_done_ns) {
		if (now > job->gpu_done_ns)
			job->truth.launch_bound_ns += now - job->gpu_done_ns;
		else
			start = job->gpu_done_ns;
	}
	job->gpu_done_ns = start + job->kernel_ns;
}

static NOINLINE void stage_input_pageable(struct job *job)
{
	job->pageable_host[0]++;
	uint64_t t0 = mono_ns();
	check(cudaMemcpy(job->dev, job->pageable_host, PAGEABLE_BYTES, cudaMemcpyHostToDevice),
	      "stage_input_pageable: cudaMemcpy");
	job->truth.pageable_ns += mono_ns() - t0;
	synchronized(job); /* cudaMemcpy waits for the queued kernels */
}

static NOINLINE void read_loss(struct job *job)
{
	check(cudaStreamSynchronize(0), "read_loss: cudaStreamSynchronize");
	job->sync_returned_ns = mono_ns();
	synchronized(job);
}

static NOINLINE void prepare_launch(struct job *job)
{
	job->input[1] ^= (unsigned char)spin_over(job->input, 4096, PREPARE_US);
}

static NOINLINE void launch_layer(struct job *job)
{
	dim3 grid = { 128, 1, 1 }, block = { 256, 1, 1 };
	void *args[] = { &job->dev };
	if (job->sync_returned_ns) {
		job->truth.host_sync_ns += mono_ns() - job->sync_returned_ns;
		job->sync_returned_ns = 0;
	}
	replay_launch(job);
	check(cudaLaunchKernel((const void *)layer_kernel, grid, block, args, 0, 0),
	      "launch_layer: cudaLaunchKernel");
}

/* The framework's work before each small op: CPU only. */
static NOINLINE void dispatch_op(struct job *job)
{
	job->input[2] ^= (unsigned char)spin_over(job->input, 4096, DISPATCH_US);
}

static NOINLINE void launch_small_op(struct job *job)
{
	dim3 grid = { 1, 1, 1 }, block = { 128, 1, 1 };
	void *args[] = { &job->dev };
	replay_launch(job);
	check(cudaLaunchKernel((const void *)small_kernel, grid, block, args, 0, 0),
	      "launch_small_op: cudaLaunchKernel");
}

static NOINLINE void optimizer_step(struct job *job)
{
	for (int k = 0; k < SMALL_OPS; k++) {
		dispatch_op(job);
		launch_small_op(job);
	}
}

static NOINLINE void forward_backward(struct job *job)
{
	for (int k = 0; k < KERNELS_PER_STEP; k++) {
		launch_layer(job);
		if (k == KERNELS_PER_STEP - 1)
			break;
		if (job->host_sync)
			read_loss(job);
		prepare_launch(job);
	}
}

static NOINLINE void end_of_step(struct job *job)
{
	check(cudaStreamSynchronize(0), "end_of_step: cudaStreamSynchronize");
	uint64_t now = mono_ns();
	if (job->gpu_done_ns && now > job->gpu_done_ns)
		job->truth.launch_bound_sync_ns += now - job->gpu_done_ns;
	synchronized(job);
}

static NOINLINE void save_checkpoint(struct job *job, int step)
{
	uint64_t t0 = mono_ns();
	char path[4096];
	snprintf(path, sizeof(path), "%s/train.pt", job->dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		fprintf(stderr, "train_causes: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	job->ckpt[0] = (unsigned char)step;
	for (size_t at = 0; at < CHECKPOINT_BYTES;) {
		ssize_t n = write(fd, job->ckpt + at, CHECKPOINT_PIECE);
		if (n <= 0) {
			fprintf(stderr, "train_causes: write %s: %s\n", path, strerror(errno));
			exit(1);
		}
		at += (size_t)n;
	}
	if (fsync(fd) || close(fd)) {
		fprintf(stderr, "train_causes: fsync %s: %s\n", path, strerror(errno));
		exit(1);
	}
	job->truth.checkpoint_ns += mono_ns() - t0;
}

NOINLINE void train_step(struct job *job, int step)
{
	if (job->dataloader)
		load_batch(job);
	if (job->pageable)
		stage_input_pageable(job);
	forward_backward(job);
	if (job->launch_bound)
		optimizer_step(job);
	end_of_step(job);
	if (job->checkpoint && step % CHECKPOINT_EVERY == CHECKPOINT_EVERY / 2 &&
	    step + 1 < job->steps)
		save_checkpoint(job, step);
}

static NOINLINE void setup(struct job *job)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/input.bin", job->dir);
	job->input = malloc(INPUT_BYTES);
	job->pageable_host = malloc(PAGEABLE_BYTES);
	job->ckpt = malloc(CHECKPOINT_BYTES);
	if (!job->input || !job->pageable_host || !job->ckpt) {
		fprintf(stderr, "train_causes: out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < INPUT_BYTES; i++)
		job->input[i] = (unsigned char)(i * 131u);
	memset(job->pageable_host, 0x5a, PAGEABLE_BYTES);
	memset(job->ckpt, 0xa5, CHECKPOINT_BYTES);
	if (job->dataloader) {
		int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || write(fd, job->input, INPUT_BYTES) != (ssize_t)INPUT_BYTES) {
			fprintf(stderr, "train_causes: %s: %s\n", path, strerror(errno));
			exit(1);
		}
		job->input_fd = fd;
	}
	check(cudaMalloc(&job->dev, PAGEABLE_BYTES), "setup: cudaMalloc");
}

static int parse_int(const char *s, int min, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < min || v > 100000000)
		return -1;
	*out = (int)v;
	return 0;
}

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

int main(int argc, char **argv)
{
	struct job job = { .steps = 40, .dir = ".", .input_fd = -1 };
	int kernel_us = 0; /* 0: the default, which depends on the causes */
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--steps") && i + 1 < argc && !parse_int(argv[i + 1], 1, &job.steps))
			i++;
		else if (!strcmp(a, "--kernel-us") && i + 1 < argc &&
			 !parse_int(argv[i + 1], 1, &kernel_us))
			i++;
		else if (!strcmp(a, "--dir") && i + 1 < argc)
			job.dir = argv[++i];
		else if (!strcmp(a, "--dataloader"))
			job.dataloader = 1;
		else if (!strcmp(a, "--pageable"))
			job.pageable = 1;
		else if (!strcmp(a, "--checkpoint"))
			job.checkpoint = 1;
		else if (!strcmp(a, "--host-sync"))
			job.host_sync = 1;
		else if (!strcmp(a, "--launch-bound"))
			job.launch_bound = 1;
		else {
			fprintf(stderr, "usage: train_causes [--steps N] [--kernel-us U] [--dir DIR] "
				"[--dataloader] [--pageable] [--checkpoint] [--host-sync] "
				"[--launch-bound]\n");
			return 2;
		}
	}
	if (!kernel_us)
		kernel_us = job.launch_bound ? SMALL_KERNEL_US : 1000;
	job.kernel_ns = (uint64_t)kernel_us * 1000ull;
	/* the synchronize wakes when the fake GPU is done (see the top) */
	if (prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL))
		fprintf(stderr, "train_causes: PR_SET_TIMERSLACK: %s (synchronizes may return late)\n",
			strerror(errno));
	char us[32];
	snprintf(us, sizeof(us), "%d", kernel_us);
	setenv("FLIGHTREC_FAKE_KERNEL_US", us, 1); /* read at the first CUDA call */
	setup(&job);
	for (int step = 0; step < job.steps && !g_failed; step++)
		train_step(&job, step);
	check(cudaFree(job.dev), "cudaFree");
	printf("sync_truth launch_bound_sync_ms=%.3f\n", ms(job.truth.launch_bound_sync_ns));
	printf("truth steps=%d dataloader_ms=%.3f pageable_ms=%.3f checkpoint_ms=%.3f "
	       "host_sync_ms=%.3f launch_bound_ms=%.3f\n", job.steps, ms(job.truth.dataloader_ns),
	       ms(job.truth.pageable_ns), ms(job.truth.checkpoint_ns), ms(job.truth.host_sync_ns),
	       ms(job.truth.launch_bound_ns));
	return g_failed;
}
