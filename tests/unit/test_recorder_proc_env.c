/* proc_env_keep: the launcher variables the recorder keeps include the Slurm
 * ids and POD_NAMESPACE the analyzer's identity reads; look-alike keys and
 * everything else are dropped.  proc_cgroup_path: the path the recorder
 * writes as FR_REC_PROC_CGROUP, from /proc/PID/cgroup's shapes. */
#include "check.h"
#include "inspect/proc_text.h"

static int kept(const char *out, size_t len, const char *want)
{
	for (size_t at = 0; at < len; at += strlen(out + at) + 1)
		if (!strcmp(out + at, want))
			return 1;
	return 0;
}

int main(void)
{
	static const char env[] = "HOME=/root\0SLURM_JOB_ID=4242\0SLURM_STEP_ID=0\0"
		"SLURM_PROCID=3\0SLURM_LOCALID=1\0SLURM_NODEID=2\0POD_NAMESPACE=train\0"
		"SLURM_JOB_IDX=9\0SECRET=x\0RANK=3";
	char out[4096];
	size_t n = proc_env_keep(env, sizeof env - 1, out, sizeof out);
	CHECK(kept(out, n, "SLURM_JOB_ID=4242"));
	CHECK(kept(out, n, "SLURM_STEP_ID=0"));
	CHECK(kept(out, n, "SLURM_PROCID=3"));
	CHECK(kept(out, n, "SLURM_LOCALID=1"));
	CHECK(kept(out, n, "SLURM_NODEID=2"));
	CHECK(kept(out, n, "POD_NAMESPACE=train"));
	CHECK(kept(out, n, "RANK=3"));
	CHECK(!kept(out, n, "HOME=/root"));
	CHECK(!kept(out, n, "SECRET=x"));
	CHECK(!kept(out, n, "SLURM_JOB_IDX=9"));
	CHECK_EQ_U64(n, strlen("SLURM_JOB_ID=4242 SLURM_STEP_ID=0 SLURM_PROCID=3 SLURM_LOCALID=1 "
			       "SLURM_NODEID=2 POD_NAMESPACE=train RANK=3 "));

	/* the v2 line wins wherever it is; then name=systemd; then the first */
	static const char hybrid[] = "12:memory:/kubepods/burstable/podX\n1:name=systemd:/system.slice/a"
				     "\n0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-ab.scope\n";
	char cg[64];
	CHECK_EQ_U64(proc_cgroup_path(hybrid, sizeof hybrid - 1, cg, sizeof cg),
		     strlen("/kubepods.slice/kubepods-pod1.slice/cri-containerd-ab.scope"));
	CHECK_STR(cg, "/kubepods.slice/kubepods-pod1.slice/cri-containerd-ab.scope");
	static const char v1[] = "4:memory:/docker/abc\n1:name=systemd:/docker/abc\n";
	CHECK_EQ_U64(proc_cgroup_path(v1, sizeof v1 - 1, cg, sizeof cg), 11);
	CHECK_STR(cg, "/docker/abc");
	static const char first[] = "4:memory:/slurm/uid_0/job_42\n3:cpu:/x";
	CHECK_EQ_U64(proc_cgroup_path(first, sizeof first - 1, cg, sizeof cg), 19);
	CHECK_STR(cg, "/slurm/uid_0/job_42");
	/* cut at the buffer, NUL-terminated; nothing parseable: 0 */
	static const char only_v2[] = "0::/a/very/long/path/that/does/not/fit/in/ten";
	CHECK_EQ_U64(proc_cgroup_path(only_v2, sizeof only_v2 - 1, cg, 10), 9);
	CHECK_STR(cg, "/a/very/l");
	static const char junk[] = "no colons here\nnor:here";
	CHECK_EQ_U64(proc_cgroup_path(junk, sizeof junk - 1, cg, sizeof cg), 0);
	CHECK_EQ_U64(proc_cgroup_path(hybrid, sizeof hybrid - 1, cg, 0), 0);
	return check_finish();
}
