/* Which traced processes are the job, for the exit trigger (flightrec record
 * --ring --trigger exit): a job's failure is the death of one of its own
 * processes, not of every helper a shell or a launcher runs (readlink,
 * nvidia-smi, a wrapper's grep).  A process is the job when it is
 *   - the command's own process (ROOT),
 *   - a process that maps a CUDA, NCCL or RDMA library, as mapped since its
 *     latest exec (LIB; a fork of such a process, a DataLoader worker, maps
 *     them too until it execs something else),
 *   - a process that made CUDA, NCCL or RDMA calls (EVENTS),
 *   - a rank: its environment names a rank (RANK, OMPI_COMM_WORLD_RANK,
 *     SLURM_PROCID ...) that its parent is not already the job with (RANK;
 *     a rank's helpers inherit its variables and are not ranks themselves).
 * Filled by the tracking thread (mappings, environments) and the drain's
 * trigger hook (calls); asked by the main thread when a process exited
 * non-zero, after the tracking thread has caught up with that exit.  An
 * entry lives from its first mark to its process's forgetting (shortly after
 * it exited), so the table holds at most the job's live processes. */
#ifndef FLIGHTREC_JOB_PIDS_H
#define FLIGHTREC_JOB_PIDS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum job_why {
	JOB_ROOT = 1,
	JOB_LIB = 2,
	JOB_EVENTS = 4,
	JOB_RANK = 8,
};

struct job_pid {
	uint32_t pid;
	uint32_t why;       /* enum job_why bits; 0: a rank's helper, kept for its rank */
	uint64_t lib_ns, events_ns; /* the latest LIB and EVENTS marks */
	uint64_t rank;      /* 1 + the rank its environment names; 0: none */
};

struct job_pids {
	pthread_mutex_t mu;
	struct job_pid *v;  /* unordered; the job's processes (tens, hundreds) */
	size_t n, cap;
	atomic_uint gen;    /* bumped at every reset: the drain's cache is stale */
	uint64_t peak;      /* the most entries at once */
};

void job_pids_init(struct job_pids *j);
void job_pids_destroy(struct job_pids *j);

/* pid is the job for reason why (0: only its rank noted) from ts_ns on.
 * rank: 1 + the rank, or 0. */
void job_pids_mark(struct job_pids *j, uint32_t pid, unsigned why, uint64_t ts_ns,
		   uint64_t rank);
/* pid forked or exec'd at ts_ns: what it mapped or called before is not
 * what it runs now (ROOT and RANK stay). */
void job_pids_reset(struct job_pids *j, uint32_t pid, uint64_t ts_ns);
/* Is pid the job (asked at its exit, once the tracking thread has caught
 * up with it)?  *why gets the reasons (0: not). */
bool job_pids_is_job(struct job_pids *j, uint32_t pid, unsigned *why);
/* The rank pid's entry names (1 + rank), 0 when none. */
uint64_t job_pids_rank(struct job_pids *j, uint32_t pid);
/* pid has exited and its exit was decided: dropped. */
void job_pids_forget(struct job_pids *j, uint32_t pid);
size_t job_pids_count(struct job_pids *j);

/* A library whose users are the job: libcuda, libcudart, libnccl,
 * libibverbs, librdmacm, libmlx5 (path's last component). */
bool job_pids_is_job_library(const char *path);
/* The rank an environment (NUL-separated NAME=VALUE, proc_env_keep's
 * output) names, as 1 + rank; 0 when none. */
uint64_t job_pids_env_rank(const char *env, size_t len);

#endif
