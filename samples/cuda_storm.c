/* cuda_storm.c: a burst of CUDA calls with an exactly known count, to check
 * that every call is either recorded or counted as lost (never neither).
 * PAIRS cudaMalloc + cudaFree pairs as fast as the stand-in allows, on the
 * main thread, linked at build time (its probes are attached before main
 * runs); prints the number of probed calls it made.
 *
 * usage: cuda_storm PAIRS */
#ifdef CUDART_STANDIN_REAL_HEADER
#include <cuda_runtime_api.h>
#else
#include "cuda_runtime_api_min.h"
#endif
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	long pairs = argc > 1 ? atol(argv[1]) : 20000;
	long calls = 0;
	for (long i = 0; i < pairs; i++) {
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
