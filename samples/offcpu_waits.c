/* Blocked threads with known wakers, for the sched family's tests.
 *
 * Two shapes, each --rounds times:
 *   - a worker process feeds the main thread one byte at a time through a
 *     pipe: the main thread blocks in read() inside wait_for_batch(), and
 *     the worker's write() wakes it;
 *   - a consumer thread blocks in futex() inside wait_for_signal(), and a
 *     producer thread's FUTEX_WAKE wakes it.
 * The waker waits until the waiting thread is asleep in its call (state S
 * and the call's number in /proc/.../syscall), then sleeps --hold-ms more
 * before waking it, so every wait is a block of at least that long, on a
 * loaded machine too.  Ends with one line of truth:
 *   offcpu_truth pid=P worker_pid=W reads=N consumer_tid=C producer_tid=T futex_waits=N hold_ms=H
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int rounds = 20;
static int hold_ms = 3;

static void sleep_ms(int ms)
{
	struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&t, &t) && errno == EINTR)
		;
}

/* True when thread tid of process pid is asleep in system call nr. */
static int asleep_in(pid_t pid, pid_t tid, long nr)
{
	char path[96], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *state = strrchr(buf, ')');
	if (!state || state[1] != ' ' || state[2] != 'S')
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	long got = -1;
	int ok = fscanf(f, "%ld", &got) == 1;
	fclose(f);
	return ok && got == nr;
}

static void wait_until_asleep(pid_t pid, pid_t tid, long nr)
{
	while (!asleep_in(pid, tid, nr))
		sleep_ms(0), sched_yield();
	sleep_ms(hold_ms);
}

__attribute__((noinline)) static void wait_for_batch(int fd)
{
	char c;
	if (read(fd, &c, 1) != 1) {
		perror("offcpu_waits: read");
		exit(1);
	}
	__asm__ volatile("" ::: "memory");
}

static void worker(pid_t parent, int ready_fd, int data_fd)
{
	for (int i = 0; i < rounds; i++) {
		char c;
		if (read(ready_fd, &c, 1) != 1)
			_exit(1);
		wait_until_asleep(parent, parent, SYS_read);
		if (write(data_fd, "b", 1) != 1)
			_exit(1);
	}
	_exit(0);
}

static _Atomic int futex_word;
static _Atomic pid_t consumer_tid;
static _Atomic int consumed;

static long futex(_Atomic int *uaddr, int op, int val)
{
	return syscall(SYS_futex, uaddr, op, val, NULL, NULL, 0);
}

__attribute__((noinline)) static void wait_for_signal(int seen)
{
	while (atomic_load(&futex_word) == seen)
		futex(&futex_word, FUTEX_WAIT_PRIVATE, seen);
	__asm__ volatile("" ::: "memory");
}

static void *consumer(void *arg)
{
	(void)arg;
	atomic_store(&consumer_tid, (pid_t)syscall(SYS_gettid));
	for (int i = 0; i < rounds; i++) {
		wait_for_signal(i);
		atomic_store(&consumed, i + 1);
	}
	return NULL;
}

static _Atomic pid_t producer_tid;

static void *producer(void *arg)
{
	(void)arg;
	atomic_store(&producer_tid, (pid_t)syscall(SYS_gettid));
	while (!atomic_load(&consumer_tid))
		sched_yield();
	for (int i = 0; i < rounds; i++) {
		/* the consumer has taken round i - 1 and waits in round i */
		while (atomic_load(&consumed) != i)
			sched_yield();
		wait_until_asleep(getpid(), atomic_load(&consumer_tid), SYS_futex);
		atomic_store(&futex_word, i + 1);
		futex(&futex_word, FUTEX_WAKE_PRIVATE, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--hold-ms") && i + 1 < argc)
			hold_ms = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: offcpu_waits [--rounds N] [--hold-ms MS]\n");
			return 2;
		}
	}
	int ready[2], data[2];
	if (pipe(ready) || pipe(data)) {
		perror("offcpu_waits: pipe");
		return 1;
	}
	pid_t me = getpid(), w = fork();
	if (w < 0) {
		perror("offcpu_waits: fork");
		return 1;
	}
	if (w == 0)
		worker(me, ready[0], data[1]);
	for (int i = 0; i < rounds; i++) {
		if (write(ready[1], "r", 1) != 1) {
			perror("offcpu_waits: write");
			return 1;
		}
		wait_for_batch(data[0]);
	}
	int status;
	waitpid(w, &status, 0);

	pthread_t c, p;
	if (pthread_create(&c, NULL, consumer, NULL) || pthread_create(&p, NULL, producer, NULL)) {
		fprintf(stderr, "offcpu_waits: pthread_create failed\n");
		return 1;
	}
	pthread_join(p, NULL);
	pthread_join(c, NULL);
	printf("offcpu_truth pid=%d worker_pid=%d reads=%d consumer_tid=%d producer_tid=%d "
	       "futex_waits=%d hold_ms=%d\n", (int)me, (int)w, rounds, (int)atomic_load(&consumer_tid),
	       (int)atomic_load(&producer_tid), rounds, hold_ms);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
