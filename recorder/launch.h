/* Starting `-- COMMAND` so that it is traced from its first instruction: the
 * child is forked and held at a gate until the recorder has put its pid in
 * the kernel's pid set and attached every probe, then it execs. */
#ifndef FLIGHTREC_LAUNCH_H
#define FLIGHTREC_LAUNCH_H

#include <stddef.h>
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

/* --gpu-kernels: the CUDA injection library to name in the job's
 * CUDA_INJECTION64_PATH: $FLIGHTREC_CUPTI_INJECTION, else
 * libflightrec_cupti.so installed beside the recorder (PREFIX/lib/flightrec/
 * for PREFIX/bin/flightrec) or in its build tree (gpu/).  0 and the path in
 * out, or -ENOENT with the places looked at in out. */
int launch_gpu_injection(char *out, size_t cap);

#endif
