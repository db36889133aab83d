/* cuda_hold: allocates GPU memory, then waits to be recorded before freeing
 * it, for tests that attach flightrec with --pid to a running process.
 *
 * What it is for: a recording that starts AFTER the allocations, so the
 * frees it sees are of addresses it never saw allocated; the analyzer must
 * put them in its "allocated before recording" bucket rather than report
 * them as errors, while the later allocation pairs normally.
 * What it is NOT for: a benchmark or a model of a real job.
 *
 * Usage: cuda_hold [TIMEOUT_S]   (default 30)
 *   allocate_before  cudaMalloc 8, 16, 32 and 64 MiB (125,829,120 bytes in
 *                    4 allocations) and cudaMallocHost 4 MiB (4,194,304)
 *   prints           "cuda_hold: ready pid=PID ptrs=P1,P2,P3,P4 pinned=P5"
 *                    then waits for SIGUSR1 (or TIMEOUT_S seconds, printing
 *                    "cuda_hold: timeout"; it goes on either way)
 *   free_after       cudaFree of the 4 device pointers, cudaFreeHost of the
 *                    pinned one: 5 frees of addresses allocated before
 *   alloc_after      cudaMalloc 2 MiB (2,097,152) and cudaFree of it: one
 *                    pair seen whole
 *   prints           "cuda_hold: done", exits 0 (1 if a CUDA call failed)
 */
#ifdef CUDART_STANDIN_REAL_HEADER
#include <cuda_runtime_api.h>
#else
#include "cuda_runtime_api_min.h"
#endif

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noipa))
#endif

#define MiB (1024ull * 1024ull)
#define N_BEFORE 4

static const size_t before_bytes[N_BEFORE] = { 8 * MiB, 16 * MiB, 32 * MiB, 64 * MiB };
static void *before_ptrs[N_BEFORE];
static void *pinned_ptr;
static int g_failed;

static void check(cudaError_t err, const char *what)
{
	if (err != cudaSuccess) {
		fprintf(stderr, "cuda_hold: %s: %s (%d)\n", what, cudaGetErrorString(err), (int)err);
		g_failed = 1;
	}
}

static NOINLINE void allocate_before(void)
{
	for (int i = 0; i < N_BEFORE; i++)
		check(cudaMalloc(&before_ptrs[i], before_bytes[i]), "allocate_before: cudaMalloc");
	check(cudaMallocHost(&pinned_ptr, 4 * MiB), "allocate_before: cudaMallocHost");
}

static NOINLINE void free_after(void)
{
	for (int i = 0; i < N_BEFORE; i++)
		check(cudaFree(before_ptrs[i]), "free_after: cudaFree");
	check(cudaFreeHost(pinned_ptr), "free_after: cudaFreeHost");
}

static NOINLINE void alloc_after(void)
{
	void *p = NULL;
	check(cudaMalloc(&p, 2 * MiB), "alloc_after: cudaMalloc");
	check(cudaFree(p), "alloc_after: cudaFree");
}

int main(int argc, char **argv)
{
	long timeout_s = 30;
	if (argc > 2 || (argc == 2 && (timeout_s = strtol(argv[1], NULL, 10)) <= 0)) {
		fprintf(stderr, "usage: cuda_hold [TIMEOUT_S>0]\n");
		return 2;
	}
	/* Blocked before anyone can know our pid, so no signal is lost. */
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);

	allocate_before();
	printf("cuda_hold: ready pid=%d ptrs=%p,%p,%p,%p pinned=%p\n", (int)getpid(), before_ptrs[0],
	       before_ptrs[1], before_ptrs[2], before_ptrs[3], pinned_ptr);
	fflush(stdout);

	struct timespec wait = { (time_t)timeout_s, 0 };
	if (sigtimedwait(&usr1, NULL, &wait) == SIGUSR1)
		printf("cuda_hold: got SIGUSR1\n");
	else
		printf("cuda_hold: timeout\n");
	free_after();
	alloc_after();
	printf("cuda_hold: done\n");
	return g_failed;
}
