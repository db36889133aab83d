/* launch_ranks: a torchrun-like launcher for the multi-process samples.
 *
 *   launch_ranks --ranks N [--first-rank K --local-ranks M]
 *                [--master ADDR:PORT] -- WORKER ARGS...
 *
 * Starts M workers (default: all N) with fork + exec, each with RANK=K+i,
 * LOCAL_RANK=i, WORLD_SIZE=N, LOCAL_WORLD_SIZE=M, MASTER_ADDR and MASTER_PORT
 * in its environment, waits for all of them and exits non-zero if any
 * failed.  When one worker fails the others are sent SIGTERM, as torchrun's
 * agent does; SIGINT/SIGTERM to the launcher are passed on to the workers.
 * Two launchers with the same --master and disjoint rank ranges form one job
 * of two "nodes".  --master 127.0.0.1:0 (with --first-rank 0) picks a free
 * port; every launcher prints "launch_ranks: master ADDR:PORT" on stderr, so
 * a second node can be started with that port.
 *
 * Not torchrun: no elastic restarts, no rendezvous of its own, no
 * multi-host; the master address is only ever a loopback address.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4, strsignal */
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_LOCAL_RANKS 1024

static volatile pid_t worker_pids[MAX_LOCAL_RANKS]; /* read by forward_signal */
static volatile int n_workers;

static void forward_signal(int sig)
{
	for (int i = 0; i < n_workers; i++)
		if (worker_pids[i] > 0)
			kill(worker_pids[i], sig);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: launch_ranks --ranks N [--first-rank K --local-ranks M]\n"
		"                    [--master ADDR:PORT] -- WORKER [ARGS...]\n"
		"  starts ranks K..K+M-1 of an N-rank job (default: all N) with RANK,\n"
		"  LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT set;\n"
		"  --master defaults to 127.0.0.1:29500, port 0 picks a free one\n");
}

static int parse_int(const char *flag, const char *s, int lo, int hi, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "launch_ranks: %s %s: want a number in %d..%d\n", flag, s, lo, hi);
		return -1;
	}
	*out = (int)v;
	return 0;
}

/* A free port on addr, by binding port 0: the first worker binds it again
 * moments later (a small race that a test harness can live with). */
static int pick_free_port(const char *addr)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof sa;
	if (fd < 0 || inet_pton(AF_INET, addr, &sa.sin_addr) != 1 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return ntohs(sa.sin_port);
}

static void describe_status(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "status 0x%x", status);
}

int main(int argc, char **argv)
{
	int nranks = -1, first_rank = 0, local_ranks = -1, port = 29500;
	char addr[64] = "127.0.0.1";
	int i = 1;
	for (; i < argc && strcmp(argv[i], "--"); i++) {
		const char *a = argv[i];
		if (i + 1 >= argc) {
			usage();
			return 2;
		}
		const char *v = argv[++i];
		if (!strcmp(a, "--ranks")) {
			if (parse_int(a, v, 1, 1 << 20, &nranks) < 0)
				return 2;
		} else if (!strcmp(a, "--first-rank")) {
			if (parse_int(a, v, 0, 1 << 20, &first_rank) < 0)
				return 2;
		} else if (!strcmp(a, "--local-ranks")) {
			if (parse_int(a, v, 1, MAX_LOCAL_RANKS, &local_ranks) < 0)
				return 2;
		} else if (!strcmp(a, "--master")) {
			const char *colon = strrchr(v, ':');
			if (!colon || (size_t)(colon - v) >= sizeof addr || colon == v ||
			    parse_int(a, colon + 1, 0, 65535, &port) < 0) {
				fprintf(stderr, "launch_ranks: --master %s: want ADDR:PORT\n", v);
				return 2;
			}
			memcpy(addr, v, (size_t)(colon - v));
			addr[colon - v] = 0;
		} else {
			usage();
			return 2;
		}
	}
	if (i + 1 >= argc || nranks < 0) {
		usage();
		return 2;
	}
	char **worker_argv = argv + i + 1;
	if (local_ranks < 0)
		local_ranks = nranks - first_rank;
	if (local_ranks < 1 || local_ranks > MAX_LOCAL_RANKS || first_rank + local_ranks > nranks) {
		fprintf(stderr, "launch_ranks: ranks %d..%d do not fit in a job of %d (at most %d "
			"local ranks)\n", first_rank, first_rank + local_ranks - 1, nranks,
			MAX_LOCAL_RANKS);
		return 2;
	}
	if (!strcmp(addr, "localhost"))
		strcpy(addr, "127.0.0.1");
	struct in_addr ia;
	if (inet_pton(AF_INET, addr, &ia) != 1 || (ntohl(ia.s_addr) >> 24) != 127) {
		fprintf(stderr, "launch_ranks: --master %s: only loopback addresses (127.x.x.x)\n",
			addr);
		return 2;
	}
	if (port == 0) {
		if (first_rank != 0) {
			fprintf(stderr, "launch_ranks: --master port 0 only for the launcher that "
				"runs rank 0; pass the others the port it prints\n");
			return 2;
		}
		port = pick_free_port(addr);
		if (port < 0) {
			fprintf(stderr, "launch_ranks: no free port on %s: %s\n", addr,
				strerror(errno));
			return 1;
		}
	}
	fprintf(stderr, "launch_ranks: master %s:%d, ranks %d..%d of %d\n", addr, port, first_rank,
		first_rank + local_ranks - 1, nranks);
	fflush(stderr);

	struct sigaction sa = { .sa_handler = forward_signal };
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	char num[32];
	for (int l = 0; l < local_ranks; l++) {
		fflush(NULL);
		pid_t pid = fork();
		if (pid < 0) {
			fprintf(stderr, "launch_ranks: fork: %s\n", strerror(errno));
			forward_signal(SIGTERM);
			break;
		}
		if (pid == 0) {
			signal(SIGINT, SIG_DFL);
			signal(SIGTERM, SIG_DFL);
			snprintf(num, sizeof num, "%d", first_rank + l);
			setenv("RANK", num, 1);
			snprintf(num, sizeof num, "%d", l);
			setenv("LOCAL_RANK", num, 1);
			snprintf(num, sizeof num, "%d", nranks);
			setenv("WORLD_SIZE", num, 1);
			snprintf(num, sizeof num, "%d", local_ranks);
			setenv("LOCAL_WORLD_SIZE", num, 1);
			setenv("MASTER_ADDR", addr, 1);
			snprintf(num, sizeof num, "%d", port);
			setenv("MASTER_PORT", num, 1);
			execvp(worker_argv[0], worker_argv);
			fprintf(stderr, "launch_ranks: cannot run %s: %s\n", worker_argv[0],
				strerror(errno));
			_exit(127);
		}
		worker_pids[n_workers++] = pid;
	}

	int failed = n_workers < local_ranks;
	for (int left = n_workers; left > 0;) {
		int status;
		pid_t pid = wait(&status);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		int l = 0;
		while (l < n_workers && worker_pids[l] != pid)
			l++;
		if (l == n_workers)
			continue;
		worker_pids[l] = 0;
		left--;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			char what[96];
			describe_status(status, what, sizeof what);
			fprintf(stderr, "launch_ranks: rank %d (pid %d) failed: %s%s\n", first_rank + l,
				(int)pid, what, !failed && left ? "; stopping the other ranks" : "");
			if (!failed)
				forward_signal(SIGTERM);
			failed = 1;
		}
	}
	return failed ? 1 : 0;
}
