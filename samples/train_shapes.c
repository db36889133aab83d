/* train_shapes: training loops shaped as real ones are, each printing how
 * long it spent in what makes its GPU wait: the ground truth that
 * `flightrec-analyze findings` is checked against on code it was not
 * tuned to (samples/train_causes is the loop the rules were developed on;
 * this one is written apart from it: other call shapes, other sizes, other
 * system calls).
 *
 * It links against libcudart.so.12 (in this tree the stand-in,
 * samples/cudart/, whose fake GPU runs each kernel for
 * FLIGHTREC_FAKE_KERNEL_US; set here from --kernel-us).  Kernels are host
 * stubs; nothing is trained.
 *
 * Usage: train_shapes [--steps N] [--kernel-us U] [--dir DIR] [--slow]
 *                     [--compute plain|per-op-sync|two-streams|graph]
 *                     [--input none|loader-proc|pin-thread] [--checkpoint]
 *                     [--ckpt-mib M]
 *   --steps N      steps (default 20)
 *   --kernel-us U  each kernel's time on the fake GPU (default 800)
 *   --dir DIR      where the checkpoints go (default .)
 *   --ckpt-mib M   the checkpoint's size (default 48)
 *   --slow         the input side is slower than the GPU (60 ms of CPU a
 *                  batch instead of 0.5): without it the input shapes are
 *                  clean
 *
 * Compute, per step (ROUNDS = 40 rounds, each one kernel, then 100 us of
 * host work in prepare_op and 100 us in log_metric):
 *   plain         the rounds' launches queue on the legacy stream; one
 *                 cudaDeviceSynchronize at the end of the step
 *                 (finish_step).  Host 8 ms, GPU 32 ms: clean (a 4x margin, so
 *                 a busy host does not make it launch-bound)
 *   per-op-sync   each round ends in tensor_item: a 4-byte cudaMemcpy
 *                 device-to-host (like .item() on a loss), so log_metric
 *                 and the next round's launch no longer overlap the GPU
 *   two-streams   the batch goes up on a copy stream (cudaMemcpyAsync from
 *                 pinned memory, cudaEventRecord), the compute stream
 *                 waits for it (cudaStreamWaitEvent) and runs the rounds;
 *                 cudaStreamSynchronize(compute) ends the step: clean
 *   graph         the 40 kernels captured once into a CUDA graph, replayed
 *                 each step with cudaGraphLaunch while the host does the
 *                 40 rounds' bookkeeping; cudaStreamSynchronize: clean
 * Input, before the rounds of each step:
 *   loader-proc   a forked worker process (loader_worker) makes each
 *                 64 KiB batch (CPU) and writes it into a pipe of 1 MiB
 *                 (up to 16 batches made ahead, as prefetch_factor does);
 *                 the training thread's next_batch reads it
 *   pin-thread    a pin-memory thread (pin_worker) makes each batch and
 *                 copies it into pinned memory (cudaMallocHost), then
 *                 signals a condition variable that the training thread
 *                 waits on in wait_pinned_batch
 * --checkpoint   every 5th step, the last included, save_checkpoint:
 *                serialize_state (CPU over 48 MiB of state into a buffer,
 *                or --ckpt-mib),
 *                then DIR/ckpt_step_N.pt.tmp written in 1 MiB pieces,
 *                fsync, close, rename to DIR/ckpt_step_N.pt; after the
 *                last one the process cleans up and exits: no launch
 *                follows it
 *
 * Before the first step: cudaMalloc, cudaDeviceSynchronize (a framework's
 * start-up), so the GPU is known empty when step 0 begins.
 *
 * The truth line, last on stdout, milliseconds summed over the steps:
 *   truth steps=N host_sync_ms=A checkpoint_ms=B dataloader_ms=C
 *         loader_pid=P loader_tid=T
 *   host_sync: from each tensor_item copy's return to the next round's
 *   launch (within a step; the gap after the step's last round belongs to
 *   finish_step, as in the plain loop); checkpoint: save_checkpoint's
 *   whole call; dataloader: next_batch's or wait_pinned_batch's whole
 *   call; loader_pid/loader_tid: the worker process or thread (0: none).
 *   Every one of those intervals is GPU idle: the GPU was empty when it
 *   began (a synchronize or a synchronous copy had returned) and gets no
 *   work until it ends.
 *
 * Every function named above is noinline and calls out of itself, so each
 * shows in the stacks; the thread's timer slack is 1 ns, as in
 * train_causes (the stand-in's synchronize sleeps until its fake GPU is
 * done).
 */
#ifdef CUDART_STANDIN_REAL_HEADER
#include <cuda_runtime_api.h>
#else
#include "cuda_runtime_api_min.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MiB (1024ull * 1024ull)
#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noipa))
#endif

#define ROUNDS 40
#define PREPARE_US 100
#define LOG_US 100
#define BATCH_BYTES (64u * 1024u)
#define BATCH_SLOW_US 60000
#define BATCH_FAST_US 500
#define CKPT_EVERY 5
#define CKPT_MIB 48
#define CKPT_PIECE (1 * MiB)
#define SERIALIZE_US 15000

enum compute { PLAIN, PER_OP_SYNC, TWO_STREAMS, GRAPH };
enum input { NO_INPUT, LOADER_PROC, PIN_THREAD };

struct pin_queue {
	pthread_mutex_t lock;
	pthread_cond_t ready, taken;
	int full;                 /* a batch waits in pinned */
	int stop;
	unsigned char *pinned;    /* cudaMallocHost */
	unsigned batch_us;
	pid_t tid;
};

struct shapes {
	int steps, checkpoint;
	size_t ckpt_bytes;
	enum compute compute;
	enum input input;
	unsigned batch_us;
	const char *dir;
	void *dev;
	unsigned char *state, *ser;  /* the model's state and its serialized copy */
	unsigned char batch[BATCH_BYTES];
	float loss;
	int pipe_rd;
	pid_t loader_pid;
	struct pin_queue q;
	pthread_t pin_thread;
	cudaStream_t compute_stream, copy_stream;
	cudaEvent_t copied;
	cudaGraphExec_t graph;
	uint64_t item_returned_ns;   /* the last tensor_item's return, 0: none pending */
	uint64_t host_sync_ns, checkpoint_ns, dataloader_ns;
};

static int g_failed;

static void check(cudaError_t err, const char *what)
{
	if (err != cudaSuccess) {
		fprintf(stderr, "train_shapes: %s: %s (%d)\n", what, cudaGetErrorString(err), (int)err);
		g_failed = 1;
	}
}

static void die(const char *what)
{
	fprintf(stderr, "train_shapes: %s: %s\n", what, strerror(errno));
	exit(1);
}

static NOINLINE uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CPU time of the calling thread. */
static NOINLINE uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CPU over buf for us microseconds (a checksum, so it is not optimized out). */
static NOINLINE uint32_t busy_over(const unsigned char *buf, size_t len, unsigned us)
{
	uint64_t until = now_ns() + (uint64_t)us * 1000ull;
	uint32_t sum = 7;
	size_t i = 0;
	do {
		for (int k = 0; k < 2048; k++, i = i + 1 < len ? i + 1 : 0)
			sum = sum * 31u + buf[i];
	} while (now_ns() < until);
	return sum;
}

NOINLINE void op_kernel(void) { puts("op_kernel"); }

/* ---- input ---------------------------------------------------------------- */

/* us microseconds of the worker's own CPU time, not of the clock: on a busy
 * host the worker slows as the training thread does, so a slow loader
 * stays slower than the step and a fast one faster */
static NOINLINE void make_batch(unsigned char *batch, unsigned us, unsigned n)
{
	uint64_t until = cpu_ns() + (uint64_t)us * 1000ull;
	batch[0] = (unsigned char)n;
	do
		batch[1] ^= (unsigned char)busy_over(batch, BATCH_BYTES, 100);
	while (cpu_ns() < until);
}

static NOINLINE void loader_worker(int wr, unsigned us, int batches)
{
	static unsigned char batch[BATCH_BYTES];
	for (int n = 0; n < batches; n++) {
		make_batch(batch, us, (unsigned)n);
		for (size_t at = 0; at < BATCH_BYTES;) {
			ssize_t k = write(wr, batch + at, BATCH_BYTES - at);
			if (k <= 0)
				_exit(k < 0 && errno == EPIPE ? 0 : 1);
			at += (size_t)k;
		}
	}
	_exit(0);
}

static NOINLINE void next_batch(struct shapes *s)
{
	uint64_t t0 = now_ns();
	for (size_t at = 0; at < BATCH_BYTES;) {
		ssize_t k = read(s->pipe_rd, s->batch + at, BATCH_BYTES - at);
		if (k <= 0) {
			fprintf(stderr, "train_shapes: the loader process ended early\n");
			exit(1);
		}
		at += (size_t)k;
	}
	s->dataloader_ns += now_ns() - t0;
}

static NOINLINE void *pin_worker(void *arg)
{
	struct pin_queue *q = arg;
	static unsigned char batch[BATCH_BYTES];
	q->tid = (pid_t)syscall(SYS_gettid);
	for (unsigned n = 0;; n++) {
		make_batch(batch, q->batch_us, n);
		pthread_mutex_lock(&q->lock);
		while (q->full && !q->stop)
			pthread_cond_wait(&q->taken, &q->lock);
		if (q->stop) {
			pthread_mutex_unlock(&q->lock);
			return NULL;
		}
		memcpy(q->pinned, batch, BATCH_BYTES);
		q->full = 1;
		pthread_cond_signal(&q->ready);
		pthread_mutex_unlock(&q->lock);
	}
}

static NOINLINE void wait_pinned_batch(struct shapes *s)
{
	uint64_t t0 = now_ns();
	pthread_mutex_lock(&s->q.lock);
	while (!s->q.full)
		pthread_cond_wait(&s->q.ready, &s->q.lock);
	memcpy(s->batch, s->q.pinned, 64);
	s->q.full = 0;
	pthread_cond_signal(&s->q.taken);
	pthread_mutex_unlock(&s->q.lock);
	s->dataloader_ns += now_ns() - t0;
}

static NOINLINE void start_input(struct shapes *s)
{
	if (s->input == LOADER_PROC) {
		int fds[2];
		if (pipe(fds))
			die("pipe");
		if (fcntl(fds[1], F_SETPIPE_SZ, (int)(16 * BATCH_BYTES)) < 0)
			die("F_SETPIPE_SZ");
		pid_t pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0) {
			close(fds[0]);
			prctl(PR_SET_PDEATHSIG, SIGTERM);
			loader_worker(fds[1], s->batch_us, s->steps);
		}
		close(fds[1]);
		s->pipe_rd = fds[0];
		s->loader_pid = pid;
	} else if (s->input == PIN_THREAD) {
		pthread_mutex_init(&s->q.lock, NULL);
		pthread_cond_init(&s->q.ready, NULL);
		pthread_cond_init(&s->q.taken, NULL);
		check(cudaMallocHost((void **)&s->q.pinned, BATCH_BYTES), "cudaMallocHost");
		s->q.batch_us = s->batch_us;
		if (pthread_create(&s->pin_thread, NULL, pin_worker, &s->q))
			die("pthread_create");
	}
}

static NOINLINE void stop_input(struct shapes *s)
{
	if (s->input == LOADER_PROC) {
		close(s->pipe_rd);
		waitpid(s->loader_pid, NULL, 0);
	} else if (s->input == PIN_THREAD) {
		pthread_mutex_lock(&s->q.lock);
		s->q.stop = 1;
		pthread_cond_broadcast(&s->q.taken);
		pthread_mutex_unlock(&s->q.lock);
		pthread_join(s->pin_thread, NULL);
	}
}

/* ---- compute -------------------------------------------------------------- */

static NOINLINE void prepare_op(struct shapes *s)
{
	s->batch[2] ^= (unsigned char)busy_over(s->batch, 4096, PREPARE_US);
}

static NOINLINE void log_metric(struct shapes *s)
{
	s->batch[3] ^= (unsigned char)busy_over(s->batch, 4096, LOG_US);
}

static NOINLINE void launch_op(struct shapes *s, cudaStream_t stream)
{
	dim3 grid = { 64, 1, 1 }, block = { 128, 1, 1 };
	void *args[] = { &s->dev };
	if (s->item_returned_ns) {
		s->host_sync_ns += now_ns() - s->item_returned_ns;
		s->item_returned_ns = 0;
	}
	check(cudaLaunchKernel((const void *)op_kernel, grid, block, args, 0, stream),
	      "launch_op: cudaLaunchKernel");
}

static NOINLINE void tensor_item(struct shapes *s)
{
	check(cudaMemcpy(&s->loss, s->dev, sizeof(s->loss), cudaMemcpyDeviceToHost),
	      "tensor_item: cudaMemcpy");
	s->item_returned_ns = now_ns();
}

static NOINLINE void run_rounds(struct shapes *s, cudaStream_t stream)
{
	for (int r = 0; r < ROUNDS; r++) {
		launch_op(s, stream);
		prepare_op(s);
		if (s->compute == PER_OP_SYNC) {
			tensor_item(s);
			if (r == ROUNDS - 1)
				s->item_returned_ns = 0; /* finish_step's gap, not a round's */
		}
		log_metric(s);
	}
}

static NOINLINE void upload_batch(struct shapes *s)
{
	check(cudaMemcpyAsync(s->dev, s->q.pinned, BATCH_BYTES, cudaMemcpyHostToDevice,
			      s->copy_stream), "upload_batch: cudaMemcpyAsync");
	check(cudaEventRecord(s->copied, s->copy_stream), "cudaEventRecord");
	check(cudaStreamWaitEvent(s->compute_stream, s->copied, 0), "cudaStreamWaitEvent");
}

static NOINLINE void replay_step(struct shapes *s)
{
	check(cudaGraphLaunch(s->graph, s->compute_stream), "cudaGraphLaunch");
	for (int r = 0; r < ROUNDS; r++) {
		prepare_op(s);
		log_metric(s);
	}
}

static NOINLINE void finish_step(struct shapes *s)
{
	if (s->compute == PLAIN || s->compute == PER_OP_SYNC)
		check(cudaDeviceSynchronize(), "finish_step: cudaDeviceSynchronize");
	else
		check(cudaStreamSynchronize(s->compute_stream), "finish_step: cudaStreamSynchronize");
}

/* ---- checkpoint ------------------------------------------------------------- */

static NOINLINE void serialize_state(struct shapes *s)
{
	memcpy(s->ser, s->state, s->ckpt_bytes);
	s->ser[0] ^= (unsigned char)busy_over(s->ser, s->ckpt_bytes, SERIALIZE_US);
}

static NOINLINE void save_checkpoint(struct shapes *s, int step)
{
	uint64_t t0 = now_ns();
	char tmp[4200], path[4096];
	snprintf(path, sizeof(path), "%s/ckpt_step_%d.pt", s->dir, step + 1);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	serialize_state(s);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(tmp);
	for (size_t at = 0; at < s->ckpt_bytes;) {
		ssize_t k = write(fd, s->ser + at, CKPT_PIECE);
		if (k <= 0)
			die(tmp);
		at += (size_t)k;
	}
	if (fsync(fd) || close(fd))
		die(tmp);
	if (rename(tmp, path))
		die(path);
	s->checkpoint_ns += now_ns() - t0;
}

/* ---- the loop --------------------------------------------------------------- */

NOINLINE void train_step(struct shapes *s, int step)
{
	if (s->input == LOADER_PROC)
		next_batch(s);
	else if (s->input == PIN_THREAD)
		wait_pinned_batch(s);
	if (s->compute == TWO_STREAMS) {
		upload_batch(s);
		run_rounds(s, s->compute_stream);
	} else if (s->compute == GRAPH) {
		replay_step(s);
	} else {
		run_rounds(s, 0);
	}
	finish_step(s);
	if (s->checkpoint && (step + 1) % CKPT_EVERY == 0)
		save_checkpoint(s, step);
}

static NOINLINE void setup_state(struct shapes *s)
{
	s->state = malloc(s->ckpt_bytes);
	s->ser = malloc(s->ckpt_bytes);
	if (!s->state || !s->ser)
		die("malloc");
	for (size_t i = 0; i < s->ckpt_bytes; i += 4096)
		s->state[i] = (unsigned char)(i >> 12);
	memset(s->ser, 0, s->ckpt_bytes);
}

static NOINLINE void setup(struct shapes *s)
{
	check(cudaMalloc(&s->dev, 1 * MiB), "cudaMalloc");
	if (s->compute == TWO_STREAMS || s->compute == GRAPH) {
		check(cudaStreamCreate(&s->compute_stream), "cudaStreamCreate");
		check(cudaStreamCreate(&s->copy_stream), "cudaStreamCreate");
		check(cudaEventCreate(&s->copied), "cudaEventCreate");
	}
	if (s->compute == TWO_STREAMS && !s->q.pinned)
		check(cudaMallocHost((void **)&s->q.pinned, BATCH_BYTES), "cudaMallocHost");
	if (s->compute == GRAPH) {
		cudaGraph_t g;
		dim3 grid = { 64, 1, 1 }, block = { 128, 1, 1 };
		void *args[] = { &s->dev };
		check(cudaStreamBeginCapture(s->compute_stream, cudaStreamCaptureModeGlobal),
		      "cudaStreamBeginCapture");
		for (int r = 0; r < ROUNDS; r++)
			check(cudaLaunchKernel((const void *)op_kernel, grid, block, args, 0,
					       s->compute_stream), "capture: cudaLaunchKernel");
		check(cudaStreamEndCapture(s->compute_stream, &g), "cudaStreamEndCapture");
		check(cudaGraphInstantiate(&s->graph, g, 0), "cudaGraphInstantiate");
	}
	check(cudaDeviceSynchronize(), "setup: cudaDeviceSynchronize");
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

static int usage(void)
{
	fprintf(stderr, "usage: train_shapes [--steps N] [--kernel-us U] [--dir DIR] [--slow] "
		"[--compute plain|per-op-sync|two-streams|graph] "
		"[--input none|loader-proc|pin-thread] [--checkpoint] [--ckpt-mib M]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct shapes s = { .steps = 20, .dir = ".", .pipe_rd = -1, .batch_us = BATCH_FAST_US };
	int kernel_us = 800, ckpt_mib = CKPT_MIB;
	static const char *const computes[] = { "plain", "per-op-sync", "two-streams", "graph" };
	static const char *const inputs[] = { "none", "loader-proc", "pin-thread" };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int found = 0;
		if (!strcmp(a, "--steps") && v && !parse_int(v, 1, &s.steps)) {
			i++;
		} else if (!strcmp(a, "--kernel-us") && v && !parse_int(v, 1, &kernel_us)) {
			i++;
		} else if (!strcmp(a, "--dir") && v) {
			s.dir = v;
			i++;
		} else if (!strcmp(a, "--ckpt-mib") && v && !parse_int(v, 1, &ckpt_mib)) {
			i++;
		} else if (!strcmp(a, "--slow")) {
			s.batch_us = BATCH_SLOW_US;
		} else if (!strcmp(a, "--checkpoint")) {
			s.checkpoint = 1;
		} else if (!strcmp(a, "--compute") && v) {
			for (int k = 0; k < 4; k++)
				if (!strcmp(v, computes[k]))
					s.compute = (enum compute)k, found = 1;
			if (!found)
				return usage();
			i++;
		} else if (!strcmp(a, "--input") && v) {
			for (int k = 0; k < 3; k++)
				if (!strcmp(v, inputs[k]))
					s.input = (enum input)k, found = 1;
			if (!found)
				return usage();
			i++;
		} else {
			return usage();
		}
	}
	s.ckpt_bytes = (size_t)ckpt_mib * MiB;
	if (prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL))
		fprintf(stderr, "train_shapes: PR_SET_TIMERSLACK: %s\n", strerror(errno));
	char us[32];
	snprintf(us, sizeof(us), "%d", kernel_us);
	setenv("FLIGHTREC_FAKE_KERNEL_US", us, 1); /* read at the first CUDA call */
	signal(SIGPIPE, SIG_IGN);
	setup_state(&s);
	start_input(&s); /* the worker forks before the CUDA runtime starts */
	setup(&s);
	for (int step = 0; step < s.steps && !g_failed; step++)
		train_step(&s, step);
	stop_input(&s);
	check(cudaFree(s.dev), "cudaFree");
	printf("truth steps=%d host_sync_ms=%.3f checkpoint_ms=%.3f dataloader_ms=%.3f "
	       "loader_pid=%d loader_tid=%d\n", s.steps, ms(s.host_sync_ns), ms(s.checkpoint_ns),
	       ms(s.dataloader_ns), (int)s.loader_pid, (int)s.q.tid);
	return g_failed;
}
