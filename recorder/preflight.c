/* Pre-run checks (see preflight.h). */
#include "preflight.h"
#include "frec_format.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static int has_cap(const struct __user_cap_data_struct d[2], int cap)
{
	return (d[cap / 32].effective >> (cap % 32)) & 1;
}

static int privileged(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {{0}};

	if (geteuid() == 0)
		return 1;
	if (syscall(SYS_capget, &h, d))
		return 0;
	return has_cap(d, CAP_SYS_ADMIN) ||
	       (has_cap(d, CAP_BPF) && has_cap(d, CAP_PERFMON));
}

/* The cgroup v2 mount point that contains path, for the relative path. */
static const char *cgroup_relative(const char *real)
{
	static char rel[PATH_MAX];
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[4096], best[PATH_MAX] = "";

	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f)) {
		char mnt[PATH_MAX], fstype[64];
		char *sep = strstr(line, " - ");
		if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
		    sscanf(sep + 3, "%63s", fstype) != 1 || strcmp(fstype, "cgroup2"))
			continue;
		size_t n = strlen(mnt);
		if (!strncmp(real, mnt, n) && (real[n] == '/' || real[n] == 0) &&
		    n > strlen(best))
			snprintf(best, sizeof(best), "%s", mnt);
	}
	fclose(f);
	if (!best[0])
		return NULL;
	snprintf(rel, sizeof(rel), "%s", real + strlen(best));
	if (!rel[0])
		snprintf(rel, sizeof(rel), "/");
	return rel;
}

/* 0 when execvp would find an executable file for cmd, else errno (what
 * execvp would say): the command is checked before anything is loaded, so
 * a typo costs neither the BPF load nor an empty trace. */
static int command_error(const char *cmd)
{
	struct stat st;
	if (strchr(cmd, '/')) {
		if (stat(cmd, &st))
			return errno;
		if (S_ISDIR(st.st_mode))
			return EACCES;
		return access(cmd, X_OK) ? errno : 0;
	}
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/bin:/usr/bin";
	int found_unrunnable = 0;
	for (const char *p = path;;) {
		const char *end = strchr(p, ':');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		char full[PATH_MAX];
		/* an empty PATH entry means the current directory */
		if (snprintf(full, sizeof(full), "%.*s%s%s", (int)n, p, n ? "/" : "", cmd) <
		    (int)sizeof(full) && !stat(full, &st) && !S_ISDIR(st.st_mode)) {
			if (!access(full, X_OK))
				return 0;
			found_unrunnable = 1;
		}
		if (!end)
			break;
		p = end + 1;
	}
	return found_unrunnable ? EACCES : ENOENT;
}

/* The recorder runs as root: it writes its trace only over nothing, a file
 * that is a trace already, or (--force) another regular file; never
 * through a symbolic link, never over a device or a directory.  0, or
 * -errno with fe filled. */
static int output_allowed(const struct record_opts *o, struct frec_error *fe)
{
	struct stat st;
	if (o->ring_bytes) {
		/* FILE is never written, only FILE-N beside it, each a new file */
		char dir[4096];
		const char *slash = strrchr(o->output, '/');
		snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - o->output ? slash - o->output : 1) : 1,
			 slash ? o->output : ".");
		errno = 0;
		if (stat(dir, &st) || !S_ISDIR(st.st_mode) || access(dir, W_OK | X_OK)) {
			int e = errno ? errno : ENOTDIR;
			snprintf(fe->what, sizeof(fe->what), "cannot write snapshots into %.180s: %s",
				 dir, strerror(e));
			return -e;
		}
		return 0;
	}
	if (lstat(o->output, &st)) {
		if (errno == ENOENT)
			return 0;
		int e = errno;
		snprintf(fe->what, sizeof(fe->what), "cannot use %s: %s", o->output, strerror(e));
		return -e;
	}
	if (S_ISLNK(st.st_mode)) {
		snprintf(fe->what, sizeof(fe->what), "%s is a symbolic link; flightrec never writes through one "
			 "(give the real path)", o->output);
		return -ELOOP;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(fe->what, sizeof(fe->what), "%s exists and is not a regular file", o->output);
		return -EEXIST;
	}
	char magic[8] = {0};
	int fd = open(o->output, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	ssize_t n = fd < 0 ? -1 : read(fd, magic, sizeof(magic));
	if (fd >= 0)
		close(fd);
	int is_trace = n == (ssize_t)sizeof(magic) && !memcmp(magic, FR_FILE_MAGIC, sizeof(magic));
	if (st.st_size && !is_trace && !o->force) {
		snprintf(fe->what, sizeof(fe->what), "%s exists and is not a flightrec trace; pass --force to "
			 "replace it", o->output);
		return -EEXIST;
	}
	return 0;
}

int preflight(const struct record_opts *o, struct preflight_out *out, struct frec_error *fe)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if (!privileged()) {
		snprintf(fe->what, sizeof(fe->what), "recording needs root (or CAP_BPF and CAP_PERFMON); "
			 "run it with sudo");
		return -EPERM;
	}
	if ((rc = output_allowed(o, fe)))
		return rc;
	if (o->command) {
		int e = command_error(o->command[0]);
		if (e) {
			snprintf(fe->what, sizeof(fe->what), "cannot run %s: %s", o->command[0], strerror(e));
			out->command_unrunnable = true;
			return -e;
		}
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		snprintf(fe->what, sizeof(fe->what), "this kernel has no BTF (/sys/kernel/btf/vmlinux is "
			 "missing); flightrec needs a kernel built with CONFIG_DEBUG_INFO_BTF=y");
		return -ENOTSUP;
	}
	for (int i = 0; i < o->n_pids; i++) {
		if (kill((pid_t)o->pids[i], 0) && errno == ESRCH) {
			snprintf(fe->what, sizeof(fe->what), "no process with pid %u", o->pids[i]);
			return -ESRCH;
		}
	}
	if (o->cgroup_path) {
		struct statfs sfs;
		struct stat st;
		char real[PATH_MAX];
		if (!realpath(o->cgroup_path, real) || stat(real, &st) || !S_ISDIR(st.st_mode)) {
			int e = errno ? errno : ENOTDIR;
			snprintf(fe->what, sizeof(fe->what), "cannot use cgroup %s: %s", o->cgroup_path,
				 strerror(e));
			return -e;
		}
		if (statfs(real, &sfs) || sfs.f_type != CGROUP2_SUPER_MAGIC) {
			snprintf(fe->what, sizeof(fe->what), "%s is not a cgroup v2 directory (flightrec filters "
				 "by cgroup v2 id; look under the cgroup2 mount, e.g. "
				 "/sys/fs/cgroup)", o->cgroup_path);
			return -ENOTDIR;
		}
		out->cgroup_id = st.st_ino; /* a cgroup v2 id is its directory's inode */
		out->cgroup_rel = cgroup_relative(real);
	}
	return 0;
}
