/* The job's processes (see job_pids.h). */
#include "track/job_pids.h"

#include <stdlib.h>
#include <string.h>

void job_pids_init(struct job_pids *j)
{
	memset(j, 0, sizeof(*j));
	pthread_mutex_init(&j->mu, NULL);
}

void job_pids_destroy(struct job_pids *j)
{
	free(j->v);
	j->v = NULL;
	j->n = j->cap = 0;
	pthread_mutex_destroy(&j->mu);
}

static struct job_pid *find_locked(struct job_pids *j, uint32_t pid)
{
	for (size_t i = 0; i < j->n; i++)
		if (j->v[i].pid == pid)
			return &j->v[i];
	return NULL;
}

void job_pids_mark(struct job_pids *j, uint32_t pid, unsigned why, uint64_t ts_ns,
		   uint64_t rank)
{
	pthread_mutex_lock(&j->mu);
	struct job_pid *e = find_locked(j, pid);
	if (!e) {
		if (j->n == j->cap) {
			size_t cap = j->cap ? j->cap * 2 : 32;
			struct job_pid *v = realloc(j->v, cap * sizeof(*v));
			if (!v) {
				pthread_mutex_unlock(&j->mu);
				return;
			}
			j->v = v;
			j->cap = cap;
		}
		e = &j->v[j->n++];
		*e = (struct job_pid){.pid = pid};
		if (j->n > j->peak)
			j->peak = j->n;
	}
	e->why |= why;
	if ((why & JOB_LIB) && ts_ns > e->lib_ns)
		e->lib_ns = ts_ns;
	if ((why & JOB_EVENTS) && ts_ns > e->events_ns)
		e->events_ns = ts_ns;
	if (rank)
		e->rank = rank;
	pthread_mutex_unlock(&j->mu);
}

static void drop_locked(struct job_pids *j, struct job_pid *e)
{
	*e = j->v[--j->n];
}

void job_pids_reset(struct job_pids *j, uint32_t pid, uint64_t ts_ns)
{
	pthread_mutex_lock(&j->mu);
	struct job_pid *e = find_locked(j, pid);
	/* a mark after ts_ns is of the new image (its mappings may be handled
	 * before its exec event): it stays */
	if (e) {
		if (e->lib_ns < ts_ns)
			e->why &= ~(unsigned)JOB_LIB;
		if (e->events_ns < ts_ns)
			e->why &= ~(unsigned)JOB_EVENTS;
		if (!e->why && !e->rank)
			drop_locked(j, e);
	}
	atomic_fetch_add(&j->gen, 1);
	pthread_mutex_unlock(&j->mu);
}

bool job_pids_is_job(struct job_pids *j, uint32_t pid, unsigned *why)
{
	pthread_mutex_lock(&j->mu);
	struct job_pid *e = find_locked(j, pid);
	*why = e ? e->why : 0;
	pthread_mutex_unlock(&j->mu);
	return *why != 0;
}

uint64_t job_pids_rank(struct job_pids *j, uint32_t pid)
{
	pthread_mutex_lock(&j->mu);
	struct job_pid *e = find_locked(j, pid);
	uint64_t rank = e ? e->rank : 0;
	pthread_mutex_unlock(&j->mu);
	return rank;
}

void job_pids_forget(struct job_pids *j, uint32_t pid)
{
	pthread_mutex_lock(&j->mu);
	struct job_pid *e = find_locked(j, pid);
	if (e)
		drop_locked(j, e);
	atomic_fetch_add(&j->gen, 1);
	pthread_mutex_unlock(&j->mu);
}

size_t job_pids_count(struct job_pids *j)
{
	pthread_mutex_lock(&j->mu);
	size_t n = j->n;
	pthread_mutex_unlock(&j->mu);
	return n;
}

bool job_pids_is_job_library(const char *path)
{
	static const char *const prefixes[] = {
		"libcuda.so", "libcudart.so", "libcudart_static", "libnccl.so", "libibverbs.so",
		"librdmacm.so", "libmlx5.so",
	};
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(base, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

uint64_t job_pids_env_rank(const char *env, size_t len)
{
	/* the launcher's own word first: torchrun, mpirun, srun */
	static const char *const keys[] = {"RANK=", "OMPI_COMM_WORLD_RANK=", "PMI_RANK=",
					   "SLURM_PROCID="};
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		size_t kl = strlen(keys[k]);
		for (size_t at = 0; at < len;) {
			const char *v = env + at;
			const char *nul = memchr(v, 0, len - at);
			size_t vlen = nul ? (size_t)(nul - v) : len - at;
			if (vlen > kl && !memcmp(v, keys[k], kl)) {
				uint64_t r = 0;
				size_t i = kl;
				for (; i < vlen && v[i] >= '0' && v[i] <= '9' && r < (1ull << 40); i++)
					r = r * 10 + (uint64_t)(v[i] - '0');
				if (i == vlen)
					return r + 1;
			}
			at += vlen + 1;
		}
	}
	return 0;
}
