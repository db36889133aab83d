/* Starting `-- COMMAND` so that it is traced from its first instruction: the
 * child is forked and held at a gate until the recorder has put its pid in
 * the kernel's pid set and attached every probe, then it execs. */
#ifndef FLIGHTREC_LAUNCH_H
#define FLIGHTREC_LAUNCH_H

#include <sys/types.h>

struct launch {
	pid_t pid;
	int gate_fd;  /* write end: one byte releases the child */
	int err_fd;   /* read end: errno of a failed exec, or EOF on success */
};

/* Forks the held child; 0, or -errno with nothing left open. */
int launch_prepare(struct launch *l, char **argv);
/* Releases the child; 0 when exec succeeded, else -errno (of the exec, or
 * of the release itself). */
int launch_release(struct launch *l);
/* Kills a child that was never released. */
void launch_abort(struct launch *l);

#endif
