/* Holding a process while its probes are attached (see attach_hold.h).
 *
 * Who continues a held process, and why it is always someone:
 *  - the recorder, once what the process needs is attached (or it gave
 *    up on it): attach_hold_release;
 *  - the guardian, for a hold older than ATTACH_HOLD_MAX_MS (the recorder
 *    lives but does not get there: stopped, starved), every 100 ms; the
 *    entry stays, marked expired, so the process is not stopped again at
 *    at its next call while the recorder is behind, and the recorder
 *    counts what may have been missed as not_attached when it gets to it;
 *  - the guardian, at once, when the recorder is gone: its pipe's write end
 *    is the recorder's, so the kernel closes it however the recorder ends.
 *    It first turns holds off, then sweeps for a while: a return probe that
 *    was running when the recorder died makes its entry after sending its
 *    stop (bpf/hold.bpf.h), and the process stops only when that probe has
 *    returned;
 *  - attach_hold_stop, at the end of the recording.
 * A process is continued with SIGCONT and its entry is removed only after
 * that, so a recorder that dies between the two leaves an entry the
 * guardian still sees.  The guardian is the recorder's executable started
 * again (fork + exec of /proc/self/exe with a name of its own, caught by a
 * constructor below before main): it holds nothing but the pipe and two map
 * fds, none of the recorder's BPF links, programs or ring buffer mappings,
 * so no probe outlives the recorder through it.  It leaves the recorder's
 * process group and session and ignores the signals a terminal or a
 * `kill -TERM -PGID` sends, so what stops the recorder does not stop it
 * too; only a SIGKILL aimed at it, at the same moment as the recorder's,
 * leaves a held process stopped (until someone sends it SIGCONT). */
#include "attach/attach_hold.h"
#include "clock.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#define GUARD_ARGV0 "flightrec-hold-guard"

/* SIGCONT first, the entry removed after (unless a new hold replaced it):
 * see the top of this file. */
static void continue_held(int held_fd, uint32_t pid, struct fr_held *v)
{
	struct fr_held now;

	v->state = FR_HELD_RELEASING;
	bpf_map_update_elem(held_fd, &pid, v, BPF_EXIST);
	kill((pid_t)pid, SIGCONT);
	if (!bpf_map_lookup_elem(held_fd, &pid, &now) && now.held_ns == v->held_ns)
		bpf_map_delete_elem(held_fd, &pid);
}

/* The guardian's bound: every process held since cutoff_ns or before goes
 * on, its entry marked expired (not removed: the BPF side then does not
 * hold it again, and the drain, when it gets to it, counts what may have
 * been missed).  final: the recorder is gone or done: everyone goes on and
 * every entry goes. */
static void sweep(int held_fd, uint64_t cutoff_ns, bool final)
{
	uint32_t keys[1024], key, next;
	size_t n = 0;
	const void *prev = NULL;

	/* the keys first: deleting while walking a hash map restarts the walk */
	while (n < sizeof(keys) / sizeof(keys[0]) && !bpf_map_get_next_key(held_fd, prev, &next)) {
		keys[n++] = next;
		key = next;
		prev = &key;
	}
	for (size_t i = 0; i < n; i++) {
		struct fr_held v;
		if (bpf_map_lookup_elem(held_fd, &keys[i], &v))
			continue;
		if (final) {
			continue_held(held_fd, keys[i], &v);
		} else if (v.state == FR_HELD_HOLDING && v.held_ns <= cutoff_ns) {
			v.state = FR_HELD_EXPIRED;
			bpf_map_update_elem(held_fd, &keys[i], &v, BPF_EXIST);
			kill((pid_t)keys[i], SIGCONT);
		}
	}
}

static void set_enabled(int cfg_fd, bool on)
{
	uint32_t zero = 0;
	struct fr_hold_cfg cfg = {.enabled = on};
	bpf_map_update_elem(cfg_fd, &zero, &cfg, BPF_ANY);
}

/* ---- the guardian ---------------------------------------------------------- */

static void guardian_main(int pipe_fd, int held_fd, int cfg_fd, uint64_t max_ns)
{
	static const int ignored[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN,
				      SIGTTOU, SIGPIPE, SIGUSR1, SIGUSR2};
	bool clean = false;

	if (pipe_fd < 0 || held_fd < 0 || cfg_fd < 0)
		_exit(1); /* without its pipe it would never learn the recorder is gone */
	setsid();
	if (chdir("/")) {
		/* nothing depends on the directory: it only must not keep a mount busy */
	}
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		signal(ignored[i], SIG_IGN);
	prctl(PR_SET_NAME, "flightrec-guard", 0, 0, 0);
	for (;;) {
		struct pollfd p = {.fd = pipe_fd, .events = POLLIN};
		if (poll(&p, 1, 100) > 0) {
			char c;
			ssize_t k = read(pipe_fd, &c, 1);
			if (k == 1 && c == 'q') {
				clean = true;
				break;
			}
			if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN))
				break; /* the recorder is gone */
		}
		uint64_t now = mono_ns();
		sweep(held_fd, now > max_ns ? now - max_ns : 0, false);
	}
	set_enabled(cfg_fd, false);
	/* after a clean stop the recorder swept already and its probes are
	 * detached or going: a short sweep.  After its death the kernel takes
	 * a while (~0.2 s here) to take its probes down, and one that read the
	 * old setting may still stop a process: sweep for a bound's length */
	uint64_t until = mono_ns() + (clean ? 20 : ATTACH_HOLD_MAX_MS) * 1000000ull;
	do {
		struct timespec nap = {0, 5000000};
		sweep(held_fd, UINT64_MAX, true);
		nanosleep(&nap, NULL);
	} while (mono_ns() < until);
	_exit(0);
}

/* The guardian's entry: glibc passes argc, argv and envp to constructors,
 * so the guardian runs before the recorder's main and never reaches it. */
__attribute__((constructor)) static void hold_guard_entry(int argc, char **argv, char **envp)
{
	(void)envp;
	if (argc != 5 || !argv || !argv[0] || strcmp(argv[0], GUARD_ARGV0))
		return;
	guardian_main(atoi(argv[1]), atoi(argv[2]), atoi(argv[3]),
		      strtoull(argv[4], NULL, 10) * 1000000ull);
}

/* Decimal of v into buf (between fork and exec: snprintf is not
 * async-signal-safe). */
static void decimal(char *buf, unsigned long long v)
{
	char tmp[24];
	int n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (int i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = '\0';
}

static int start_guardian(struct attach_hold *h, char *err, size_t errlen)
{
	int p[2], e[2];

	if (pipe2(p, O_CLOEXEC) || pipe2(e, O_CLOEXEC)) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		close(p[0]), close(p[1]), close(e[0]), close(e[1]);
		return -1;
	}
	if (pid == 0) {
		/* a copy of a threaded process: system calls only until exec */
		char a[24], b[24], c[24], m[24];
		char *argv[] = {GUARD_ARGV0, a, b, c, m, NULL};
		char *envp[] = {NULL};
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			/* nobody waits on the recorder's output because of us */
			dup2(null, 0), dup2(null, 1), dup2(null, 2);
		}
		/* dup: copies without O_CLOEXEC, the only fds that cross exec */
		decimal(a, (unsigned long long)dup(p[0]));
		decimal(b, (unsigned long long)dup(h->held_fd));
		decimal(c, (unsigned long long)dup(h->cfg_fd));
		decimal(m, ATTACH_HOLD_MAX_MS);
		execve("/proc/self/exe", argv, envp);
		int x = errno;
		if (write(e[1], &x, sizeof(x)) < 0)
			_exit(127);
		_exit(127);
	}
	close(p[0]);
	close(e[1]);
	int x = 0;
	ssize_t n = read(e[0], &x, sizeof(x)); /* EOF: the exec happened */
	close(e[0]);
	if (n == (ssize_t)sizeof(x)) {
		snprintf(err, errlen, "cannot start the guardian (/proc/self/exe): %s", strerror(x));
		waitpid(pid, NULL, 0);
		close(p[1]);
		return -1;
	}
	h->guardian = pid;
	h->guard_fd = p[1];
	return 0;
}

/* ---- the recorder's side ----------------------------------------------------- */

void attach_hold_init(struct attach_hold *h)
{
	memset(h, 0, sizeof(*h));
	h->held_fd = h->ready_fd = h->cfg_fd = h->guard_fd = -1;
}

/* The hold's maps, found through the maps prog uses (the drain has the
 * rdma programs, not their object). */
static int find_maps(struct attach_hold *h, int prog_fd, const char *prefix, char *err,
		     size_t errlen)
{
	uint32_t ids[64];
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);
	char held[BPF_OBJ_NAME_LEN + 32], ready[BPF_OBJ_NAME_LEN + 32], cfg[BPF_OBJ_NAME_LEN + 32];

	snprintf(held, sizeof(held), "%s_held", prefix);
	snprintf(ready, sizeof(ready), "%s_ready", prefix);
	snprintf(cfg, sizeof(cfg), "%s_hold_cfg", prefix);
	memset(&info, 0, sizeof(info));
	info.nr_map_ids = sizeof(ids) / sizeof(ids[0]);
	info.map_ids = (uint64_t)(uintptr_t)ids;
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len)) {
		snprintf(err, errlen, "cannot read the maps of the %s hold's program: %s", prefix,
			 strerror(errno));
		return -1;
	}
	uint32_t n = info.nr_map_ids < 64 ? info.nr_map_ids : 64;
	for (uint32_t i = 0; i < n; i++) {
		struct bpf_map_info mi;
		uint32_t ml = sizeof(mi);
		int fd = bpf_map_get_fd_by_id(ids[i]);
		int *slot = NULL;
		if (fd < 0)
			continue;
		memset(&mi, 0, sizeof(mi));
		if (!bpf_obj_get_info_by_fd(fd, &mi, &ml)) {
			/* map names are cut to BPF_OBJ_NAME_LEN - 1 characters */
			if (!strncmp(mi.name, held, BPF_OBJ_NAME_LEN - 1))
				slot = &h->held_fd;
			else if (!strncmp(mi.name, ready, BPF_OBJ_NAME_LEN - 1))
				slot = &h->ready_fd;
			else if (!strncmp(mi.name, cfg, BPF_OBJ_NAME_LEN - 1))
				slot = &h->cfg_fd;
		}
		if (slot && *slot < 0)
			*slot = fd;
		else
			close(fd);
	}
	if (h->held_fd < 0 || h->ready_fd < 0 || h->cfg_fd < 0) {
		snprintf(err, errlen, "the program has no %s hold maps", prefix);
		return -1;
	}
	return 0;
}

static void close_maps(struct attach_hold *h)
{
	int *fds[3] = {&h->held_fd, &h->ready_fd, &h->cfg_fd};
	for (int i = 0; i < 3; i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

int attach_hold_start(struct attach_hold *h, struct bpf_program *prog, const char *maps_prefix,
		      char *err, size_t errlen)
{
	int prog_fd = prog ? bpf_program__fd(prog) : -1;

	if (prog_fd < 0) {
		snprintf(err, errlen, "no %s return program", maps_prefix);
		return -1;
	}
	if (find_maps(h, prog_fd, maps_prefix, err, errlen) || start_guardian(h, err, errlen)) {
		close_maps(h);
		return -1;
	}
	set_enabled(h->cfg_fd, true);
	h->enabled = true;
	return 0;
}

void attach_hold_mark_ready(struct attach_hold *h, const void *key)
{
	uint8_t one = 1;
	if (h->ready_fd >= 0)
		bpf_map_update_elem(h->ready_fd, key, &one, BPF_ANY);
}

bool attach_hold_release(struct attach_hold *h, uint32_t pid, uint64_t held_ns)
{
	struct fr_held v;

	if (h->held_fd < 0 || bpf_map_lookup_elem(h->held_fd, &pid, &v) || v.held_ns != held_ns)
		return false;
	if (v.state == FR_HELD_EXPIRED) {
		/* seen now: it may be held again */
		bpf_map_delete_elem(h->held_fd, &pid);
		return false;
	}
	if (v.state != FR_HELD_HOLDING)
		return false;
	continue_held(h->held_fd, pid, &v);
	return true;
}

void attach_hold_stop(struct attach_hold *h)
{
	if (h->cfg_fd >= 0)
		set_enabled(h->cfg_fd, false);
	if (h->held_fd >= 0)
		sweep(h->held_fd, UINT64_MAX, true);
	if (h->guard_fd >= 0) {
		if (write(h->guard_fd, "q", 1) < 0) {
			/* it is gone already: closing the pipe is all it would need */
		}
		close(h->guard_fd);
		h->guard_fd = -1;
		waitpid(h->guardian, NULL, 0);
	}
	close_maps(h);
	h->enabled = false;
}
