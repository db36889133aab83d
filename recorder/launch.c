/* Gated fork + exec (see launch.h). */
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void close_pair(int fds[2])
{
	close(fds[0]);
	close(fds[1]);
}

int launch_prepare(struct launch *l, char **argv)
{
	int gate[2], err[2], e;

	l->pid = -1;
	l->gate_fd = l->err_fd = -1;
	if (pipe2(gate, O_CLOEXEC))
		return -errno;
	if (pipe2(err, O_CLOEXEC)) {
		e = errno;
		close_pair(gate);
		return -e;
	}
	l->pid = fork();
	if (l->pid < 0) {
		e = errno;
		close_pair(gate);
		close_pair(err);
		return -e;
	}
	if (l->pid == 0) {
		char c;
		close(gate[1]);
		close(err[0]);
		/* a recorder that dies before releasing us takes us with it */
		if (read(gate[0], &c, 1) != 1)
			_exit(127);
		signal(SIGPIPE, SIG_DFL);
		execvp(argv[0], argv);
		int e = errno;
		if (write(err[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(gate[0]);
	close(err[1]);
	l->gate_fd = gate[1];
	l->err_fd = err[0];
	return 0;
}

int launch_release(struct launch *l)
{
	int e = 0;
	ssize_t n;

	if (write(l->gate_fd, "x", 1) != 1)
		return -errno;
	close(l->gate_fd);
	l->gate_fd = -1;
	n = read(l->err_fd, &e, sizeof(e));
	close(l->err_fd);
	l->err_fd = -1;
	return n == (ssize_t)sizeof(e) ? -e : 0;
}

void launch_abort(struct launch *l)
{
	if (l->pid > 0) {
		kill(l->pid, SIGKILL);
		waitpid(l->pid, NULL, 0);
	}
	if (l->gate_fd >= 0)
		close(l->gate_fd);
	if (l->err_fd >= 0)
		close(l->err_fd);
	l->pid = -1;
}

int launch_gpu_injection(char *out, size_t cap)
{
	const char *env = getenv("FLIGHTREC_CUPTI_INJECTION");
	if (env && env[0]) {
		snprintf(out, cap, "%s", env);
		if (access(env, R_OK) == 0)
			return 0;
		snprintf(out, cap, "%s (FLIGHTREC_CUPTI_INJECTION)", env);
		return -ENOENT;
	}
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -ENOENT;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0'; /* the recorder's directory: bin/, or recorder/ in a build */
	static const char *const rel[] = { "/../lib/flightrec/libflightrec_cupti.so",
					   "/../gpu/libflightrec_cupti.so" };
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		char path[4200];
		snprintf(path, sizeof(path), "%s%s", exe, rel[i]);
		char *real = realpath(path, NULL);
		if (real && access(real, R_OK) == 0) {
			snprintf(out, cap, "%s", real);
			free(real);
			return 0;
		}
		free(real);
	}
	snprintf(out, cap, "%s/../lib/flightrec/ or %s/../gpu/ (or set FLIGHTREC_CUPTI_INJECTION)",
		 exe, exe);
	return -ENOENT;
}
