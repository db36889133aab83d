/* A steady rate of probed CUDA calls for as long as asked: the workload of
 * the drain's sustained-rate bench (bench_drain.py).  cudaMallocAsync +
 * cudaFreeAsync pairs on the legacy stream of the stand-in runtime, linked
 * at build time (attached before main runs); the async pair makes no
 * system call, so the rate is the job's own and not the kernel's timer
 * cost (cuda_storm's cudaFree waits for the device in clock_nanosleep).
 * Paced by the millisecond (below).  Prints the calls made and the rate
 * held.
 *
 * usage: cuda_paced SECONDS CALLS_PER_S   (0: as fast as it can) */
#ifdef CUDART_STANDIN_REAL_HEADER
#include <cuda_runtime_api.h>
#else
#include "cuda_runtime_api_min.h"
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int pair(long *calls)
{
	void *p = NULL;
	cudaError_t e = cudaMallocAsync(&p, 4096, 0);
	++*calls;
	if (e != cudaSuccess) {
		fprintf(stderr, "cuda_paced: cudaMallocAsync: %d\n", (int)e);
		return -1;
	}
	cudaFreeAsync(p, 0);
	++*calls;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: cuda_paced SECONDS CALLS_PER_S\n");
		return 2;
	}
	double seconds = atof(argv[1]);
	double rate = atof(argv[2]);
	long calls = 0;
	uint64_t start = now_ns(), end = start + (uint64_t)(seconds * 1e9);
	if (rate <= 0) {
		while (now_ns() < end)
			for (int i = 0; i < 100; i++)
				if (pair(&calls))
					return 1;
	} else {
		/* every millisecond, the calls due by now (late ones made up: the
		 * rate is held on average, in bursts of a few ms when the job was
		 * kept off its CPU), then a sleep to the next millisecond */
		for (uint64_t t = start; t < end; t = now_ns()) {
			long due = (long)((double)(t - start) * rate / 1e9);
			while (calls < due)
				if (pair(&calls))
					return 1;
			uint64_t next = t + 1000000 - (t - start) % 1000000;
			struct timespec ts = { (time_t)(next / 1000000000ull),
					       (long)(next % 1000000000ull) };
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		}
	}
	double took = (double)(now_ns() - start) / 1e9;
	printf("cuda_paced: %ld calls in %.3f s (%.0f calls/s)\n", calls, took, calls / took);
	return 0;
}
