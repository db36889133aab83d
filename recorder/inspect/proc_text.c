/* /proc text from bytes (see proc_text.h). */
#include "inspect/proc_text.h"

#include <string.h>

/* Launcher variables worth keeping: rank identity and placement (the Slurm
 * ids and POD_NAMESPACE name the job and pod the analyzer reports; the
 * cgroup path cannot hold a namespace, and Slurm's cgroup not the global
 * task id). */
static const char *const env_keys[] = {
	"RANK=", "LOCAL_RANK=", "WORLD_SIZE=", "LOCAL_WORLD_SIZE=", "GROUP_RANK=",
	"MASTER_ADDR=", "MASTER_PORT=", "CUDA_VISIBLE_DEVICES=", "OMPI_COMM_WORLD_RANK=",
	"OMPI_COMM_WORLD_SIZE=", "SLURM_PROCID=", "SLURM_NTASKS=", "SLURM_JOB_ID=",
	"SLURM_STEP_ID=", "SLURM_LOCALID=", "SLURM_NODEID=", "POD_NAMESPACE=", "TORCHELASTIC_RUN_ID=",
	"NCCL_SOCKET_IFNAME=", "NCCL_IB_HCA=",
};

size_t proc_env_keep(const char *env, size_t len, char *out, size_t cap)
{
	size_t out_len = 0;

	for (size_t at = 0; at < len;) {
		const char *v = env + at;
		const char *nul = memchr(v, 0, len - at);
		size_t vlen = nul ? (size_t)(nul - v) : len - at;
		size_t keep = vlen < PROC_ENV_VALUE_MAX ? vlen : PROC_ENV_VALUE_MAX;
		for (size_t k = 0; k < sizeof(env_keys) / sizeof(env_keys[0]); k++) {
			size_t kl = strlen(env_keys[k]);
			if (vlen < kl || memcmp(v, env_keys[k], kl) || keep + 1 > cap - out_len)
				continue;
			memcpy(out + out_len, v, keep);
			out[out_len + keep] = 0;
			out_len += keep + 1;
		}
		at += vlen + 1;
	}
	return out_len;
}

/* The number at s[0..len) (leading spaces skipped); false when none. */
static bool parse_u64(const char *s, size_t len, uint64_t *out)
{
	size_t i = 0;
	uint64_t v = 0;

	while (i < len && s[i] == ' ')
		i++;
	if (i == len || s[i] < '0' || s[i] > '9')
		return false;
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false; /* no field of stat overflows: not a number */
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

int proc_stat_parse(const char *buf, size_t len, struct proc_stat_fields *out)
{
	memset(out, 0, sizeof(*out));
	/* comm may hold ')' and spaces: it ends at the last ')' */
	const char *open = memchr(buf, '(', len), *close = NULL;
	for (size_t i = len; i > 0; i--)
		if (buf[i - 1] == ')') {
			close = buf + i - 1;
			break;
		}
	if (!open || !close || close < open)
		return -1;
	size_t clen = (size_t)(close - open - 1);
	memcpy(out->comm, open + 1, clen < sizeof(out->comm) - 1 ? clen : sizeof(out->comm) - 1);
	/* ") S 1234 ...": field 3 is the state, 4 the ppid, 22 the start */
	const char *f = close + 1, *end = buf + len;
	for (int field = 3; field <= 22 && f < end; field++) {
		if (*f != ' ')
			break;
		f++;
		const char *next = memchr(f, ' ', (size_t)(end - f));
		size_t flen = next ? (size_t)(next - f) : (size_t)(end - f);
		uint64_t v;
		if (field == 4 && parse_u64(f, flen, &v) && v <= UINT32_MAX) {
			out->ppid = (uint32_t)v;
			out->has_ppid = true;
		} else if (field == 22 && parse_u64(f, flen, &v)) {
			out->start_ticks = v;
			out->has_start = true;
		}
		f += flen;
	}
	return 0;
}

size_t proc_cgroup_path(const char *text, size_t len, char *out, size_t cap)
{
	const char *best = NULL;
	size_t best_len = 0;
	int best_rank = 0; /* 3 v2, 2 name=systemd, 1 the first line */
	for (size_t at = 0; at < len;) {
		const char *line = text + at, *nl = memchr(line, '\n', len - at);
		size_t n = nl ? (size_t)(nl - line) : len - at;
		at += n + 1;
		/* "ID:CONTROLLERS:PATH" */
		const char *c1 = memchr(line, ':', n);
		const char *c2 = c1 ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - line)) : NULL;
		if (!c2)
			continue;
		int rank = (c1 - line == 1 && line[0] == '0' && c2 == c1 + 1) ? 3
			   : (c2 - c1 - 1 == 12 && !memcmp(c1 + 1, "name=systemd", 12)) ? 2 : 1;
		if (rank > best_rank) {
			best_rank = rank;
			best = c2 + 1;
			best_len = n - (size_t)(c2 + 1 - line);
		}
	}
	if (!best || !cap)
		return 0;
	if (best_len >= cap)
		best_len = cap - 1;
	memcpy(out, best, best_len);
	out[best_len] = '\0';
	return best_len;
}

uint32_t proc_status_nspid(const char *buf, size_t len)
{
	static const char key[] = "\nNSpid:";
	const size_t kl = sizeof(key) - 1;
	const char *line = NULL;

	for (size_t i = 0; i + kl <= len; i++)
		if (!memcmp(buf + i, key, kl)) {
			line = buf + i + kl;
			break;
		}
	if (!line)
		return 0;
	const char *end = memchr(line, '\n', (size_t)(buf + len - line));
	if (!end)
		end = buf + len;
	/* "NSpid:\t1234\t56": the last number is the pid in the innermost namespace */
	const char *last = NULL;
	for (const char *s = line; s < end; s++)
		if (*s >= '0' && *s <= '9' && (s == line || s[-1] < '0' || s[-1] > '9'))
			last = s;
	uint64_t v;
	if (!last || !parse_u64(last, (size_t)(end - last), &v) || v > UINT32_MAX)
		return 0;
	return (uint32_t)v;
}
