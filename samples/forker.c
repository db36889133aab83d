/* A parent that forks a child: the child burns CPU in child_work, the
 * parent in parent_work, for SECONDS each (default 2).  Shows that a
 * process started by a traced one is traced from its first instruction.
 *
 * usage: forker [SECONDS] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void burn(double seconds)
{
	double end = now_s() + seconds; /* now_s() keeps burn a non-leaf */
	uint64_t x = 1;
	while (now_s() < end)
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ull + 1;
	sink = x;
}

__attribute__((noinline)) void child_work(double seconds)
{
	burn(seconds);
}

__attribute__((noinline)) void parent_work(double seconds)
{
	burn(seconds);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		struct timespec cpu;
		child_work(seconds);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
		printf("forker: child cpu %.3f s\n", cpu.tv_sec + cpu.tv_nsec / 1e9);
		fflush(stdout);
		_exit(0);
	}
	parent_work(seconds);
	int status;
	waitpid(pid, &status, 0);
	printf("forker: child %d exited with %d\n", (int)pid, WEXITSTATUS(status));
	return 0;
}
