/* Flight-recorder snapshots (see snapshot.h). */
#include "ring/snapshot.h"
#include "clock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* output split into directory, stem and extension (".frec"; "" when none:
 * a leading dot is part of the stem). */
static void split(const char *output, char *dir, size_t dlen, char *stem, size_t slen,
		  const char **ext)
{
	const char *slash = strrchr(output, '/');
	const char *base = slash ? slash + 1 : output;
	if (slash)
		snprintf(dir, dlen, "%.*s", (int)(slash - output ? slash - output : 1), output);
	else
		snprintf(dir, dlen, ".");
	const char *dot = strrchr(base, '.');
	if (!dot || dot == base)
		dot = base + strlen(base);
	snprintf(stem, slen, "%.*s", (int)(dot - base), base);
	*ext = dot;
}

/* The N of "stem-N.ext", 0 when name is not one. */
static unsigned long number_of(const char *name, const char *stem, const char *ext)
{
	size_t sl = strlen(stem), el = strlen(ext), nl = strlen(name);
	if (nl <= sl + 1 + el || strncmp(name, stem, sl) || name[sl] != '-' ||
	    strcmp(name + nl - el, ext))
		return 0;
	unsigned long n = 0;
	for (const char *p = name + sl + 1; p < name + nl - el; p++) {
		if (*p < '0' || *p > '9' || n > 100000000)
			return 0;
		n = n * 10 + (unsigned long)(*p - '0');
	}
	return n;
}

int snapshot_create(const char *output, uint32_t *number, char *path, size_t len)
{
	char dir[4096], stem[1024];
	const char *ext;
	split(output, dir, sizeof(dir), stem, sizeof(stem), &ext);
	unsigned long highest = 0;
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	struct dirent *e;
	while ((e = readdir(d))) {
		unsigned long n = number_of(e->d_name, stem, ext);
		if (n > highest)
			highest = n;
	}
	closedir(d);
	/* one made meanwhile (another recorder on the same FILE) is skipped */
	for (unsigned long n = highest + 1; n < highest + 1000; n++) {
		const char *slash = strrchr(output, '/');
		int w = slash ? snprintf(path, len, "%s/%s-%lu%s", dir, stem, n, ext)
			      : snprintf(path, len, "%s-%lu%s", stem, n, ext);
		if (w < 0 || (size_t)w >= len)
			return -ENAMETOOLONG;
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0) {
			*number = (uint32_t)n;
			return fd;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

void cpu_history_add(struct cpu_history *h, uint64_t mono_ns, uint64_t user_ns, uint64_t sys_ns)
{
	h->mono_ns[h->next] = mono_ns;
	h->user_ns[h->next] = user_ns;
	h->sys_ns[h->next] = sys_ns;
	h->next = (h->next + 1) % CPU_HISTORY;
	if (h->n < CPU_HISTORY)
		h->n++;
}

bool cpu_history_at(const struct cpu_history *h, uint64_t mono_ns, uint64_t *at_ns,
		    uint64_t *user_ns, uint64_t *sys_ns)
{
	if (!h->n)
		return false;
	unsigned oldest = (h->next + CPU_HISTORY - h->n) % CPU_HISTORY, at = oldest;
	for (unsigned i = 0; i < h->n; i++) {
		unsigned k = (oldest + i) % CPU_HISTORY;
		if (h->mono_ns[k] > mono_ns)
			break;
		at = k;
	}
	*at_ns = h->mono_ns[at];
	*user_ns = h->user_ns[at];
	*sys_ns = h->sys_ns[at];
	return true;
}

static double secs(const struct snapshots *s, uint64_t t)
{
	return t > s->file_start_ns ? (t - s->file_start_ns) / 1e9 : 0.0;
}

void snapshot_say_suppressed(struct snapshots *s)
{
	if (!s->suppressed_unsaid || s->quiet)
		return;
	if (s->suppressed_unsaid == 1)
		fprintf(stderr, "flightrec: %s at %.3f s: no snapshot (%s)\n", s->unsaid_kind,
			s->unsaid_at, s->unsaid_why);
	else
		fprintf(stderr, "flightrec: %u more triggers wrote no snapshot (the latest: %s at "
			"%.3f s, %s)\n", s->suppressed_unsaid, s->unsaid_kind, s->unsaid_at, s->unsaid_why);
	s->suppressed_unsaid = 0;
	s->suppressed_said_ns = mono_ns();
}

/* Said at once the first time, then at most once per --snapshot-interval
 * with their number: a churning job's helpers failing every second must
 * not fill the log. */
static void suppress(struct snapshots *s, const struct trigger_hit *hit, const char *why)
{
	s->suppressed++;
	s->suppressed_total++;
	s->suppressed_unsaid++;
	snprintf(s->unsaid_why, sizeof(s->unsaid_why), "%s", why);
	snprintf(s->unsaid_kind, sizeof(s->unsaid_kind), "%s", trigger_name(hit->kind));
	s->unsaid_at = secs(s, hit->at_ns);
	uint64_t every = s->interval_ns ? s->interval_ns : 30000000000ull;
	if (!s->suppressed_said_ns || mono_ns() - s->suppressed_said_ns >= every)
		snapshot_say_suppressed(s);
}

int snapshot_take(struct snapshots *s, const struct trigger_hit *hit, uint32_t merged,
		  uint16_t oom_retry)
{
	char why[160];
	uint64_t now = mono_ns();
	if (s->max_count && s->written >= s->max_count) {
		snprintf(why, sizeof(why), "--max-snapshots %u reached", s->max_count);
		suppress(s, hit, why);
		return 0;
	}
	struct frec_ring_stats rs;
	frec_writer_ring_stats(s->writer, &rs);
	uint64_t estimate = rs.event_bytes + rs.meta_bytes;
	if (s->max_bytes && s->bytes_written + estimate > s->max_bytes) {
		snprintf(why, sizeof(why), "--max-snapshot-bytes: %.1f MiB written, this one about "
			 "%.1f MiB more", s->bytes_written / 1048576.0, estimate / 1048576.0);
		suppress(s, hit, why);
		return 0;
	}
	/* SIGUSR2 is a person asking: never rate-limited */
	uint64_t *last = &s->last_ns[hit->kind & 7];
	if (hit->kind != FR_TRIGGER_SIGNAL && *last && s->interval_ns &&
	    now - *last < s->interval_ns) {
		snprintf(why, sizeof(why), "the last %s snapshot was %.1f s ago; "
			 "--snapshot-interval %.0f", trigger_name(hit->kind), (now - *last) / 1e9,
			 s->interval_ns / 1e9);
		suppress(s, hit, why);
		return 0;
	}

	/* everything up to now into the ring, metadata after the events that
	 * need it (the drain reports new stacks to the symbol collector) */
	if (drain_flush_sync(s->drain, 2000000000ull) || proc_track_flush_sync(s->track, 5000000000ull))
		fprintf(stderr, "flightrec: snapshot: a thread did not seal its chunk within "
			"seconds; the snapshot may miss its latest events\n");

	char path[4096];
	uint32_t number = 0;
	int fd = snapshot_create(s->output, &number, path, sizeof(path));
	if (fd < 0) {
		fprintf(stderr, "flightrec: cannot create a snapshot next to %s: %s\n", s->output,
			strerror(-fd));
		return -1;
	}
	if (s->set_owner && fchown(fd, (uid_t)s->owner_uid, (gid_t)s->owner_gid))
		fprintf(stderr, "flightrec: %s: cannot give it to uid %u: %s\n", path, s->owner_uid,
			strerror(errno));

	struct recorder_stats st;
	s->stats_fn(s->stats_ctx, &st);
	struct fr_end end = { .cpu_user_ns = st.cpu_user_ns, .cpu_sys_ns = st.cpu_sys_ns };
	/* the CPU of the window the snapshot holds, at the rate of the
	 * seconds around it (format/SPEC.md 8.1): the whole run's CPU over the
	 * window's span said 157-192% of a core */
	uint64_t t0, u0, s0, now_cpu = mono_ns();
	if (s->cpu && rs.chunks_evicted && rs.window_first_ns && rs.window_first_ns < now_cpu &&
	    cpu_history_at(s->cpu, rs.window_first_ns, &t0, &u0, &s0) && t0 < now_cpu) {
		double scale = (double)(now_cpu - rs.window_first_ns) / (double)(now_cpu - t0);
		end.cpu_user_ns = st.cpu_user_ns > u0 ? (uint64_t)((st.cpu_user_ns - u0) * scale) : 0;
		end.cpu_sys_ns = st.cpu_sys_ns > s0 ? (uint64_t)((st.cpu_sys_ns - s0) * scale) : 0;
	}
	struct timespec real;
	clock_gettime(CLOCK_REALTIME, &real);
	end.end_mono_ns = mono_ns();
	end.end_real_ns = (uint64_t)real.tv_sec * 1000000000ull + (uint64_t)real.tv_nsec;
	uint8_t *extra = NULL;
	uint32_t extra_count = 0;
	size_t extra_len = s->extra_meta ? s->extra_meta(s->extra_ctx, &extra, &extra_count) : 0;

	char detail[300];
	snprintf(detail, sizeof(detail), "%s%s", hit->detail[0] ? hit->detail : trigger_name(hit->kind),
		 merged ? " (and more triggers while it was pending)" : "");
	struct frec_snapshot req = {
		.fd = fd, .name = path, .info = s->info,
		.carry = live_allocs_carry, .carry_ctx = s->live,
		.detail = detail,
		.meta = extra, .meta_len = extra_len, .meta_count = extra_count,
		.end = &end, .probes = st.probes, .n_probes = st.n_probes,
		.drops = st.drops, .n_drops = st.n_drops,
	};
	req.rec.trigger = hit->kind;
	req.rec.trigger_ns = hit->at_ns;
	req.rec.number = number;
	req.rec.oom_retry = oom_retry;
	req.rec.suppressed = s->suppressed + merged;
	req.rec.pid = hit->pid;
	struct frec_snapshot_result res;
	struct frec_error err = { 0 };
	int rc = frec_writer_snapshot(s->writer, &req, &res, &err);
	free(extra);
	struct stat sb;
	uint64_t size = stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
	s->bytes_written += size;
	*last = now;
	if (rc) {
		char buf[600];
		fprintf(stderr, "flightrec: snapshot %s is incomplete: %s\n", path,
			frec_error_str(&err, buf, sizeof(buf)));
		return -1;
	}
	s->written++;
	s->suppressed = 0;
	snprintf(s->last_path, sizeof(s->last_path), "%s", path);
	/* the first line is the contract other tools read (CLI.md) */
	fprintf(stderr, "flightrec: snapshot %s (%s at %.3f s)\n", path, trigger_name(hit->kind),
		secs(s, hit->at_ns));
	if (!s->quiet)
		fprintf(stderr, "flightrec:   %s; events %.3f-%.3f s, %.1f MiB\n", detail,
			secs(s, res.window_first_ns), secs(s, res.window_last_ns), size / 1048576.0);
	return 1;
}
