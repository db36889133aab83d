/* A CPU-bound workload with a known split: every round runs
 * compute_heavy (3 units of work) then compute_light (1 unit), so a CPU
 * profile should show 75% / 25% of the samples below run_rounds (a unit's
 * length varies from round to round: round_steps).  Used by
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

__attribute__((noinline)) static uint64_t spin_units(unsigned units, unsigned steps)
{
	uint64_t x = sink | 1;
	for (unsigned u = 0; u < units; u++) {
		for (unsigned i = 0; i < steps; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		unit_done(x);
	}
	return x;
}

__attribute__((noinline)) uint64_t compute_heavy(unsigned steps)
{
	return spin_units(3, steps);
}

__attribute__((noinline)) uint64_t compute_light(unsigned steps)
{
	return spin_units(1, steps);
}

/* A round's unit, 100,000 to 300,000 steps (200,000 on average), drawn
 * from a fixed sequence: rounds of one length (about 1 ms) could keep step
 * with a periodic sampler (10.1 ms at 99 Hz is about ten rounds) and put
 * its samples at one phase of the round, all in one function; varying
 * lengths keep the 3:1 split within every round and the total work of N
 * rounds fixed. */
static unsigned round_steps(void)
{
	static uint64_t state = 0x9e3779b97f4a7c15ull;
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return 100000u + (unsigned)(state % 200001u);
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
		unsigned steps = round_steps();
		sink += compute_heavy(steps);
		sink += compute_light(steps);
		rounds++;
	}
	return rounds;
}

__attribute__((noinline)) void run_fixed_rounds(uint64_t rounds)
{
	for (uint64_t r = 0; r < rounds; r++) {
		unsigned steps = round_steps();
		sink += compute_heavy(steps);
		sink += compute_light(steps);
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
