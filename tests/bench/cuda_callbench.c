/* Calls cudaMalloc + cudaFree of the library given as argv[1] N times and
 * prints the mean nanoseconds per pair: the workload of the per-call cost
 * benchmark (bench_cuda.py).  Loads the library with dlopen so it runs
 * against the stand-in or NVIDIA's copy alike.
 *
 * usage: cuda_callbench LIB [PAIRS] */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int (*malloc_fn)(void **, size_t);
typedef int (*free_fn)(void *);

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: cuda_callbench LIB [PAIRS]\n");
		return 2;
	}
	long pairs = argc > 2 ? atol(argv[2]) : 200000;
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "cuda_callbench: %s\n", dlerror());
		return 1;
	}
	malloc_fn m = (malloc_fn)dlsym(h, "cudaMalloc");
	free_fn f = (free_fn)dlsym(h, "cudaFree");
	if (!m || !f) {
		fprintf(stderr, "cuda_callbench: no cudaMalloc/cudaFree in %s\n", argv[1]);
		return 1;
	}
	struct timespec a, b;
	void *p;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < pairs; i++) {
		if (m(&p, 4096) == 0)
			f(p);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	double ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (double)pairs;
	printf("cuda_callbench: %.1f ns per pair\n", ns);
	return 0;
}
