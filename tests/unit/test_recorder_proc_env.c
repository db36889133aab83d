/* proc_env_keep: the launcher variables the recorder keeps include the Slurm
 * ids and POD_NAMESPACE the analyzer's identity reads; look-alike keys and
 * everything else are dropped. */
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
	return check_finish();
}
