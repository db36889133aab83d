/* Where a process ran, as the outputs show it (see out_identity.h). */
#include "out_identity.h"
#include "out_common.h"
#include "proc_identity.h"
#include "trace_set.h"

#include <string.h>

static void member(FILE *out, const char *key, const char *v)
{
	fprintf(out, ",\"%s\":", key);
	if (v && v[0])
		out_json_str(out, v);
	else
		fputs("null", out);
}

void out_identity_json(FILE *out, const struct trace_file *f, uint32_t pid)
{
	struct proc_identity id;
	const char *cgroup = NULL;
	trace_file_identity(f, pid, &id, &cgroup);
	member(out, "cgroup", cgroup);
	member(out, "container_id", id.container_id);
	member(out, "container_runtime", id.container_runtime);
	member(out, "pod_uid", id.pod_uid);
	member(out, "pod_namespace", id.pod_namespace);
	member(out, "slurm_job", id.slurm_job);
	member(out, "slurm_step", id.slurm_step);
	member(out, "slurm_task", id.slurm_task);
}

size_t out_identity_text(const struct trace_file *f, uint32_t pid, char *buf, size_t cap)
{
	struct proc_identity id;
	size_t n = 0;
	if (!cap)
		return 0;
	buf[0] = '\0';
	if (!trace_file_identity(f, pid, &id, NULL))
		return 0;
#define ADD(...) do { if (n < cap) n += (size_t)snprintf(buf + n, cap - n, __VA_ARGS__); } while (0)
	if (id.container_id[0])
		ADD("container %s %.12s", id.container_runtime[0] ? id.container_runtime : "?",
		    id.container_id);
	if (id.pod_uid[0] || id.pod_namespace[0]) {
		ADD("%spod %s", n ? ", " : "", id.pod_uid[0] ? id.pod_uid : "?");
		if (id.pod_namespace[0])
			ADD(" (namespace %s)", id.pod_namespace);
	}
	if (id.slurm_job[0]) {
		ADD("%sslurm job %s", n ? ", " : "", id.slurm_job);
		if (id.slurm_step[0])
			ADD(" step %s", id.slurm_step);
		if (id.slurm_task[0])
			ADD(" task %s", id.slurm_task);
	}
#undef ADD
	return n < cap ? n : cap - 1;
}

size_t out_identity_file_text(const struct trace_file *f, char *buf, size_t cap)
{
	for (size_t i = 0; i < f->n_procs; i++) {
		size_t n = out_identity_text(f, f->procs[i].pid, buf, cap);
		if (n)
			return n;
	}
	if (cap)
		buf[0] = '\0';
	return 0;
}

size_t out_identity_distinct(const struct trace_file *f, size_t at, char (*seen)[65], size_t max)
{
	_Static_assert(PROC_ID_CONTAINER_MAX == 65, "seen[] holds the longest field");
	size_t n = 0;
	for (size_t i = 0; i < f->n_procs && n < max; i++) {
		struct proc_identity id;
		if (!trace_file_identity(f, f->procs[i].pid, &id, NULL))
			continue;
		const char *v = (const char *)&id + at;
		size_t k = 0;
		while (k < n && strcmp(seen[k], v))
			k++;
		if (!v[0] || k < n)
			continue;
		snprintf(seen[n++], 65, "%s", v);
	}
	return n;
}

void out_identity_labels(const struct trace_file *f, uint32_t pid, struct out_identity_labels *l)
{
	struct proc_identity id;
	l->n = 0;
	if (!trace_file_identity(f, pid, &id, NULL))
		return;
	const char *keys[] = { "container_id", "pod_uid", "pod_namespace", "slurm_job",
			       "slurm_step", "slurm_task" };
	const char *vals[] = { id.container_id, id.pod_uid, id.pod_namespace, id.slurm_job,
			       id.slurm_step, id.slurm_task };
	for (size_t i = 0; i < 6; i++) {
		if (!vals[i][0])
			continue;
		snprintf(l->storage[l->n], sizeof(l->storage[0]), "%s", vals[i]);
		l->key[l->n] = keys[i];
		l->value[l->n] = l->storage[l->n];
		l->n++;
	}
}
