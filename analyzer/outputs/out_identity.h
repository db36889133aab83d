/* Where a process ran (trace_file_identity: its cgroup, container, pod and
 * Slurm job) in the outputs' forms: JSON members, one text line, label
 * pairs.  Not the parsing (util/proc_identity.c) nor the storage
 * (decode/ts_identity.c). */
#ifndef FLIGHTREC_OUT_IDENTITY_H
#define FLIGHTREC_OUT_IDENTITY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct trace_file;

/* ,"cgroup":...,"container_id":...,"container_runtime":...,"pod_uid":...,
 * "pod_namespace":...,"slurm_job":...,"slurm_step":...,"slurm_task":...
 * (null where unknown) */
void out_identity_json(FILE *out, const struct trace_file *f, uint32_t pid);

/* "container docker 0123456789ab, pod 1b2c... (namespace ml), slurm job 42
 * step 0 task 3" into buf (cap bytes); the length, 0 when nothing is
 * known beyond the cgroup path. */
size_t out_identity_text(const struct trace_file *f, uint32_t pid, char *buf, size_t cap);

/* out_identity_text of the file's first process that has one (the job's
 * processes share their container and job); 0 when none does. */
size_t out_identity_file_text(const struct trace_file *f, char *buf, size_t cap);

/* The distinct non-empty values of one identity field over f's processes
 * (at: the field's offsetof in struct proc_identity), at most max, into
 * seen[] (each PROC_ID_CONTAINER_MAX bytes, the longest field); how many. */
size_t out_identity_distinct(const struct trace_file *f, size_t at, char (*seen)[65], size_t max);

/* The identity as (key, value) pairs for labels (pprof), at most 6, only
 * the known ones; values point into id-owned storage of the call's
 * struct (valid until the next call). */
struct out_identity_labels {
	const char *key[6], *value[6];
	size_t n;
	char storage[6][80];
};
void out_identity_labels(const struct trace_file *f, uint32_t pid, struct out_identity_labels *l);

#endif
