/* Makes the kernel hand one pid out twice, so a test can see what a probe
 * keeps of a thread that died inside a system call.  Child A enters a
 * call it never leaves: `exit` (exit_group) or `killed` (a read on a pipe
 * nobody writes, then SIGKILL once /proc shows it blocked there).  Once A
 * is reaped, clone3 with set_tid (root) makes child B with A's pid; B
 * returns from clone3 (a system-call exit with no entry of its own), sleeps
 * in nanosleep for SLEEP_MS, and exits.  Prints "reused pid P" and B's
 * start, so a test knows which events are B's.
 *
 * usage: pid_reuse exit|killed [SLEEP_MS] */
#include <errno.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Whether pid is blocked in read (syscall 0 on x86-64): /proc/PID/syscall
 * starts with the number of the call it sleeps in. */
static int in_read(pid_t pid)
{
	char path[64], buf[64] = { 0 };
	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	return n > 2 && buf[0] == '0' && buf[1] == ' ';
}

int main(int argc, char **argv)
{
	if (argc < 2 || (strcmp(argv[1], "exit") && strcmp(argv[1], "killed"))) {
		fprintf(stderr, "usage: pid_reuse exit|killed [SLEEP_MS]\n");
		return 2;
	}
	int killed = !strcmp(argv[1], "killed");
	long sleep_ms = argc > 2 ? atol(argv[2]) : 20;
	int fds[2];
	if (pipe(fds))
		return 1;
	pid_t a = fork();
	if (a < 0)
		return 1;
	if (a == 0) {
		if (killed) {
			char c;
			if (read(fds[0], &c, 1) < 0)
				_exit(3);
		}
		_exit(0); /* exit_group: never returns */
	}
	if (killed) {
		/* an outcome, not a time: A is inside read; a generous bound only
		 * turns a hang into a message */
		uint64_t give_up = mono_ns() + 60000000000ull;
		while (!in_read(a)) {
			if (mono_ns() > give_up) {
				fprintf(stderr, "pid_reuse: child %d never blocked in read\n", (int)a);
				return 1;
			}
			struct timespec nap = { 0, 1000000 };
			nanosleep(&nap, NULL);
		}
		kill(a, SIGKILL);
	}
	int status;
	if (waitpid(a, &status, 0) != a)
		return 1;
	pid_t want = a;
	struct clone_args ca;
	memset(&ca, 0, sizeof(ca));
	ca.exit_signal = SIGCHLD;
	ca.set_tid = (uint64_t)(uintptr_t)&want;
	ca.set_tid_size = 1;
	uint64_t before = mono_ns();
	long b = syscall(SYS_clone3, &ca, sizeof(ca));
	if (b < 0) {
		fprintf(stderr, "pid_reuse: clone3 with set_tid %d: %s\n", (int)want, strerror(errno));
		return 1;
	}
	if (b == 0) {
		struct timespec t = { sleep_ms / 1000, (sleep_ms % 1000) * 1000000 };
		nanosleep(&t, NULL);
		_exit(0);
	}
	if (waitpid((pid_t)b, &status, 0) != (pid_t)b)
		return 1;
	printf("reused pid %ld (A %s), B started after %llu ns\n", b, killed ? "killed in read" :
	       "exited", (unsigned long long)before);
	return 0;
}
