/* Flight-recorder mode's steps (see ring_mode.h). */
#include "ring/ring_mode.h"

#include "clock.h"

#include <errno.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>

extern char **environ;

int ring_mode_open(struct ring_mode *m, const struct ring_mode_config *o,
		   const struct frec_writer_opts *wo, struct frec_writer **out,
		   struct frec_error *err)
{
	memset(m, 0, sizeof(*m));
	struct frec_ring_opts ro = { .bytes = o->ring_bytes, .evicted = live_allocs_evicted,
				     .ctx = &m->live };
	if (frec_writer_open_ring(wo, &ro, out, err))
		return -1;
	m->writer = *out;
	m->armed = o->triggers;
	m->on_snapshot = o->on_snapshot;
	triggers_init(&m->triggers, o->triggers, (uint64_t)(o->trigger_delay_s * 1e9));
	m->triggers.ring = m->writer;
	if ((o->triggers & TRIGGER_BIT(FR_TRIGGER_EXIT)) && !(o->triggers & TRIGGER_EXIT_ALL)) {
		job_pids_init(&m->job);
		m->job_on = true;
		m->triggers.job = &m->job;
	}
	m->open = true;
	return 0;
}

int ring_mode_watch(struct ring_mode *m, const struct ring_mode_config *o, struct bpf_probes *probes)
{
	/* the poll is set up whatever is armed: every snapshot carries the
	 * calls in flight (a SIGUSR2 one taken during a hang names it too) */
	if (hang_poll_init(&m->hang, probes, (uint64_t)(o->hang_timeout_s * 1e9)))
		return -1;
	if (m->armed & TRIGGER_BIT(FR_TRIGGER_HANG))
		m->triggers.watch = &m->hang.watch;
	return 0;
}

void ring_mode_on_event(void *ctx, const struct fr_ev_common *ev)
{
	struct ring_mode *m = ctx;
	triggers_on_event(&m->triggers, ev);
}

void ring_mode_start(struct ring_mode *m, const struct ring_mode_config *o,
		     const struct frec_writer_opts *wo, struct drain *drain,
		     struct proc_track *track, const struct frec_file_info *info,
		     track_stats_fn stats_fn, void *stats_ctx, uint64_t file_start_ns)
{
	struct snapshots *sn = &m->snaps;
	sn->output = o->output;
	sn->max_count = o->max_snapshots;
	sn->max_bytes = o->max_snapshot_bytes;
	sn->interval_ns = (uint64_t)(o->snapshot_interval_s * 1e9);
	sn->set_owner = wo->set_owner;
	sn->owner_uid = wo->owner_uid;
	sn->owner_gid = wo->owner_gid;
	sn->quiet = o->quiet;
	sn->writer = m->writer;
	sn->drain = drain;
	sn->track = track;
	sn->live = &m->live;
	sn->info = info;
	sn->stats_fn = stats_fn;
	sn->stats_ctx = stats_ctx;
	sn->file_start_ns = file_start_ns;
	sn->extra_meta = hang_poll_inflight_meta;
	sn->extra_ctx = &m->hang;
	sn->cpu = &m->cpu;
	m->status_every_ns = o->quiet ? 0 : (uint64_t)(o->status_interval_s * 1e9);
	m->status_last_ns = file_start_ns;
}

void ring_mode_status(struct ring_mode *m, uint64_t now_ns, uint64_t procs, uint64_t exited,
		      double cpu_s)
{
	if (!m->status_every_ns || now_ns - m->status_last_ns < m->status_every_ns)
		return;
	struct frec_ring_stats rs;
	frec_writer_ring_stats(m->writer, &rs);
	double dt = (now_ns - m->status_last_ns) / 1e9;
	fprintf(stderr, "flightrec: status at %.0f s: %" PRIu64 " processes started (%" PRIu64
		" in the last %.0f s), %" PRIu64 " exited; %u snapshots, %u triggers suppressed, "
		"%" PRIu64 " failures of processes not the job; ring %.1f MiB of events, %.1f MiB "
		"of metadata (of %" PRIu64 " processes; %" PRIu64 " retired); recorder CPU %.1f%% "
		"of one core\n", (now_ns - m->snaps.file_start_ns) / 1e9, procs,
		procs - m->status_procs, dt, exited, m->snaps.written, m->snaps.suppressed_total,
		m->exits_not_job, rs.event_bytes / 1048576.0, rs.meta_bytes / 1048576.0,
		rs.meta_processes, rs.pids_retired, dt > 0 ? 100.0 * (cpu_s - m->status_cpu_s) / dt : 0);
	m->status_last_ns = now_ns;
	m->status_procs = procs;
	m->status_cpu_s = cpu_s;
}

void ring_mode_job_root(struct ring_mode *m, uint32_t pid)
{
	if (m->job_on)
		job_pids_mark(&m->job, pid, JOB_ROOT, 0, 0);
}

void ring_mode_signal(struct ring_mode *m, uint64_t now_ns)
{
	struct trigger_hit h = { .kind = FR_TRIGGER_SIGNAL, .at_ns = now_ns, .due_ns = now_ns };
	snprintf(h.detail, sizeof(h.detail), "SIGUSR2 to the recorder");
	triggers_raise(&m->triggers, &h);
}

static void reap_hooks(struct ring_mode *m)
{
	for (size_t i = 0; i < sizeof(m->hooks) / sizeof(m->hooks[0]); i++)
		if (m->hooks[i] > 0 && waitpid(m->hooks[i], NULL, WNOHANG) != 0)
			m->hooks[i] = 0;
}

/* --on-snapshot: the user's command, with what the snapshot is in its
 * environment, not waited for (it may signal a hundred nodes).  Not after
 * SIGUSR2's snapshots: a peer's command signalling this recorder back
 * would otherwise never end. */
static void run_hook(struct ring_mode *m, const struct trigger_hit *hit)
{
	size_t slot = sizeof(m->hooks) / sizeof(m->hooks[0]);
	reap_hooks(m);
	for (size_t i = 0; i < sizeof(m->hooks) / sizeof(m->hooks[0]); i++)
		if (m->hooks[i] <= 0)
			slot = i;
	if (slot == sizeof(m->hooks) / sizeof(m->hooks[0])) {
		fprintf(stderr, "flightrec: --on-snapshot: 16 commands still running; not started "
			"for %s\n", m->snaps.last_path);
		return;
	}
	char pid[32];
	snprintf(pid, sizeof(pid), "%u", hit->pid);
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + 4, sizeof(*env));
	char *vars[3] = { NULL, NULL, NULL };
	if (!env || asprintf(&vars[0], "FLIGHTREC_SNAPSHOT=%s", m->snaps.last_path) < 0 ||
	    asprintf(&vars[1], "FLIGHTREC_TRIGGER=%s", trigger_name(hit->kind)) < 0 ||
	    asprintf(&vars[2], "FLIGHTREC_TRIGGER_PID=%s", pid) < 0) {
		fprintf(stderr, "flightrec: --on-snapshot: out of memory\n");
		goto out;
	}
	memcpy(env, environ, n * sizeof(*env));
	env[n] = vars[0];
	env[n + 1] = vars[1];
	env[n + 2] = vars[2];
	char *argv[] = { "sh", "-c", (char *)m->on_snapshot, NULL };
	int e = posix_spawn(&m->hooks[slot], "/bin/sh", NULL, NULL, argv, env);
	if (e) {
		m->hooks[slot] = 0;
		fprintf(stderr, "flightrec: --on-snapshot: cannot run /bin/sh: %s\n", strerror(e));
	}
out:
	for (int i = 0; i < 3; i++)
		free(vars[i]);
	free(env);
}

static void write_due(struct ring_mode *m, uint64_t now_ns)
{
	struct trigger_hit hit;
	uint32_t merged;
	uint16_t retry;
	while (triggers_take_due(&m->triggers, now_ns, &hit, &merged, &retry)) {
		int wrote = snapshot_take(&m->snaps, &hit, merged, retry);
		frec_writer_ring_hold(m->writer, 0);
		if (wrote == 1 && m->on_snapshot && hit.kind != FR_TRIGGER_SIGNAL)
			run_hook(m, &hit);
	}
}

static const char *job_reason(unsigned why)
{
	if (why & JOB_ROOT)
		return "the command's own process";
	if (why & JOB_LIB)
		return "it maps a CUDA, NCCL or RDMA library";
	if (why & JOB_EVENTS)
		return "it made CUDA, NCCL or RDMA calls";
	return "a rank of the launcher";
}

static void say_exits_not_job(struct ring_mode *m, uint64_t now_ns, bool force)
{
	/* the first at once, then with the status line's period (the count
	 * is in it too): a job that runs failing helpers all week says so in
	 * kilobytes */
	uint64_t every = m->status_every_ns ? m->status_every_ns
			 : m->snaps.interval_ns ? m->snaps.interval_ns : 30000000000ull;
	if (!m->exits_not_job_unsaid || m->snaps.quiet ||
	    (!force && m->exits_said_ns && now_ns - m->exits_said_ns < every))
		return;
	fprintf(stderr, "flightrec: exit: %" PRIu64 " process%s that %s not the job failed "
		"(the latest: %s); no snapshot for them (--trigger exit=all for every process)\n",
		m->exits_not_job_unsaid, m->exits_not_job_unsaid == 1 ? "" : "es",
		m->exits_not_job_unsaid == 1 ? "is" : "are", m->exit_latest.detail);
	m->exits_not_job_unsaid = 0;
	m->exits_said_ns = now_ns;
}

/* Each failed exit is the job's or not once the tracking thread has handled
 * everything up to it: its mappings and environment are then known. */
static void decide_exits(struct ring_mode *m, uint64_t now_ns)
{
	struct trigger_hit *v;
	size_t n = triggers_take_exits(&m->triggers, &v);
	if (n && m->snaps.track && proc_track_flush_sync(m->snaps.track, 5000000000ull))
		fprintf(stderr, "flightrec: exit: the tracking thread did not catch up within 5 s; "
			"a failed process is taken for the job's when it is not known\n");
	for (size_t i = 0; i < n; i++) {
		unsigned why = 0;
		if (job_pids_is_job(&m->job, v[i].pid, &why)) {
			size_t l = strlen(v[i].detail);
			snprintf(v[i].detail + l, sizeof(v[i].detail) - l, "; the job: %s",
				 job_reason(why));
			triggers_raise(&m->triggers, &v[i]);
		} else {
			m->exits_not_job++;
			m->exits_not_job_unsaid++;
			m->exit_latest = v[i];
		}
		job_pids_forget(&m->job, v[i].pid);
	}
	free(v);
	say_exits_not_job(m, now_ns, false);
}

void ring_mode_poll(struct ring_mode *m, uint64_t now_ns)
{
	reap_hooks(m);
	if (now_ns - m->cpu_sampled_ns >= 1000000000ull) {
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		cpu_history_add(&m->cpu, now_ns,
				(uint64_t)ru.ru_utime.tv_sec * 1000000000ull +
					(uint64_t)ru.ru_utime.tv_usec * 1000ull,
				(uint64_t)ru.ru_stime.tv_sec * 1000000000ull +
					(uint64_t)ru.ru_stime.tv_usec * 1000ull);
		m->cpu_sampled_ns = now_ns;
	}
	if (m->job_on)
		decide_exits(m, now_ns);
	if (m->armed & TRIGGER_BIT(FR_TRIGGER_HANG))
		hang_poll_tick(&m->hang, &m->triggers, now_ns);
	write_due(m, now_ns);
	uint64_t every = m->snaps.interval_ns ? m->snaps.interval_ns : 30000000000ull;
	if (m->snaps.suppressed_unsaid && now_ns - m->snaps.suppressed_said_ns >= every)
		snapshot_say_suppressed(&m->snaps);
}

void ring_mode_last(struct ring_mode *m, struct drain *drain)
{
	/* the kernel's last events may raise one (the OOM that ended the job) */
	drain_flush_sync(drain, 2000000000ull);
	if (m->job_on) {
		decide_exits(m, mono_ns());
		say_exits_not_job(m, mono_ns(), true);
	}
	write_due(m, UINT64_MAX);
	snapshot_say_suppressed(&m->snaps);
}

void ring_mode_report(const struct ring_mode *m, const struct frec_ring_stats *rs,
		      uint64_t events, const char *output, double cpu_s, double lifetime_s)
{
	const struct snapshots *sn = &m->snaps;
	fprintf(stderr, "flightrec: ring mode: %u snapshot%s written (%.1f MiB), %u trigger%s "
		"suppressed; %" PRIu64 " events went through the ring; %s itself is not written; "
		"recorder CPU %.2f s in its %.2f s (%.1f%% of one core)\n",
		sn->written, sn->written == 1 ? "" : "s", sn->bytes_written / 1048576.0,
		sn->suppressed_total, sn->suppressed_total == 1 ? "" : "s", events, output, cpu_s,
		lifetime_s, lifetime_s > 0 ? 100.0 * cpu_s / lifetime_s : 0.0);
	fprintf(stderr, "flightrec: ring mode: memory at the end: %.1f MiB of events (%" PRIu64
		" chunks; %" PRIu64 " left the ring, %" PRIu64 " of them early so that exited "
		"processes could retire), %.1f MiB of metadata, %.1f MiB of records of "
		"the %zu allocations live at the window's start\n", rs->event_bytes / 1048576.0,
		rs->event_chunks, rs->chunks_evicted, rs->chunks_evicted_exited,
		rs->meta_bytes / 1048576.0,
		m->live.bytes_held / 1048576.0, m->live.table.count);
	/* what bounds the memory of a long run: the metadata kept is that of
	 * the processes alive or still in the window, not of every one seen */
	fprintf(stderr, "flightrec: ring mode: metadata kept: %" PRIu64 " records, of %" PRIu64
		" processes; %" PRIu64 " exited processes retired (%" PRIu64 " records), %" PRIu64
		" waiting for their events to leave the ring; %" PRIu64 " compactions\n",
		rs->meta_records, rs->meta_processes, rs->pids_retired, rs->records_retired,
		rs->retire_waiting, rs->compactions);
}

void ring_mode_free(struct ring_mode *m)
{
	if (!m->open)
		return;
	/* a command still running is the user's: it goes on, reaped by init */
	live_allocs_free(&m->live);
	triggers_destroy(&m->triggers);
	if (m->job_on)
		job_pids_destroy(&m->job);
	m->job_on = false;
	hang_poll_destroy(&m->hang);
	m->open = false;
}
