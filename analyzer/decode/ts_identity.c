/* Where each process of a file ran (trace_file_identity, trace_set.h):
 * the cgroup path of its FR_REC_PROC_CGROUP and the launcher variables of
 * its FR_REC_PROC_ENV that name a batch job or a pod, kept per pid while
 * the metadata is read, and parsed on request by proc_identity.c.  Bounded:
 * a path at most FR_CGROUP_PATH_MAX bytes, the kept variables 1 KiB. */
#include "trace_set_impl.h"
#include "frec_records.h"
#include "proc_identity.h"

#include <stdlib.h>
#include <string.h>

#define IDENT_ENV_MAX 1024
#define IDENT_ENV_VARS 8

static const char *const ident_keys[] = {
	"SLURM_JOB_ID=", "SLURM_STEP_ID=", "SLURM_PROCID=", "SLURM_LOCALID=", "POD_NAMESPACE=",
};

static struct ts_ident *ident_of(struct trace_file *f, uint32_t pid)
{
	uint64_t at;
	if (hmap_get(&f->ident_by_pid, pid, 0, &at))
		return &f->idents[at];
	if (f->n_idents == f->cap_idents) {
		size_t cap = f->cap_idents ? 2 * f->cap_idents : 16;
		struct ts_ident *g = realloc(f->idents, cap * sizeof(*g));
		if (!g)
			return NULL;
		f->idents = g;
		f->cap_idents = cap;
	}
	if (hmap_put(&f->ident_by_pid, pid, 0, f->n_idents))
		return NULL;
	struct ts_ident *id = &f->idents[f->n_idents++];
	memset(id, 0, sizeof(*id));
	id->pid = pid;
	return id;
}

int ts_identity_note_cgroup(struct trace_file *f, uint32_t pid, const char *path, size_t len)
{
	struct ts_ident *id = ident_of(f, pid);
	if (!id)
		return -1;
	if (len > FR_CGROUP_PATH_MAX)
		len = FR_CGROUP_PATH_MAX;
	char *copy = ts_strndup_printable(path, len, '?');
	if (!copy)
		return -1;
	free(id->cgroup);
	id->cgroup = copy; /* the latest record wins, as for a process's */
	return 0;
}

int ts_identity_note_env(struct trace_file *f, uint32_t pid, const char *env, size_t len)
{
	char kept[IDENT_ENV_MAX];
	size_t n = 0;
	for (size_t at = 0; at < len;) {
		const char *end = memchr(env + at, '\0', len - at);
		size_t vl = end ? (size_t)(end - (env + at)) : len - at;
		for (size_t k = 0; k < sizeof(ident_keys) / sizeof(ident_keys[0]); k++) {
			size_t kl = strlen(ident_keys[k]);
			if (vl > kl && !memcmp(env + at, ident_keys[k], kl) && n + vl + 1 <= sizeof(kept)) {
				memcpy(kept + n, env + at, vl);
				n += vl;
				kept[n++] = '\0';
			}
		}
		at += vl + 1;
	}
	if (!n)
		return 0;
	struct ts_ident *id = ident_of(f, pid);
	if (!id)
		return -1;
	char *copy = malloc(n);
	if (!copy)
		return -1;
	memcpy(copy, kept, n);
	free(id->env);
	id->env = copy;
	id->env_len = n;
	return 0;
}

int trace_file_identity(const struct trace_file *f, uint32_t pid, struct proc_identity *out,
			const char **cgroup)
{
	uint64_t at;
	memset(out, 0, sizeof(*out));
	if (cgroup)
		*cgroup = NULL;
	if (!hmap_get(&f->ident_by_pid, pid, 0, &at))
		return 0;
	const struct ts_ident *id = &f->idents[at];
	const char *vars[IDENT_ENV_VARS];
	size_t n_vars = 0;
	for (size_t i = 0; i < id->env_len && n_vars < IDENT_ENV_VARS;) {
		vars[n_vars++] = id->env + i;
		i += strlen(id->env + i) + 1;
	}
	proc_identity_parse(out, id->cgroup, id->cgroup ? strlen(id->cgroup) : 0, vars, n_vars);
	if (cgroup)
		*cgroup = id->cgroup;
	return 1;
}

void ts_identity_free(struct trace_file *f)
{
	for (size_t i = 0; i < f->n_idents; i++) {
		free(f->idents[i].cgroup);
		free(f->idents[i].env);
	}
	free(f->idents);
	hmap_free(&f->ident_by_pid);
}
