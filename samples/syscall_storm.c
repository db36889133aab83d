/* Makes system calls as fast as it can from THREADS threads for SECONDS:
 * a load generator for the recorder's drain benchmark.  Prints the number
 * of calls made.
 *
 * usage: syscall_storm SECONDS [THREADS] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double seconds;
static atomic_ullong calls;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *storm(void *arg)
{
	(void)arg;
	double end = now_s() + seconds;
	unsigned long long n = 0;
	while (now_s() < end) {
		for (int i = 0; i < 1000; i++)
			syscall(SYS_getppid);
		n += 1000;
	}
	atomic_fetch_add(&calls, n);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: syscall_storm SECONDS [THREADS]\n");
		return 2;
	}
	seconds = atof(argv[1]);
	int threads = argc > 2 ? atoi(argv[2]) : 1;
	pthread_t t[64];
	if (threads < 1 || threads > 64)
		threads = 1;
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, storm, NULL);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("syscall_storm: %llu calls\n", (unsigned long long)atomic_load(&calls));
	return 0;
}
