/* A CPU-bound workload with a known split: every round runs
 * compute_heavy (3 units of work) then compute_light (1 unit), so a CPU
 * profile should show 75% / 25% of the samples below run_rounds.  Used by
 * the README demo and the integration tests.
 *
 * usage: cpu_split [SECONDS]        run for SECONDS (default 3)
 *        cpu_split --rounds N     run exactly N rounds (fixed work, for
 *                                 benchmarks) and print the elapsed time */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile uint64_t sink;

/* An opaque call keeps spin_units a non-leaf function: GCC 12 drops the
 * frame pointer of leaf functions even with -mno-omit-leaf-frame-pointer,
 * and a frame-pointer walk from such a leaf skips its caller. */
__attribute__((noinline)) void unit_done(uint64_t x)
{
	__asm__ volatile("" : : "r"(x) : "memory");
}

__attribute__((noinline)) static uint64_t spin_units(unsigned units)
{
	uint64_t x = sink | 1;
	for (unsigned u = 0; u < units; u++) {
		for (int i = 0; i < 200000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		unit_done(x);
	}
	return x;
}

__attribute__((noinline)) uint64_t compute_heavy(void)
{
	return spin_units(3);
}

__attribute__((noinline)) uint64_t compute_light(void)
{
	return spin_units(1);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) uint64_t run_rounds(double seconds)
{
	double end = now_s() + seconds;
	uint64_t rounds = 0;
	while (now_s() < end) {
		sink += compute_heavy();
		sink += compute_light();
		rounds++;
	}
	return rounds;
}

__attribute__((noinline)) void run_fixed_rounds(uint64_t rounds)
{
	for (uint64_t r = 0; r < rounds; r++) {
		sink += compute_heavy();
		sink += compute_light();
	}
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "--rounds")) {
		double t0 = now_s();
		run_fixed_rounds(strtoull(argv[2], NULL, 10));
		printf("cpu_split: elapsed %.6f s\n", now_s() - t0);
		return 0;
	}
	double seconds = argc > 1 ? atof(argv[1]) : 3.0;
	uint64_t rounds = run_rounds(seconds > 0 ? seconds : 3.0);
	struct timespec cpu;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
	/* the CPU time it got: on a busy machine that is less than SECONDS */
	printf("cpu_split: %llu rounds, cpu %.3f s\n", (unsigned long long)rounds,
	       cpu.tv_sec + cpu.tv_nsec / 1e9);
	return 0;
}
