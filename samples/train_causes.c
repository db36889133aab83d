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
 *   --steps N      steps (default 40)
 *   --kernel-us U  each kernel's time on the fake GPU (default 1000)
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
 *   end_of_step:    cudaStreamSynchronize (the step's loss read once)
 *   [--checkpoint]  in steps 5, 15, 25 ... save_checkpoint: DIR/train.pt, 32 MiB
 *                   written with write() in 4 MiB pieces, fsync, close (never
 *                   in the last step: a launch follows each save)
 *
 * The truth line, last on stdout, in milliseconds summed over the steps:
 *   truth steps=N dataloader_ms=A pageable_ms=B checkpoint_ms=C host_sync_ms=D
 *   dataloader: load_batch's start to decode_batch's end; pageable: the
 *   cudaMemcpy call; checkpoint: save_checkpoint; host_sync: from each
 *   read_loss synchronize's return to the next launch.  Causes off read 0.
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

struct truth {
	uint64_t dataloader_ns, pageable_ns, checkpoint_ns, host_sync_ns;
};

struct job {
	int steps;
	int dataloader, pageable, checkpoint, host_sync;
	const char *dir;
	int input_fd;
	unsigned char *input;     /* read into, then decoded */
	unsigned char *pageable_host;
	unsigned char *ckpt;      /* the "state" saved */
	void *dev;
	uint64_t sync_returned_ns; /* read_loss's last return, 0: none pending */
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

static NOINLINE void stage_input_pageable(struct job *job)
{
	job->pageable_host[0]++;
	uint64_t t0 = mono_ns();
	check(cudaMemcpy(job->dev, job->pageable_host, PAGEABLE_BYTES, cudaMemcpyHostToDevice),
	      "stage_input_pageable: cudaMemcpy");
	job->truth.pageable_ns += mono_ns() - t0;
}

static NOINLINE void read_loss(struct job *job)
{
	check(cudaStreamSynchronize(0), "read_loss: cudaStreamSynchronize");
	job->sync_returned_ns = mono_ns();
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
	check(cudaLaunchKernel((const void *)layer_kernel, grid, block, args, 0, 0),
	      "launch_layer: cudaLaunchKernel");
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

static NOINLINE void end_of_step(void)
{
	check(cudaStreamSynchronize(0), "end_of_step: cudaStreamSynchronize");
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
	end_of_step();
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
	int kernel_us = 1000;
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
		else {
			fprintf(stderr, "usage: train_causes [--steps N] [--kernel-us U] [--dir DIR] "
				"[--dataloader] [--pageable] [--checkpoint] [--host-sync]\n");
			return 2;
		}
	}
	char us[32];
	snprintf(us, sizeof(us), "%d", kernel_us);
	setenv("FLIGHTREC_FAKE_KERNEL_US", us, 1); /* read at the first CUDA call */
	setup(&job);
	for (int step = 0; step < job.steps && !g_failed; step++)
		train_step(&job, step);
	check(cudaFree(job.dev), "cudaFree");
	printf("truth steps=%d dataloader_ms=%.3f pageable_ms=%.3f checkpoint_ms=%.3f "
	       "host_sync_ms=%.3f\n", job.steps, ms(job.truth.dataloader_ns),
	       ms(job.truth.pageable_ns), ms(job.truth.checkpoint_ns), ms(job.truth.host_sync_ns));
	return g_failed;
}
