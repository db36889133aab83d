/* A call chain main -> level_one -> level_two -> level_three -> burn_cpu,
 * built with -O2 -fomit-frame-pointer: a frame-pointer walk cannot get
 * through it, a DWARF unwind can.  Used to show the difference between
 * --stack fp and --stack dwarf.
 *
 * usage: deep_chain [SECONDS]   (default 2): SECONDS of its own CPU time,
 * so a profile holds as many samples on a loaded machine as on an idle one
 * (the run then takes longer). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Every level does a little work after its call, so none is a tail call
 * and each keeps a frame of its own on the stack. */
__attribute__((noinline)) uint64_t burn_cpu(double seconds)
{
	double end = now_s() + seconds;
	uint64_t x = 1;
	while (now_s() < end)
		for (int i = 0; i < 200000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

__attribute__((noinline)) uint64_t level_three(double seconds)
{
	uint64_t r = burn_cpu(seconds);
	sink += r;
	return r ^ 3;
}

__attribute__((noinline)) uint64_t level_two(double seconds)
{
	uint64_t r = level_three(seconds);
	sink += r;
	return r ^ 2;
}

__attribute__((noinline)) uint64_t level_one(double seconds)
{
	uint64_t r = level_two(seconds);
	sink += r;
	return r ^ 1;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	printf("deep_chain: %llu\n", (unsigned long long)level_one(seconds));
	return 0;
}
