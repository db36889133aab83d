/* cupti_harness: a CUDA program on the stand-in runtime that catches what
 * libflightrec_cupti.so hands out.  It defines flightrec_cupti_launch and
 * flightrec_cupti_kernels itself, exported, so the injection library's
 * calls to them bind here (ELF interposition) instead of to its own.
 *
 * Usage: cupti_harness kernels|many|none
 *   kernels: every launch must reach flightrec_cupti_launch on its own
 *     thread, and every kernel come back with that correlation id, the
 *     fake GPU's duration (FLIGHTREC_FAKE_KERNEL_US), its name, grid,
 *     block, shared memory and stream.
 *   many: MANY_LAUNCHES launches, more than one activity buffer holds:
 *     every kernel back, in batches of at most FR_GPU_KERNEL_BATCH, none
 *     dropped, each with its launch's correlation id and exact duration.
 *   none: nothing may reach either function; the CUDA calls still work.
 * The check runs at exit, after the library's own exit-time flush. */
#include "flightrec_cupti.h"

#include <cuda_runtime_api.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define N_LAUNCHES 6
#define MANY_LAUNCHES 3000
#define MAX_SEEN 4096

struct launch_seen {
	uint64_t correlation_id;
	pid_t tid;
};

struct expected {
	const char *name;
	unsigned grid, block;
	size_t shared;
	pid_t tid;
	int on_side_stream;
	uint64_t before_ns; /* CLOCK_MONOTONIC just before the launch */
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct launch_seen g_launches[MAX_SEEN];
static unsigned g_n_launches;
static struct fr_gpu_kernel g_kernels[MAX_SEEN];
static unsigned g_n_kernels, g_kernel_calls, g_max_batch;
static uint64_t g_dropped;
static struct expected g_expected[N_LAUNCHES];
static int g_mode_kernels, g_mode_many;
static uint64_t g_kernel_ns;
static cudaStream_t g_side;

void flightrec_cupti_launch(uint64_t correlation_id)
{
	pthread_mutex_lock(&g_lock);
	if (g_n_launches < MAX_SEEN)
		g_launches[g_n_launches] = (struct launch_seen){ correlation_id, gettid() };
	g_n_launches++;
	pthread_mutex_unlock(&g_lock);
}

void flightrec_cupti_kernels(const struct fr_gpu_kernel *k, uint32_t n, uint64_t dropped)
{
	pthread_mutex_lock(&g_lock);
	g_kernel_calls++;
	if (n > g_max_batch)
		g_max_batch = n;
	g_dropped += dropped;
	for (uint32_t i = 0; i < n; i++, g_n_kernels++)
		if (g_n_kernels < MAX_SEEN)
			g_kernels[g_n_kernels] = k[i];
	pthread_mutex_unlock(&g_lock);
}

__attribute__((noinline)) void forward_kernel(void) { puts("forward_kernel"); }
__attribute__((noinline)) void backward_kernel(void) { puts("backward_kernel"); }
__attribute__((noinline)) void update_kernel(void) { puts("update_kernel"); }

static uint64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int g_failures;
/* the first 10 failures are shown, all are counted */
#define CHECK(cond, ...) do { if (!(cond) && ++g_failures <= 10) { fprintf(stderr, "FAIL %s:%d: ", \
	__FILE__, __LINE__); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

static void launch(unsigned i, void (*fn)(void), const char *name, unsigned grid, unsigned block,
		   size_t shared, int side)
{
	g_expected[i] = (struct expected){ name, grid, block, shared, gettid(), side, monotonic_ns() };
	dim3 g = { grid, 1, 1 }, b = { block, 2, 1 };
	cudaError_t err = cudaLaunchKernel((const void *)fn, g, b, NULL, shared, side ? g_side : 0);
	CHECK(err == cudaSuccess, "launch %u: error %d", i, (int)err);
}

static void *worker(void *arg)
{
	(void)arg;
	launch(5, update_kernel, "update_kernel", 7, 32, 0, 1);
	return NULL;
}

/* Launches are serial (the worker is joined), so the i-th probe call is
 * the i-th launch. */
static const struct expected *expected_for(uint64_t correlation_id)
{
	for (unsigned i = 0; i < g_n_launches && i < N_LAUNCHES; i++)
		if (g_launches[i].correlation_id == correlation_id)
			return &g_expected[i];
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void check_many(void)
{
	CHECK(g_n_launches == MANY_LAUNCHES, "launch probe: %u calls", g_n_launches);
	CHECK(g_n_kernels == MANY_LAUNCHES, "kernel probe: %u records", g_n_kernels);
	CHECK(g_dropped == 0, "%llu dropped", (unsigned long long)g_dropped);
	CHECK(g_max_batch == FR_GPU_KERNEL_BATCH, "largest batch %u, want %d", g_max_batch,
	      FR_GPU_KERNEL_BATCH);
	static uint64_t ids[MAX_SEEN];
	unsigned n = g_n_launches < MAX_SEEN ? g_n_launches : MAX_SEEN;
	for (unsigned i = 0; i < n; i++)
		ids[i] = g_launches[i].correlation_id;
	qsort(ids, n, sizeof(ids[0]), cmp_u64);
	for (unsigned i = 0; i < g_n_kernels && i < MAX_SEEN; i++) {
		const struct fr_gpu_kernel *k = &g_kernels[i];
		CHECK(bsearch(&k->correlation_id, ids, n, sizeof(ids[0]), cmp_u64),
		      "kernel %u: correlation id %llu matches no launch", i,
		      (unsigned long long)k->correlation_id);
		CHECK(k->end_ns - k->start_ns == g_kernel_ns, "kernel %u: %llu ns", i,
		      (unsigned long long)(k->end_ns - k->start_ns));
		/* one stream: each kernel starts when the one before it ends, or later */
		CHECK(i == 0 || k->start_ns >= g_kernels[i - 1].end_ns, "kernel %u overlaps %u", i,
		      i - 1);
	}
	if (!g_failures)
		printf("cupti_harness: %u launches, %u kernels in %u batches\n", g_n_launches,
		       g_n_kernels, g_kernel_calls);
	fflush(stdout);
	_exit(g_failures ? 1 : 0);
}

static void check_at_exit(void)
{
	uint64_t end_ns = monotonic_ns();
	if (g_mode_many)
		check_many();
	if (!g_mode_kernels) {
		CHECK(g_n_launches == 0, "%u launches reached the probe", g_n_launches);
		CHECK(g_kernel_calls == 0, "%u kernel batches reached the probe", g_kernel_calls);
		_exit(g_failures ? 1 : 0);
	}
	CHECK(g_n_launches == N_LAUNCHES, "launch probe: %u calls, want %d", g_n_launches, N_LAUNCHES);
	CHECK(g_n_kernels == N_LAUNCHES, "kernel probe: %u records, want %d", g_n_kernels, N_LAUNCHES);
	CHECK(g_dropped == 0, "%llu dropped", (unsigned long long)g_dropped);
	for (unsigned i = 0; i < g_n_launches && i < N_LAUNCHES; i++) {
		CHECK(g_launches[i].tid == g_expected[i].tid, "launch %u on tid %d, launched on %d", i,
		      (int)g_launches[i].tid, (int)g_expected[i].tid);
		for (unsigned j = 0; j < i; j++)
			CHECK(g_launches[i].correlation_id != g_launches[j].correlation_id,
			      "launches %u and %u share correlation id %llu", j, i,
			      (unsigned long long)g_launches[i].correlation_id);
	}
	uint32_t side_stream = 0, legacy_stream = 0;
	for (unsigned i = 0; i < g_n_kernels && i < MAX_SEEN; i++) {
		const struct fr_gpu_kernel *k = &g_kernels[i];
		const struct expected *e = expected_for(k->correlation_id);
		CHECK(e, "kernel %s: correlation id %llu matches no launch", k->name,
		      (unsigned long long)k->correlation_id);
		if (!e)
			continue;
		CHECK(!strcmp(k->name, e->name), "kernel %llu: name %s, want %s",
		      (unsigned long long)k->correlation_id, k->name, e->name);
		CHECK(k->end_ns - k->start_ns == g_kernel_ns, "%s: %llu ns, want %llu", e->name,
		      (unsigned long long)(k->end_ns - k->start_ns), (unsigned long long)g_kernel_ns);
		/* CLOCK_MONOTONIC (the library's timestamp callback), not realtime */
		CHECK(k->start_ns >= e->before_ns && k->end_ns <= end_ns,
		      "%s: [%llu, %llu] outside the monotonic [%llu, %llu]", e->name,
		      (unsigned long long)k->start_ns, (unsigned long long)k->end_ns,
		      (unsigned long long)e->before_ns, (unsigned long long)end_ns);
		CHECK(k->grid[0] == e->grid && k->grid[1] == 1 && k->grid[2] == 1, "%s: grid %u,%u,%u",
		      e->name, k->grid[0], k->grid[1], k->grid[2]);
		CHECK(k->block[0] == e->block && k->block[1] == 2 && k->block[2] == 1,
		      "%s: block %u,%u,%u", e->name, k->block[0], k->block[1], k->block[2]);
		CHECK(k->shared_bytes == e->shared, "%s: shared %u, want %zu", e->name, k->shared_bytes,
		      e->shared);
		CHECK(k->device == 0, "%s: device %u", e->name, k->device);
		uint32_t *stream = e->on_side_stream ? &side_stream : &legacy_stream;
		if (!*stream)
			*stream = k->stream;
		CHECK(k->stream == *stream, "%s: stream %u, its stream's others %u", e->name, k->stream,
		      *stream);
	}
	CHECK(side_stream && legacy_stream && side_stream != legacy_stream,
	      "streams: side %u, legacy %u", side_stream, legacy_stream);
	if (!g_failures)
		printf("cupti_harness: %u launches, %u kernels, %llu ns each\n", g_n_launches,
		       g_n_kernels, (unsigned long long)g_kernel_ns);
	fflush(stdout);
	_exit(g_failures ? 1 : 0);
}

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "kernels") && strcmp(argv[1], "many") &&
			  strcmp(argv[1], "none"))) {
		fprintf(stderr, "usage: cupti_harness kernels|many|none\n");
		return 2;
	}
	g_mode_kernels = !strcmp(argv[1], "kernels");
	g_mode_many = !strcmp(argv[1], "many");
	const char *us = getenv("FLIGHTREC_FAKE_KERNEL_US");
	g_kernel_ns = (us ? strtoull(us, NULL, 10) : 50) * 1000;
	atexit(check_at_exit); /* first registered: runs after the library's flush */
	if (g_mode_many) {
		dim3 g = { 1, 1, 1 }, b = { 32, 1, 1 };
		for (unsigned i = 0; i < MANY_LAUNCHES; i++) {
			cudaError_t err = cudaLaunchKernel((const void *)forward_kernel, g, b, NULL, 0, 0);
			CHECK(err == cudaSuccess, "launch %u: error %d", i, (int)err);
		}
		cudaError_t err = cudaDeviceSynchronize();
		CHECK(err == cudaSuccess, "cudaDeviceSynchronize: %d", (int)err);
		return 0;
	}
	cudaError_t err = cudaStreamCreate(&g_side);
	CHECK(err == cudaSuccess, "cudaStreamCreate: %d", (int)err);
	launch(0, forward_kernel, "forward_kernel", 128, 256, 0, 0);
	launch(1, forward_kernel, "forward_kernel", 128, 256, 0, 0);
	launch(2, backward_kernel, "backward_kernel", 64, 128, 4096, 0);
	launch(3, forward_kernel, "forward_kernel", 128, 256, 0, 1);
	launch(4, backward_kernel, "backward_kernel", 64, 128, 4096, 1);
	pthread_t t;
	CHECK(!pthread_create(&t, NULL, worker, NULL), "pthread_create");
	pthread_join(t, NULL);
	err = cudaDeviceSynchronize();
	CHECK(err == cudaSuccess, "cudaDeviceSynchronize: %d", (int)err);
	err = cudaStreamDestroy(g_side);
	CHECK(err == cudaSuccess, "cudaStreamDestroy: %d", (int)err);
	return 0;
}
