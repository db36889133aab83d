/* Container, pod and Slurm identity from a cgroup v2 path and environment.
 *
 * The cgroup path is the one fact about where a process ran that the kernel
 * keeps whatever launched it; its component names are conventions of the
 * runtime that made them, so each shape seen in the wild is matched by name
 * (see tests/unit/test_proc_identity.c for the table of real paths):
 *   docker (cgroupfs driver)   /docker/<64hex>
 *   docker (systemd driver)    /system.slice/docker-<64hex>.scope
 *   containerd under k8s       .../cri-containerd-<64hex>.scope
 *   cri-o                      .../crio-<64hex>.scope  (not crio-conmon-)
 *   podman                     .../libpod-<64hex>.scope (not libpod-conmon-)
 *   k8s systemd driver         kubepods-burstable-pod<uid, '_' for '-'>.slice
 *   k8s cgroupfs driver        /kubepods/burstable/pod<uid>/<64hex>
 *   Slurm (cgroup/v2 plugin)   /system.slice/slurmstepd.scope/job_N/step_S/user/task_T
 * The namespace is never in the cgroup: only the environment (POD_NAMESPACE,
 * set through the downward API by convention) can name it.
 * Not for cgroup v1 (several hierarchies; the recorder keeps only "0::"). */
#include "proc_identity.h"

#include <string.h>

static int is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* A container id: 12 to 64 lowercase hex digits, nothing else. */
static int is_container_id(const char *s, size_t n)
{
	if (n < 12 || n > 64)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!is_hex(s[i]))
			return 0;
	return 1;
}

/* A pod UID: 36 characters of hex and dashes (or '_' in a systemd slice name). */
static int is_pod_uid(const char *s, size_t n)
{
	if (n != 36)
		return 0;
	for (size_t i = 0; i < n; i++) {
		int dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? (s[i] != '-' && s[i] != '_') : !is_hex(s[i]))
			return 0;
	}
	return 1;
}

/* A Slurm id: digits, or the names Slurm gives its special steps. */
static int is_slurm_id(const char *s, size_t n)
{
	if (n == 0 || n >= PROC_ID_NUM_MAX)
		return 0;
	if ((n == 5 && !memcmp(s, "batch", 5)) || (n == 6 && !memcmp(s, "extern", 6)) ||
	    (n == 11 && !memcmp(s, "interactive", 11)))
		return 1;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

static void set(char *dst, size_t cap, const char *s, size_t n)
{
	if (n >= cap)
		return;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

static int has_prefix(const char *s, size_t n, const char *pre, size_t *pn)
{
	size_t l = strlen(pre);
	*pn = l;
	return n >= l && !memcmp(s, pre, l);
}

static int has_suffix(const char *s, size_t n, const char *suf)
{
	size_t l = strlen(suf);
	return n >= l && !memcmp(s + n - l, suf, l);
}

/* "<prefix><id>.scope" for a runtime's scope unit. */
static int scope_id(const char *s, size_t n, const char *prefix, const char **id, size_t *idn)
{
	size_t pl;
	if (!has_prefix(s, n, prefix, &pl) || !has_suffix(s, n, ".scope"))
		return 0;
	if (n < pl + 6)
		return 0;
	*id = s + pl;
	*idn = n - pl - 6;
	return is_container_id(*id, *idn);
}

static void set_container(struct proc_identity *id, const char *runtime, const char *s, size_t n)
{
	set(id->container_id, sizeof id->container_id, s, n);
	set(id->container_runtime, sizeof id->container_runtime, runtime, strlen(runtime));
}

static void set_pod(struct proc_identity *id, const char *s, size_t n)
{
	set(id->pod_uid, sizeof id->pod_uid, s, n);
	for (char *c = id->pod_uid; *c; c++)
		if (*c == '_')
			*c = '-';
}

static void component(struct proc_identity *id, const char *s, size_t n,
		      const char *prev, size_t prevn, int in_kubepods)
{
	static const struct { const char *prefix, *runtime; } scopes[] = {
		{ "docker-", "docker" },
		{ "cri-containerd-", "containerd" },
		{ "crio-", "crio" },
		{ "libpod-", "podman" },
	};
	const char *v;
	size_t vn, pl;

	for (size_t i = 0; i < sizeof scopes / sizeof scopes[0]; i++)
		if (scope_id(s, n, scopes[i].prefix, &v, &vn)) {
			set_container(id, scopes[i].runtime, v, vn);
			return;
		}
	/* cgroupfs drivers: the bare id under "docker" or under a pod */
	if (is_container_id(s, n) && n == 64) {
		if (prevn == 6 && !memcmp(prev, "docker", 6))
			set_container(id, "docker", s, n);
		else if (in_kubepods)
			set_container(id, "", s, n);
		return;
	}
	/* kubepods[-QOS]-pod<uid>.slice, or pod<uid> in cgroupfs */
	if (has_prefix(s, n, "kubepods", &pl) && has_suffix(s, n, ".slice")) {
		const char *p = s;
		size_t left = n - 6;
		for (size_t i = 0; i + 3 <= left; i++)
			if (!memcmp(p + i, "pod", 3) && i > 0 && p[i - 1] == '-' &&
			    is_pod_uid(p + i + 3, left - i - 3)) {
				set_pod(id, p + i + 3, left - i - 3);
				return;
			}
		return;
	}
	if (in_kubepods && has_prefix(s, n, "pod", &pl) && is_pod_uid(s + pl, n - pl)) {
		set_pod(id, s + pl, n - pl);
		return;
	}
	if (has_prefix(s, n, "job_", &pl) && is_slurm_id(s + pl, n - pl))
		set(id->slurm_job, sizeof id->slurm_job, s + pl, n - pl);
	else if (has_prefix(s, n, "step_", &pl) && is_slurm_id(s + pl, n - pl))
		set(id->slurm_step, sizeof id->slurm_step, s + pl, n - pl);
	else if (has_prefix(s, n, "task_", &pl) && is_slurm_id(s + pl, n - pl))
		set(id->slurm_local_task, sizeof id->slurm_local_task, s + pl, n - pl);
}

static void parse_cgroup(struct proc_identity *id, const char *path, size_t len)
{
	const char *prev = "";
	size_t prevn = 0;
	int in_kubepods = 0;
	size_t i = 0;

	while (i < len) {
		while (i < len && path[i] == '/')
			i++;
		size_t start = i;
		while (i < len && path[i] != '/' && path[i] != '\0')
			i++;
		size_t n = i - start;
		if (n == 0)
			break;
		const char *s = path + start;
		size_t pl;
		if (has_prefix(s, n, "kubepods", &pl))
			in_kubepods = 1;
		component(id, s, n, prev, prevn, in_kubepods);
		prev = s;
		prevn = n;
		if (i < len && path[i] == '\0')
			break;
	}
}

/* The value of KEY in env, or NULL; *vn its length (bounded by the entry). */
static const char *env_get(const char *const *env, size_t env_n, const char *key, size_t *vn)
{
	size_t kl = strlen(key);
	for (size_t i = 0; i < env_n; i++) {
		const char *e = env[i];
		if (e && !strncmp(e, key, kl) && e[kl] == '=') {
			*vn = strlen(e + kl + 1);
			return e + kl + 1;
		}
	}
	return NULL;
}

static void from_env(char *dst, size_t cap, const char *const *env, size_t env_n,
		     const char *key, int slurm_id)
{
	size_t vn;
	const char *v;
	if (dst[0] || !(v = env_get(env, env_n, key, &vn)))
		return;
	if (slurm_id && !is_slurm_id(v, vn))
		return;
	set(dst, cap, v, vn);
}

void proc_identity_parse(struct proc_identity *id, const char *cgroup,
			 size_t cgroup_len, const char *const *env, size_t env_n)
{
	memset(id, 0, sizeof *id);
	if (cgroup)
		parse_cgroup(id, cgroup, cgroup_len);
	if (!env)
		return;
	from_env(id->slurm_job, sizeof id->slurm_job, env, env_n, "SLURM_JOB_ID", 1);
	from_env(id->slurm_step, sizeof id->slurm_step, env, env_n, "SLURM_STEP_ID", 1);
	from_env(id->slurm_task, sizeof id->slurm_task, env, env_n, "SLURM_PROCID", 1);
	from_env(id->slurm_local_task, sizeof id->slurm_local_task, env, env_n, "SLURM_LOCALID", 1);
	/* a namespace is a DNS label: anything longer does not fit and stays empty */
	from_env(id->pod_namespace, sizeof id->pod_namespace, env, env_n, "POD_NAMESPACE", 0);
}
