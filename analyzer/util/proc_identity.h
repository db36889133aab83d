/* Where a process ran, read from its cgroup v2 path and launcher environment:
 * container id, Kubernetes pod UID and namespace, Slurm job/step/task.  Only
 * parsing: no I/O, no allocation; the inputs are untrusted trace bytes, so
 * every length is bounded and a field that does not fit is left empty. */
#ifndef FLIGHTREC_PROC_IDENTITY_H
#define FLIGHTREC_PROC_IDENTITY_H

#include <stddef.h>

#define PROC_ID_CONTAINER_MAX 65 /* 64 hex digits and the NUL */
#define PROC_ID_POD_MAX 37       /* a UUID with dashes and the NUL */
#define PROC_ID_NAME_MAX 64      /* a namespace (DNS label, 63) and the NUL */
#define PROC_ID_NUM_MAX 24       /* a decimal id, or "batch"/"extern" steps */

struct proc_identity {
	char container_id[PROC_ID_CONTAINER_MAX]; /* "" when none */
	char container_runtime[16]; /* docker, containerd, crio, podman */
	char pod_uid[PROC_ID_POD_MAX];  /* dashed form, whatever the cgroup used */
	char pod_namespace[PROC_ID_NAME_MAX];
	char slurm_job[PROC_ID_NUM_MAX];
	char slurm_step[PROC_ID_NUM_MAX];
	char slurm_task[PROC_ID_NUM_MAX]; /* SLURM_PROCID: the global task rank */
	char slurm_local_task[PROC_ID_NUM_MAX]; /* task_N in the cgroup, SLURM_LOCALID */
};

/* Fill id from a cgroup v2 path (the part after "0::", may be NULL) and
 * then from the environment (KEY=VALUE strings, env_n of them, may be 0).
 * The environment fills only what the cgroup did not name: the cgroup is
 * what the kernel placed the process in, the environment only what its
 * launcher said, and a child may have inherited a stale one. */
void proc_identity_parse(struct proc_identity *id, const char *cgroup,
			 size_t cgroup_len, const char *const *env, size_t env_n);

#endif
