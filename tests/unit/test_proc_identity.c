/* proc_identity: container, pod and Slurm ids from cgroup v2 paths of the
 * shapes runtimes really make, and from the launcher environment; hostile
 * paths (overlong, truncated, look-alikes) give empty fields, never a crash. */
#include "check.h"
#include "../../analyzer/util/proc_identity.h"

#define H64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UID "6f2a1c3e-5b7d-4e8f-9a0b-1c2d3e4f5a6b"
#define UID_ "6f2a1c3e_5b7d_4e8f_9a0b_1c2d3e4f5a6b"

static const struct {
	const char *path, *container, *runtime, *pod, *job, *step, *local_task;
} cases[] = {
	/* docker, cgroupfs driver */
	{ "/docker/" H64, H64, "docker", "", "", "", "" },
	/* docker, systemd driver */
	{ "/system.slice/docker-" H64 ".scope", H64, "docker", "", "", "", "" },
	/* kubelet systemd driver, containerd */
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/cri-containerd-" H64 ".scope",
	  H64, "containerd", UID, "", "", "" },
	{ "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice/cri-containerd-" H64 ".scope",
	  H64, "containerd", UID, "", "", "" },
	/* guaranteed QoS: the pod slice sits right under kubepods.slice */
	{ "/kubepods.slice/kubepods-pod" UID_ ".slice/crio-" H64 ".scope", H64, "crio", UID, "", "", "" },
	/* cri-o's monitor is not the container */
	{ "/kubepods.slice/kubepods-pod" UID_ ".slice/crio-conmon-" H64 ".scope", "", "", UID, "", "", "" },
	/* kubelet cgroupfs driver */
	{ "/kubepods/burstable/pod" UID "/" H64, H64, "", UID, "", "", "" },
	{ "/kubepods/pod" UID "/" H64, H64, "", UID, "", "", "" },
	/* podman, rootless under the user's manager */
	{ "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" H64 ".scope/container",
	  H64, "podman", "", "", "", "" },
	{ "/machine.slice/libpod-conmon-" H64 ".scope", "", "", "", "", "", "" },
	/* Slurm cgroup/v2 plugin */
	{ "/system.slice/slurmstepd.scope/job_4242/step_0/user/task_3", "", "", "", "4242", "0", "3" },
	{ "/system.slice/slurmstepd.scope/job_4242/step_batch/user/task_0", "", "", "", "4242", "batch", "0" },
	{ "/system.slice/node01_slurmstepd.scope/job_77/step_extern/slurm", "", "", "", "77", "extern", "" },
	/* nothing to say */
	{ "/user.slice/user-1000.slice/session-3.scope", "", "", "", "", "", "" },
	{ "/", "", "", "", "", "", "" },
	{ "", "", "", "", "", "", "" },
	/* look-alikes and hostile shapes */
	{ "/docker/" H64 "0", "", "", "", "", "", "" },                /* 65 hex */
	{ "/system.slice/docker-" H64 "ZZ.scope", "", "", "", "", "", "" },
	{ "/system.slice/docker-.scope", "", "", "", "", "", "" },
	{ "/kubepods.slice/kubepods-pod" UID_ "x.slice", "", "", "", "", "", "" },
	{ "/notkube/pod" UID, "", "", "", "", "", "" },                /* pod<uid> outside kubepods */
	{ "/job_12345678901234567890123456789/step_x", "", "", "", "", "", "" },
	{ "/job_/step_/task_", "", "", "", "", "", "" },
	{ "////docker//" H64 "//", H64, "docker", "", "", "", "" },
};

static void check_case(size_t i)
{
	struct proc_identity id;
	const char *p = cases[i].path;
	proc_identity_parse(&id, p, strlen(p), NULL, 0);
	if (strcmp(id.container_id, cases[i].container) || strcmp(id.container_runtime, cases[i].runtime) ||
	    strcmp(id.pod_uid, cases[i].pod) || strcmp(id.slurm_job, cases[i].job) ||
	    strcmp(id.slurm_step, cases[i].step) || strcmp(id.slurm_local_task, cases[i].local_task))
		fprintf(stderr, "case %zu: %s\n", i, p);
	CHECK_STR(id.container_id, cases[i].container);
	CHECK_STR(id.container_runtime, cases[i].runtime);
	CHECK_STR(id.pod_uid, cases[i].pod);
	CHECK_STR(id.slurm_job, cases[i].job);
	CHECK_STR(id.slurm_step, cases[i].step);
	CHECK_STR(id.slurm_local_task, cases[i].local_task);
	CHECK_STR(id.pod_namespace, "");
	CHECK_STR(id.slurm_task, "");
}

static void check_env(void)
{
	struct proc_identity id;
	const char *env[] = { "PATH=/bin", "SLURM_JOB_ID=991", "SLURM_STEP_ID=2",
			      "SLURM_PROCID=17", "SLURM_LOCALID=1", "POD_NAMESPACE=training",
			      "SLURM_JOB_IDX=5" };
	proc_identity_parse(&id, NULL, 0, env, sizeof env / sizeof env[0]);
	CHECK_STR(id.slurm_job, "991");
	CHECK_STR(id.slurm_step, "2");
	CHECK_STR(id.slurm_task, "17");
	CHECK_STR(id.slurm_local_task, "1");
	CHECK_STR(id.pod_namespace, "training");

	/* the cgroup wins where it names a field; env fills the rest */
	const char *cg = "/system.slice/slurmstepd.scope/job_4242/step_0/user/task_3";
	proc_identity_parse(&id, cg, strlen(cg), env, sizeof env / sizeof env[0]);
	CHECK_STR(id.slurm_job, "4242");
	CHECK_STR(id.slurm_step, "0");
	CHECK_STR(id.slurm_local_task, "3");
	CHECK_STR(id.slurm_task, "17");

	/* values that are not ids, and an overlong namespace, stay empty */
	char longns[200] = "POD_NAMESPACE=";
	memset(longns + 14, 'a', 150);
	const char *bad[] = { "SLURM_JOB_ID=12;rm", "SLURM_STEP_ID=", "SLURM_PROCID", longns, NULL };
	proc_identity_parse(&id, NULL, 0, bad, sizeof bad / sizeof bad[0]);
	CHECK_STR(id.slurm_job, "");
	CHECK_STR(id.slurm_step, "");
	CHECK_STR(id.slurm_task, "");
	CHECK_STR(id.pod_namespace, "");
}

/* A length shorter than the string: only that prefix is read. */
static void check_bounds(void)
{
	struct proc_identity id;
	const char *p = "/docker/" H64;
	proc_identity_parse(&id, p, strlen(p) - 1, NULL, 0);
	CHECK_STR(id.container_id, "");
	/* an embedded NUL ends the path */
	const char q[] = "/docker/" H64 "\0/kubepods/pod" UID;
	proc_identity_parse(&id, q, sizeof q - 1, NULL, 0);
	CHECK_STR(id.container_id, H64);
	CHECK_STR(id.pod_uid, "");
}

int main(void)
{
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		check_case(i);
	check_env();
	check_bounds();
	return check_finish();
}
