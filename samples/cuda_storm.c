/* cuda_storm.c: a burst of CUDA calls with an exactly known count, to check
 * that every call is either recorded or counted as lost (never neither).
 * PAIRS cudaMalloc + cudaFree pairs as fast as the stand-in allows, on the
 * main thread, linked at build time (its probes are attached before main
 * runs); prints the number of probed calls it made.
 *
 * --wait-usr1: one pair first (the library is loaded and its probes in
 * use), then print "cuda_storm: waiting for SIGUSR1" and wait for it before
 * the storm: a test can stop the recorder for the whole storm.
 *
 * usage: cuda_storm PAIRS [--wait-usr1] */
#ifdef CUDART_STANDIN_REAL_HEADER
#include <cuda_runtime_api.h>
#else
#include "cuda_runtime_api_min.h"
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	long pairs = argc > 1 ? atol(argv[1]) : 20000;
	long calls = 0;
	long i = 0;
	if (argc > 2 && !strcmp(argv[2], "--wait-usr1")) {
		sigset_t set;
		int sig;
		void *p = NULL;
		if (cudaMalloc(&p, 4096) != cudaSuccess) {
			fprintf(stderr, "cuda_storm: cudaMalloc failed\n");
			return 1;
		}
		cudaFree(p);
		calls += 2;
		i++;
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		printf("cuda_storm: waiting for SIGUSR1\n");
		fflush(stdout);
		sigwait(&set, &sig);
	}
	for (; i < pairs; i++) {
		void *p = NULL;
		cudaError_t e = cudaMalloc(&p, 4096);
		calls++;
		if (e != cudaSuccess) {
			fprintf(stderr, "cuda_storm: cudaMalloc: %d\n", (int)e);
			return 1;
		}
		cudaFree(p);
		calls++;
	}
	printf("cuda_storm: %ld calls\n", calls);
	return 0;
}
