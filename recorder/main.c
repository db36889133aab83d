/* flightrec: the recorder.  Orders the pieces of a recording; the work
 * itself lives in the stage folders (README "Layout").  A recording's life,
 * each edge the call that takes it there (cmd_record, then finish):
 *
 *   PARSED    --preflight------------------------> CHECKED   (root, BTF,
 *                                                              targets, FILE)
 *   CHECKED   --frec_writer_open / ring_mode_open-> WRITING   (FILE, or the
 *                                                              ring in memory)
 *   WRITING   --bpf_probes_load, proc_track_open--> LOADED    (nothing
 *                                                              attached yet)
 *   LOADED    --launch_prepare (held child),
 *               bpf_probes_attach, lib_attach----> ATTACHED
 *   ATTACHED  --drain_start, proc_track_start-----> RECORDING (the child
 *                                                              released)
 *   RECORDING --stop signal, --duration, the
 *               command's or targets' end--------> STOPPING  (finish: drain
 *                                                   emptied, symbols, index,
 *                                                   end record)
 *   any state --recording_free------------------> gone      (safe at any
 *                                                              stage)
 *
 * A failure before RECORDING takes the `fail` path: the threads that run
 * are stopped, a held child is killed, FILE is removed (ring mode never
 * made one), and recording_free releases the rest. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach/bpf_objects.h"
#include "attach/bpf_probes.h"
#include "clock.h"
#include "flightrec_version.h"
#include "drain/drain.h"
#include "symbols/dso_table.h"
#include "inspect/elf_info.h"
#include "frec_writer.h"
#include "fr_family.h"
#include "drain/inflight.h"
#include "launch.h"
#include "attach/lib_attach.h"
#include "options.h"
#include "preflight.h"
#include "track/proc_track.h"
#include "track/python.h"
#include "attach/probe_cost.h"
#include "ring/ring_mode.h"
#include "symbols/stack_table.h"
#include "symbols/ustack_sparse.h"
#include "symbols/sym_collector.h"
#include "drain/syscall_drops.h"


static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t usr2_count; /* SIGUSR2: a snapshot, or seal and flush */

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

static void on_usr2(int sig)
{
	(void)sig;
	usr2_count++;
}

static bool verbose_libbpf;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG || (!verbose_libbpf && level != LIBBPF_WARN))
		return 0;
	if (!verbose_libbpf)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static void usage(FILE *out)
{
	fprintf(out,
"usage: flightrec record -o FILE [options] (-- COMMAND... | --pid PID | --cgroup PATH)\n"
"       flightrec --version\n"
"\n"
"flightrec records a running training job with eBPF (CPU stack samples,\n"
"system calls, processes) into one crash-safe trace file, without changing\n"
"or restarting the job.  Copy the file anywhere and run flightrec-analyze.\n"
"\n"
"Commands:\n"
"  record    record a command, processes or a cgroup ('flightrec record --help')\n");
}

struct recording {
	uint64_t born_ns;          /* CLOCK_MONOTONIC when the recorder started */
	int stats_fd;              /* --probe-cost: keeps run-time statistics on */
	bool stop_reported;        /* the writer stopped and we said so */
	uint64_t file_start_ns;    /* when the file was created: times in the
				      analyzer's outputs count from there */
	struct record_opts opts;
	struct frec_writer *writer;
	struct bpf_probes probes;
	struct dso_table dsos;
	struct stack_table *stacks;
	struct sym_collector syms;
	struct drain *drain;        /* from ATTACHED on */
	struct proc_track *track;   /* from LOADED on */
	struct launch child;
	struct lib_attach libs;
	struct rdma_counters rdma_counters;
	struct python_state python;
	struct ring_mode ring_mode; /* --ring */
	struct unwind_cache *unwind_cache; /* dwarf mode's build-id cache, or NULL */
	struct ustack_sparse *sparse;      /* dwarf mode's sparse copies, or NULL */
	bool ring;
	bool python_on;
};

static void rusage_ns(uint64_t *user, uint64_t *sys)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	*user = (uint64_t)ru.ru_utime.tv_sec * 1000000000ull + (uint64_t)ru.ru_utime.tv_usec * 1000ull;
	*sys = (uint64_t)ru.ru_stime.tv_sec * 1000000000ull + (uint64_t)ru.ru_stime.tv_usec * 1000ull;
}

/* Adds one (probe, reason) loss counter to st; the probe's own drops sum
 * the losses of whole events. */
static void add_loss(struct recorder_stats *st, struct fr_probe_stats *ps, unsigned reason,
		     uint64_t count, uint64_t first_ns, uint64_t last_ns)
{
	if (!count || st->n_drops >= FR_DROP_COUNTS_MAX)
		return;
	struct fr_drop_count *d = &st->drops[st->n_drops++];
	memset(d, 0, sizeof(*d));
	memcpy(d->probe, ps->name, sizeof(d->probe));
	d->reason = (uint16_t)reason;
	d->count = count;
	d->first_ns = first_ns;
	d->last_ns = last_ns;
	if (FR_DROP_LOSES_EVENT(reason))
		ps->drops += count;
}

/* Per-probe counters and losses, as written in STATS records and END. */
/* STATS entries that count something other than events (RECORDS.md,
 * FR_REC_STATS): never added to the events' total. */
static bool counts_no_events(const char *name)
{
	return !strcmp(name, "rdma_idle_polls") || !strcmp(name, "ustack_behind") ||
	       !strcmp(name, "ustack_bounded") || !strcmp(name, "ustack_short");
}

/* FLIGHTREC_USTACK_BOUND=0: --stack dwarf copies always take --stack-size
 * bytes, never cut at their thread's stack top (to compare). */
static bool ustack_bound_on(void)
{
	const char *env = getenv("FLIGHTREC_USTACK_BOUND");
	return !(env && !strcmp(env, "0"));
}

static void collect_stats(void *ctx, struct recorder_stats *st)
{
	struct recording *r = ctx;
	struct fr_drop_slot kdrops[FR_PROBE_MAX][FR_DROP_REASON_MAX];
	struct frec_writer_stats ws;
	struct fr_probe_stats *ps;

	const struct ring_sink *sink = r->drain ? drain_counts(r->drain) : NULL;

	memset(st, 0, sizeof(*st));
	bpf_probes_drops(&r->probes, kdrops);
	frec_writer_stats(r->writer, &ws);
	size_t n_fams;
	const struct fr_family *const *fams = fr_families(&n_fams);
	for (size_t i = 0; i < n_fams; i++) {
		unsigned id = fams[i]->id;
		/* the families --probes chose, once attached; the others (proc,
		 * the step marker) once loaded */
		if (!((fams[i]->selectable ? r->probes.attached : r->probes.loaded) & PROBE_BIT(id)))
			continue;
		ps = &st->probes[st->n_probes++];
		memset(ps, 0, sizeof(*ps));
		snprintf(ps->name, sizeof(ps->name), "%s", fams[i]->name);
		ps->events = sink ? atomic_load(&sink->events[id]) : 0;
		for (unsigned why = 0; why < FR_DROP_REASON_MAX; why++) {
			const struct fr_drop_slot *k = &kdrops[id][why];
			add_loss(st, ps, why, k->count, k->first_ns, k->last_ns);
			if (!sink)
				continue;
			const struct ring_loss *l = &sink->lost[id][why];
			add_loss(st, ps, why, atomic_load(&l->count), atomic_load(&l->first_ns),
				 atomic_load(&l->last_ns));
		}
		if (id == FR_PROBE_RDMA) {
			/* not drops: poll_cq calls that found nothing, only counted */
			ps = &st->probes[st->n_probes++];
			memset(ps, 0, sizeof(*ps));
			snprintf(ps->name, sizeof(ps->name), "rdma_idle_polls");
			ps->events = bpf_probes_rdma_empty_polls(&r->probes);
		}
	}
	if (r->sparse) {
		/* not events: raw stacks written whole, unplanned, because the
		 * drain was behind (ring_record.h) */
		ps = &st->probes[st->n_probes++];
		memset(ps, 0, sizeof(*ps));
		snprintf(ps->name, sizeof(ps->name), "ustack_behind");
		ps->events = sink ? atomic_load(&sink->whole_behind) : 0;
		/* not events either: raw stacks the kernel cut at their thread's
		 * stack top, and those of them whose unwind fell short */
		ps = &st->probes[st->n_probes++];
		memset(ps, 0, sizeof(*ps));
		snprintf(ps->name, sizeof(ps->name), "ustack_bounded");
		ps->events = sink ? atomic_load(&sink->bounded) : 0;
		ps = &st->probes[st->n_probes++];
		memset(ps, 0, sizeof(*ps));
		snprintf(ps->name, sizeof(ps->name), "ustack_short");
		ps->events = sink ? atomic_load(&sink->bounded_short) : 0;
	}
	ps = &st->probes[st->n_probes++];
	memset(ps, 0, sizeof(*ps));
	snprintf(ps->name, sizeof(ps->name), "mmap");
	struct proc_track_counts tc = r->track ? proc_track_counts(r->track)
					       : (struct proc_track_counts){0};
	ps->events = tc.mappings;
	/* perf's mmap ring overflowed: the kernel says how many, not when */
	add_loss(st, ps, FR_DROP_RING_FULL, tc.mmap_lost, 0, 0);
	ps = &st->probes[st->n_probes++];
	memset(ps, 0, sizeof(*ps));
	snprintf(ps->name, sizeof(ps->name), "writer");
	ps->events = ws.records_written;
	add_loss(st, ps, FR_DROP_CHUNK_LOST, ws.records_dropped, 0, 0);
	rusage_ns(&st->cpu_user_ns, &st->cpu_sys_ns);
}

static void on_new_file(void *ctx, struct frec_builder *b, const struct mapped_file *mf,
			uint64_t mapped_ns)
{
	lib_attach_try(ctx, b, mf, mapped_ns, 0);
}

static void human_bytes(uint64_t b, char *buf, size_t len)
{
	if (b >= (10ull << 20))
		snprintf(buf, len, "%.1f MiB", b / 1048576.0);
	else if (b >= 10240)
		snprintf(buf, len, "%.1f KiB", b / 1024.0);
	else
		snprintf(buf, len, "%" PRIu64 " B", b);
}

static bool targets_alive(const struct record_opts *o)
{
	for (int i = 0; i < o->n_pids; i++)
		if (kill((pid_t)o->pids[i], 0) == 0 || errno != ESRCH)
			return true;
	return false;
}

static void add_cgroup_members(struct recording *r)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/cgroup.procs", r->opts.cgroup_path);
	FILE *f = fopen(path, "r");
	unsigned pid;
	if (!f)
		return;
	while (fscanf(f, "%u", &pid) == 1)
		proc_track_add_existing(r->track, pid);
	fclose(f);
}

/* What the build-id cache saved, and the CPU the files cost either way
 * (tests/bench/bench_cache.py reads this line). */
static void print_cache_summary(const struct recording *r)
{
	const struct unwind_writer_stats *uw = proc_track_unwind(r->track);
	if (!uw->files_seen)
		return;
	if (!r->unwind_cache) {
		fprintf(stderr, "flightrec: build-id cache off: %u files read, %.2f s of CPU\n",
			uw->files_seen, uw->file_cpu_ns / 1e9);
		return;
	}
	fprintf(stderr, "flightrec: build-id cache %s: %u of %u files from it, %u read and "
		"added", unwind_cache_dir(r->unwind_cache), uw->cache_hits, uw->files_seen,
		uw->cache_stored);
	if (uw->cache_rejected)
		fprintf(stderr, ", %u damaged or stale entries replaced", uw->cache_rejected);
	if (uw->no_build_id)
		fprintf(stderr, ", %u without a build-id (never cached)", uw->no_build_id);
	uint64_t evicted = unwind_cache_evicted(r->unwind_cache);
	if (evicted)
		fprintf(stderr, ", %llu old entries removed to stay under --cache-max %.1f GiB",
			(unsigned long long)evicted, r->opts.cache_max_bytes / 1073741824.0);
	fprintf(stderr, "; %.2f s of CPU on files\n", uw->file_cpu_ns / 1e9);
}

/* ready_s: from the command line to the probes attached, the time a
 * launched command waits before it runs (most of it BPF verification) */
static void print_start_summary(struct recording *r, double ready_s)
{
	const struct record_opts *o = &r->opts;
	char what[256] = "";

	if (o->quiet)
		return;
	if (o->command)
		snprintf(what, sizeof(what), "'%s' (pid %d)", o->command[0], (int)r->child.pid);
	else if (o->cgroup_path)
		snprintf(what, sizeof(what), "cgroup %s", o->cgroup_path);
	else {
		size_t p = (size_t)snprintf(what, sizeof(what), "pid");
		for (int i = 0; i < o->n_pids && p < sizeof(what); i++)
			p += (size_t)snprintf(what + p, sizeof(what) - p, "%s%u", i ? "," : " ", o->pids[i]);
	}
	if (o->ring_bytes) {
		char ring[32];
		human_bytes(o->ring_bytes, ring, sizeof(ring));
		fprintf(stderr, "flightrec: recording %s into a %s ring in memory (snapshots beside %s, "
			"on", what, ring, o->output);
		for (unsigned k = FR_TRIGGER_OOM; k <= FR_TRIGGER_EXIT; k++)
			if (o->triggers & TRIGGER_BIT(k))
				fprintf(stderr, " %s%s", trigger_name(k),
					k == FR_TRIGGER_EXIT && (o->triggers & TRIGGER_EXIT_ALL) ? "=all"
					: k == FR_TRIGGER_EXIT ? " (of the job's processes)" : "");
		fprintf(stderr, " and SIGUSR2 to pid %d); probes:", (int)getpid());
	} else {
		fprintf(stderr, "flightrec: recording %s into %s; probes:", what, o->output);
	}
	size_t n_fams;
	const struct fr_family *const *fams = fr_families(&n_fams);
	for (size_t i = 0; i < n_fams; i++) {
		const struct fr_family *f = fams[i];
		if (!f->selectable || !(r->probes.attached & PROBE_BIT(f->id)))
			continue;
		if (f->attach == FR_ATTACH_LIBRARY) {
			unsigned n = atomic_load(&r->libs.files_attached[f->id]);
			if (n)
				fprintf(stderr, " %s (%u librar%s)", f->name, n, n == 1 ? "y" : "ies");
			else
				fprintf(stderr, " %s (when its library is mapped)", f->name);
		} else if (f->id == FR_PROBE_CPU) {
			fprintf(stderr, " cpu (%u Hz)", o->freq_hz);
		} else if (f->id == FR_PROBE_SYSCALLS && o->syscall_min_ns) {
			fprintf(stderr, " syscalls (filtered by duration)");
		} else {
			fprintf(stderr, " %s", f->name);
		}
	}
	if (o->step_marker)
		fprintf(stderr, " step marker %s", o->step_marker);
	if (o->stack_dwarf)
		fprintf(stderr, "; dwarf stacks copied %s", r->probes.ustack_dynptr ?
			"once (straight into the ring)" : "twice (no dynptr read of user memory in this kernel, or FLIGHTREC_USTACK_DYNPTR=0)");
	fprintf(stderr, "; ready in %.2f s%s\n", ready_s, o->duration_s > 0 ? "" : "; Ctrl-C to stop");
	for (size_t i = 0; i < n_fams; i++)
		if (r->probes.ustack_fallback[fams[i]->id][0])
			fprintf(stderr, "flightrec: %s: %s; its stacks are copied twice\n",
				fams[i]->name, r->probes.ustack_fallback[fams[i]->id]);
	for (size_t i = 0; i < n_fams; i++) {
		unsigned id = fams[i]->id, bit = PROBE_BIT(id);
		if (fams[i]->selectable && (o->probes & bit) && !(r->probes.attached & bit))
			fprintf(stderr, "flightrec: not recording %s: %s\n", fams[i]->name,
				r->probes.why_not[id][0] ? r->probes.why_not[id] : "not attached");
	}
}

/* One line per kind of loss: what was lost, per probe and reason, and when
 * (seconds since the start of the recording). */
static void print_losses(const struct recorder_stats *st, uint64_t start_ns, bool events)
{
	uint64_t total = 0;
	for (uint32_t i = 0; i < st->n_drops; i++)
		if (FR_DROP_LOSES_EVENT(st->drops[i].reason) == events)
			total += st->drops[i].count;
	if (!total)
		return;
	fprintf(stderr, "flightrec: WARNING: %" PRIu64 " %s:", total,
		events ? "events were dropped" : "events lost their stack");
	for (uint32_t i = 0, first = 1; i < st->n_drops; i++) {
		const struct fr_drop_count *d = &st->drops[i];
		if (FR_DROP_LOSES_EVENT(d->reason) != events)
			continue;
		fprintf(stderr, "%s %.16s %" PRIu64 " (%s", first ? "" : ",", d->probe, d->count,
			fr_drop_reason_name(d->reason));
		if (d->first_ns && d->first_ns >= start_ns)
			fprintf(stderr, ", %.3f-%.3f s", (d->first_ns - start_ns) / 1e9,
				(d->last_ns - start_ns) / 1e9);
		fprintf(stderr, ")");
		first = 0;
	}
	bool ring_full = false;
	for (uint32_t i = 0; i < st->n_drops; i++)
		ring_full |= st->drops[i].reason == FR_DROP_RING_FULL && st->drops[i].count;
	fprintf(stderr, events && ring_full ? "; a larger --buffer-mib or a lower --freq helps\n" : "\n");
}

/* One line when the file could not be written any further (disk full,
 * quota, I/O error), the first time it is seen; true from then on.  The
 * writer has cut the failed chunk away and keeps room to seal the file. */
static bool writer_stopped(struct recording *r)
{
	struct frec_writer_stats ws;
	if (r->stop_reported)
		return true;
	if (!r->writer)
		return false;
	frec_writer_stats(r->writer, &ws);
	if (!ws.stop_error)
		return false;
	r->stop_reported = true;
	int e = ws.stop_error;
	fprintf(stderr, "flightrec: %s at %.3f s writing %s (%s): recording stopped; %s; the file "
		"holds everything recorded before\n",
		frec_write_error_name(e),
		ws.stop_mono_ns > r->file_start_ns ? (ws.stop_mono_ns - r->file_start_ns) / 1e9 : 0.0,
		r->opts.output, strerror(e),
		r->opts.command ? "the command goes on unrecorded" : "the processes go on unrecorded");
	return true;
}

static void write_inflight(struct recording *r);

/* SIGUSR2: a snapshot in ring mode; otherwise every chunk being built is
 * sealed and handed to the writer, so the file holds what was recorded up
 * to now (a recorder killed later loses nothing before this), with the
 * calls in flight now: a hang is named from the file as it stands. */
static void on_sigusr2(struct recording *r)
{
	if (r->ring) {
		ring_mode_signal(&r->ring_mode, mono_ns());
		return;
	}
	write_inflight(r);
	int late = drain_flush_sync(r->drain, 2000000000ull) |
		   proc_track_flush_sync(r->track, 5000000000ull);
	/* and written: the writer's queue empties within seconds (a disk that
	 * slow is said, not waited for) */
	struct frec_writer_stats ws;
	uint64_t give_up = mono_ns() + 5000000000ull;
	struct timespec nap = {0, 2000000};
	for (frec_writer_stats(r->writer, &ws); ws.queue_bytes && mono_ns() < give_up;
	     frec_writer_stats(r->writer, &ws))
		nanosleep(&nap, NULL);
	late |= ws.queue_bytes != 0;
	if (!r->opts.quiet)
		fprintf(stderr, "flightrec: SIGUSR2: %s sealed and written to %s\n",
			late ? "some chunks (the rest is late)" : "the current chunks",
			r->opts.output);
}

/* The calls still in flight, read before the probes go (a hung collective
 * writes no event of its own), in a META record; written when there are
 * none too: the analyzer learns this node's ranks were waiting for nothing.
 * A snapshot carries its own (hang_poll.c). */
static void write_inflight(struct recording *r)
{
	static struct fr_inflight_call inflight[INFLIGHT_MAX];
	int n = inflight_scan(&r->probes, inflight, INFLIGHT_MAX);
	struct frec_builder *b = n >= 0 ? frec_builder_new(r->writer, FR_CHUNK_META) : NULL;
	if (b) {
		inflight_write(b, inflight, (size_t)n, mono_ns());
		frec_builder_free(b);
	}
}

static int finish(struct recording *r, uint64_t start_ns)
{
	struct recorder_stats st;
	struct frec_error err = {0};
	struct fr_end end = {0};

	if (r->ring) /* a trigger of the last moments (the OOM that ended the job) */
		ring_mode_last(&r->ring_mode, r->drain);
	else
		write_inflight(r);
	bpf_probes_detach(&r->probes, proc_track_hold_probes(r->track));
	/* the probes are gone: the per-number counts are final */
	if (!r->ring)
		syscall_drops_write(&r->probes, r->writer, mono_ns());
	drain_stop(r->drain);
	proc_track_stop(r->track); /* writes the last symbols */
	/* every chunk written (or dropped) before the counters are read for END */
	frec_writer_drain(r->writer);
	if (r->ring)
		frec_writer_ring_compact(r->writer); /* the end's counts are the floor */
	writer_stopped(r); /* the last chunks may have met a full disk */
	collect_stats(r, &st);
	end.cpu_user_ns = st.cpu_user_ns;
	end.cpu_sys_ns = st.cpu_sys_ns;
	for (uint32_t i = 0; i < st.n_probes; i++)
		end.total_drops += st.probes[i].drops;
	end.end_mono_ns = mono_ns();
	{
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		end.end_real_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec +
				  (uint64_t)(int64_t)(r->opts.realtime_offset_s * 1e9);
	}
	struct frec_ring_stats rs;
	frec_writer_ring_stats(r->writer, &rs); /* zeros outside ring mode */
	frec_writer_set_drops(r->writer, st.drops, st.n_drops);
	if (frec_writer_close(r->writer, &end, st.probes, st.n_probes, &err)) {
		char buf[600];
		fprintf(stderr, "flightrec: %s\n", frec_error_str(&err, buf, sizeof(buf)));
		r->writer = NULL;
		return -1;
	}
	r->writer = NULL;

	const struct ring_sink *sink = drain_counts(r->drain);
	const struct unwind_writer_stats *uw = proc_track_unwind(r->track);
	if (r->opts.stack_dwarf && !r->opts.quiet) {
		fprintf(stderr, "flightrec: dwarf stacks: %u raw stacks, unwind data for %u files "
			"(%.1f MiB before compression), %llu symbols", sink->ustacks,
			uw->files, uw->image_bytes / 1048576.0, (unsigned long long)uw->symbols);
		if (r->python_on)
			fprintf(stderr, ", %llu Python code objects named",
				(unsigned long long)r->python.codes_resolved);
		if (uw->debug_files)
			fprintf(stderr, ", %u stripped files named from " ELF_DEBUG_ROOT,
				uw->debug_files);
		if (r->sparse) {
			struct ustack_sparse_stats ss = ustack_sparse_stats(r->sparse);
			fprintf(stderr, "; %llu copies sparse, %llu whole, %.1f%% of their stack "
				"bytes kept, %llu unwinders made; %llu copies whole because the "
				"drain was behind; %llu copies cut at their thread's stack top, %llu of "
				"them short", (unsigned long long)ss.sparse,
				(unsigned long long)ss.whole,
				ss.bytes_in ? 100.0 * (double)ss.bytes_kept / (double)ss.bytes_in : 0.0,
				(unsigned long long)ss.rebuilds,
				(unsigned long long)atomic_load(&sink->whole_behind),
				(unsigned long long)atomic_load(&sink->bounded),
				(unsigned long long)atomic_load(&sink->bounded_short));
		}
		fprintf(stderr, "\n");
		print_cache_summary(r);
		if (uw->stripped) {
			fprintf(stderr, "flightrec: %u stripped file%s without a debug file under "
				ELF_DEBUG_ROOT " (their frames show only exported names, else "
				"file+offset; install their -dbg packages):", uw->stripped,
				uw->stripped == 1 ? "" : "s");
			for (uint32_t i = 0; i < uw->stripped && i < UNWIND_STRIPPED_NAMED; i++)
				fprintf(stderr, "%s %s", i ? "," : "", uw->stripped_names[i]);
			fprintf(stderr, "%s\n", uw->stripped > UNWIND_STRIPPED_NAMED ? ", ..." : "");
		}
	}
	const struct uprobe_family *marker = bpf_probes_uprobes(&r->probes, FR_PROBE_STEP);
	if (r->opts.step_marker && (!marker || !marker->functions_attached))
		fprintf(stderr, "flightrec: step marker %s: no file the target mapped has a function "
			"of that name; no steps were recorded\n", r->opts.step_marker);
	if (r->ring && !r->opts.quiet) {
		uint64_t total = 0;
		for (uint32_t i = 0; i < st.n_probes; i++)
			if (strcmp(st.probes[i].name, "writer") && strcmp(st.probes[i].name, "mmap") &&
			    !counts_no_events(st.probes[i].name))
				total += st.probes[i].events;
		ring_mode_report(&r->ring_mode, &rs, total, r->opts.output,
				 (end.cpu_user_ns + end.cpu_sys_ns) / 1e9, (mono_ns() - r->born_ns) / 1e9);
		print_losses(&st, start_ns, true);
		print_losses(&st, start_ns, false);
	} else if (!r->opts.quiet) {
		struct stat sb;
		char size[32];
		uint64_t total = 0;
		/* the recorder's CPU over its own lifetime (loading and attaching
		 * included), not over the job's: a short job would read as
		 * thousands of percent of a core */
		double elapsed = (mono_ns() - start_ns) / 1e9;
		double lifetime = (mono_ns() - r->born_ns) / 1e9;
		double cpu_s = (end.cpu_user_ns + end.cpu_sys_ns) / 1e9;
		stat(r->opts.output, &sb);
		human_bytes((uint64_t)sb.st_size, size, sizeof(size));
		fprintf(stderr, "flightrec: wrote %s: ", r->opts.output);
		for (uint32_t i = 0; i < st.n_probes; i++) {
			const char *nm = st.probes[i].name;
			if (!strcmp(nm, "writer") || !strcmp(nm, "mmap") || counts_no_events(nm))
				continue;
			total += st.probes[i].events;
		}
		fprintf(stderr, "%" PRIu64 " events (", total);
		for (uint32_t i = 0, first = 1; i < st.n_probes; i++) {
			if (!strcmp(st.probes[i].name, "writer") ||
			    (counts_no_events(st.probes[i].name) &&
			     strcmp(st.probes[i].name, "rdma_idle_polls"))) /* on the dwarf line */
				continue;
			fprintf(stderr, "%s%s %" PRIu64, first ? "" : ", ",
				!strcmp(st.probes[i].name, "mmap") ? "mappings" : st.probes[i].name,
				st.probes[i].events);
			first = 0;
		}
		/* both stack kinds and both symbol sources, so this line agrees
		 * with the dwarf line above */
		fprintf(stderr, "), %" PRIu64 " stacks, %" PRIu64 " symbols, %" PRIu64 " dropped, %s "
			"over %.2f s; recorder CPU %.2f s in its %.2f s (%.1f%% of one core)\n",
			(uint64_t)stack_table_count(r->stacks) + sink->ustacks,
			r->syms.symbols_written + uw->symbols, end.total_drops,
			size, elapsed, cpu_s, lifetime, lifetime > 0 ? 100.0 * cpu_s / lifetime : 0.0);
		print_losses(&st, start_ns, true);
		print_losses(&st, start_ns, false);
	}
	if (r->stats_fd >= 0) /* asked for by name: printed even with -q */
		probe_cost_print(&r->probes, stderr);
	return 0;
}

/* Run through sudo, the trace belongs to the user who asked for it. */
static void invoking_user(struct frec_writer_opts *wo)
{
	const char *u = getenv("SUDO_UID"), *g = getenv("SUDO_GID");
	char *end;
	if (geteuid() != 0 || !u || !g || !*u || !*g)
		return;
	unsigned long uid = strtoul(u, &end, 10);
	if (*end)
		return;
	unsigned long gid = strtoul(g, &end, 10);
	if (*end || uid > 0xfffffffful || gid > 0xfffffffful)
		return;
	wo->set_owner = 1;
	wo->owner_uid = (unsigned)uid;
	wo->owner_gid = (unsigned)gid;
}

/* What a recording holds, released whatever stage it reached: r comes
 * from calloc, and each part's free takes the zeroed state of a part never
 * set up (no fd, no object, NULL tables). */
static void recording_free(struct recording *r)
{
	if (r->stats_fd >= 0)
		close(r->stats_fd);
	drain_free(r->drain);
	proc_track_close(r->track);
	lib_attach_destroy(&r->libs);
	bpf_probes_destroy(&r->probes);
	stack_table_free(r->stacks);
	sym_collector_destroy(&r->syms);
	dso_table_destroy(&r->dsos);
	if (r->python_on)
		python_destroy(&r->python);
	ring_mode_free(&r->ring_mode);
	unwind_cache_close(r->unwind_cache);
	ustack_sparse_free(r->sparse);
	free(r);
}

static int cmd_record(int argc, char **argv)
{
	uint64_t entered_ns = mono_ns();
	struct recording *r = calloc(1, sizeof(*r));
	char msg[512];
	uint64_t cgroup_id = 0, start_ns;
	const char *cgroup_rel = NULL;
	int status = 0, ret = 1;
	bool child_done = false;

	if (!r)
		return 1;
	r->born_ns = mono_ns();
	r->stats_fd = -1;
	r->child.pid = -1;
	r->child.gate_fd = r->child.err_fd = -1;
	int pr = record_opts_parse(argc, argv, &r->opts);
	if (pr) {
		recording_free(r);
		return pr > 0 ? 0 : 2;
	}
	struct record_opts *o = &r->opts;
	const struct probes_config probes_cfg = {
		.probes = o->probes,
		.probes_given = o->probes_given,
		.step_marker = o->step_marker,
		.buffer_mib = o->buffer_mib,
		.freq_hz = o->freq_hz,
		.stack_dwarf = o->stack_dwarf,
		.stack_kib = o->stack_kib,
		.syscall_min_ns = o->syscall_min_ns,
		.sched_min_ns = o->sched_min_ns,
		.syscall_stacks = o->syscall_stacks,
		.launch_stack_every = o->launch_stack_every,
		.ustack_dynptr = o->stack_dwarf && bpf_kernel_has_dynptr_read(),
	};
	const struct ring_mode_config ring_cfg = {
		.ring_bytes = o->ring_bytes,
		.triggers = o->triggers,
		.trigger_delay_s = o->trigger_delay_s,
		.hang_timeout_s = o->hang_timeout_s,
		.output = o->output,
		.max_snapshots = o->max_snapshots,
		.max_snapshot_bytes = o->max_snapshot_bytes,
		.snapshot_interval_s = o->snapshot_interval_s,
		.status_interval_s = o->status_interval_s,
		.on_snapshot = o->on_snapshot,
		.quiet = o->quiet,
	};
	verbose_libbpf = o->verbose;
	libbpf_set_print(libbpf_print);
	struct preflight_out pre;
	struct frec_error ferr = {0};
	int pf = preflight(o, &pre, &ferr);
	if (pf) {
		fprintf(stderr, "flightrec: %s\n", ferr.what);
		recording_free(r);
		/* a command that cannot run ends as a shell says it */
		return pre.command_unrunnable ? (pf == -ENOENT ? 127 : 126) : 1;
	}
	cgroup_id = pre.cgroup_id;
	cgroup_rel = pre.cgroup_rel;
	setrlimit(RLIMIT_MEMLOCK, &(struct rlimit){RLIM_INFINITY, RLIM_INFINITY});

	struct frec_writer_opts wo = {
		.codec = o->codec,
		.level = o->level,
		.chunk_bytes = (size_t)o->chunk_kib << 10,
	};
	wo.schema = fr_schema_table(&wo.n_schema);
	invoking_user(&wo);
	struct timespec real;
	clock_gettime(CLOCK_REALTIME, &real);
	struct frec_file_info info = {
		.argv = (const char *const *)argv - 1, /* include the program name */
		.argc = argc + 1,
		.start_mono_ns = mono_ns(),
		.start_real_ns = (uint64_t)real.tv_sec * 1000000000ull + (uint64_t)real.tv_nsec +
				 (uint64_t)(int64_t)(o->realtime_offset_s * 1e9),
		.flags = probes_cfg.ustack_dynptr ? FR_FILE_USTACK_DIRECT : 0,
	};
	r->file_start_ns = mono_ns(); /* about the file header's start anchor */
	r->ring = o->ring_bytes != 0;
	int wrc;
	if (r->ring) {
		wrc = ring_mode_open(&r->ring_mode, &ring_cfg, &wo, &r->writer, &ferr);
	} else {
		wrc = frec_writer_open(o->output, &info, &wo, &r->writer, &ferr);
	}
	if (wrc) {
		char buf[600];
		fprintf(stderr, "flightrec: cannot write %s\n", frec_error_str(&ferr, buf, sizeof(buf)));
		recording_free(r);
		return 1;
	}
	dso_table_init(&r->dsos);
	sym_collector_init(&r->syms, &r->dsos);
	sym_collector_kernel_preload(&r->syms);
	r->stacks = stack_table_new();
	if (!r->stacks)
		goto fail;
	if (bpf_probes_load(&r->probes, &probes_cfg, cgroup_id, &ferr))
		goto fail_err;
	if (o->verbose)
		bpf_probes_print_load(&r->probes, stderr);
	lib_attach_init(&r->libs, &r->probes, o->quiet);
	struct proc_track_config track_cfg = {
		.probes = &r->probes,
		.dsos = &r->dsos,
		.syms = &r->syms,
		.writer = r->writer,
		/* ring mode: exited processes' metadata leaves the ring with their events */
		.ring = r->ring,
		.stats_fn = collect_stats,
		.stats_ctx = r,
		.new_file_fn = on_new_file,
		.new_file_ctx = &r->libs,
		.job = r->ring && r->ring_mode.job_on ? &r->ring_mode.job : NULL,
		.dwarf = o->stack_dwarf,
		.quiet = o->quiet,
		.realtime_offset_ns = (int64_t)(o->realtime_offset_s * 1e9),
		.cgroup_v2_path = cgroup_id ? (cgroup_rel ? cgroup_rel : "/") : NULL,
	};
	if (o->stack_dwarf && o->cache) {
		char why[256];
		r->unwind_cache = unwind_cache_open(o->cache_dir, o->cache_max_bytes, why, sizeof(why));
		/* the cache only saves time: a recording never fails for it */
		if (!r->unwind_cache && !o->quiet)
			fprintf(stderr, "flightrec: build-id cache %s: %s; recording without it "
				"(--cache-dir DIR for another, --no-cache for none)\n",
				o->cache_dir, why);
		track_cfg.unwind_cache = r->unwind_cache;
	}
	/* FLIGHTREC_USTACK_SPARSE=0 writes every copy whole (format 1.1's raw
	 * stacks), to compare */
	const char *sparse_env = getenv("FLIGHTREC_USTACK_SPARSE");
	if (o->stack_dwarf && !(sparse_env && !strcmp(sparse_env, "0"))) {
		r->sparse = ustack_sparse_new(&r->dsos);
		if (!r->sparse) {
			snprintf(msg, sizeof(msg), "out of memory");
			goto fail_msg;
		}
		track_cfg.sparse = r->sparse;
	}
	if (o->stack_dwarf && o->python) {
		python_init(&r->python, bpf_probes_py_procs_fd(&r->probes), o->quiet);
		r->python_on = true;
		track_cfg.python = &r->python;
	}
	if (r->probes.loaded & PROBE_BIT(FR_PROBE_RDMA)) {
		track_cfg.rdma_dp = &r->probes.rdma_dp_family;
		if (rdma_counters_open(&r->rdma_counters, o->rdma_counters_dir) == 0)
			track_cfg.rdma_counters = &r->rdma_counters;
	}
	if (proc_track_open(&track_cfg, &r->track, &ferr))
		goto fail_err;

	if (o->gpu_kernels && !o->command) {
		fprintf(stderr, "flightrec: --gpu-kernels: GPU kernel times need the job started by "
			"flightrec (--gpu-kernels -- COMMAND) or with CUDA_INJECTION64_PATH naming "
			"libflightrec_cupti.so; recording without them unless it was\n");
	} else if (o->gpu_kernels) {
		char lib[4200];
		if (launch_gpu_injection(lib, sizeof(lib))) {
			snprintf(msg, sizeof(msg), "--gpu-kernels: no libflightrec_cupti.so in %.400s", lib);
			goto fail_msg;
		}
		setenv("CUDA_INJECTION64_PATH", lib, 1); /* the job inherits it */
	}
	if (o->command) {
		int err = launch_prepare(&r->child, o->command);
		if (err) {
			snprintf(msg, sizeof(msg), "cannot start %s: %s", o->command[0], strerror(-err));
			goto fail_msg;
		}
		bpf_probes_add_pid(&r->probes, (uint32_t)r->child.pid);
		if (r->ring)
			ring_mode_job_root(&r->ring_mode, (uint32_t)r->child.pid);
	}
	for (int i = 0; i < o->n_pids; i++) {
		bpf_probes_add_pid(&r->probes, o->pids[i]);
		if (r->ring)
			ring_mode_job_root(&r->ring_mode, o->pids[i]);
	}
	if (o->probe_cost) {
		r->stats_fd = probe_cost_enable();
		if (r->stats_fd < 0)
			fprintf(stderr, "flightrec: --probe-cost: the kernel keeps no BPF run-time "
				"statistics: %s\n", strerror(-r->stats_fd));
	}
	if (bpf_probes_attach(&r->probes, &probes_cfg, &ferr))
		goto fail_err;
	/* the tracking thread has not started: its builder is ours for now */
	lib_attach_prepare(&r->libs, proc_track_builder(r->track), o->libs, o->n_libs, o->command,
			   o->command_argc);

	proc_track_write_clock(r->track);
	for (int i = 0; i < o->n_pids; i++)
		proc_track_add_existing(r->track, o->pids[i]);
	if (o->cgroup_path)
		add_cgroup_members(r);
	if (r->ring && ring_mode_watch(&r->ring_mode, &ring_cfg, &r->probes)) {
		snprintf(msg, sizeof(msg), "out of memory");
		goto fail_msg;
	}
	struct drain_config drain_cfg = {
		.ring_fd = bpf_probes_ring_fd(&r->probes),
		.writer = r->writer,
		.stacks = r->stacks,
		.syms = &r->syms,
		.python = r->python_on ? &r->python : NULL,
		.sparse = r->sparse,
		.ustack_tops_fd = ustack_bound_on() ? bpf_probes_ustack_tops_fd(&r->probes) : -1,
		.rdma_dp = track_cfg.rdma_dp,
		.rdma_ctrl = bpf_probes_uprobes(&r->probes, FR_PROBE_RDMA),
		.dsos = &r->dsos,
		.quiet = o->quiet,
		.on_proc = proc_track_notify,
		.on_proc_ctx = r->track,
		.on_commit = r->ring ? ring_mode_on_event : NULL,
		.on_commit_ctx = r->ring ? &r->ring_mode : NULL,
	};
	sym_collector_kernel_wait(&r->syms);
	if (drain_start(&drain_cfg, &r->drain, &ferr))
		goto fail_err;
	int err = proc_track_start(r->track);
	if (err) {
		snprintf(msg, sizeof(msg), "cannot start the tracking thread: %s", strerror(-err));
		goto fail_msg;
	}
	if (r->ring)
		ring_mode_start(&r->ring_mode, &ring_cfg, &wo, r->drain, r->track, &info, collect_stats, r,
				r->file_start_ns);

	struct sigaction sa = {.sa_handler = on_stop_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* SIGUSR2 never stops the recorder (its default would kill it): a
	 * snapshot in ring mode, sealed and flushed chunks otherwise */
	struct sigaction su = {.sa_handler = on_usr2, .sa_flags = SA_RESTART};
	sigemptyset(&su.sa_mask);
	sigaction(SIGUSR2, &su, NULL);
	/* counted from here, before the command runs: a SIGUSR2 sent as soon
	 * as the command said it was ready (test_ring) may come before the
	 * main loop starts, and is a request all the same */
	sig_atomic_t usr2_seen = 0;

	start_ns = mono_ns();
	print_start_summary(r, (double)(start_ns - entered_ns) / 1e9);
	if (o->command) {
		int e = launch_release(&r->child);
		if (e) {
			fprintf(stderr, "flightrec: cannot run %s: %s\n", o->command[0], strerror(-e));
			waitpid(r->child.pid, &status, 0);
			child_done = true;
			status = (e == -ENOENT ? 127 : 126) << 8;
		}
	}

	uint64_t deadline = o->duration_s > 0 ? start_ns + (uint64_t)(o->duration_s * 1e9) : 0;
	struct timespec nap = {0, 20 * 1000000};
	while (!stop_signal && !child_done) {
		if (deadline && mono_ns() >= deadline)
			break;
		if (o->command) {
			pid_t w = waitpid(r->child.pid, &status, WNOHANG);
			if (w == r->child.pid) {
				child_done = true;
				break;
			}
		}
		if (o->n_pids && !targets_alive(o))
			break;
		if (writer_stopped(r))
			break;
		if (usr2_count != usr2_seen) {
			usr2_seen = usr2_count;
			on_sigusr2(r);
		}
		if (r->ring) {
			uint64_t now = mono_ns();
			ring_mode_poll(&r->ring_mode, now);
			if (r->ring_mode.status_every_ns &&
			    now - r->ring_mode.status_last_ns >= r->ring_mode.status_every_ns) {
				struct rusage ru;
				getrusage(RUSAGE_SELF, &ru);
				struct proc_track_counts tc = proc_track_counts(r->track);
				ring_mode_status(&r->ring_mode, now, tc.processes_seen, tc.processes_exited,
						 ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
						 ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
			}
		}
		nanosleep(&nap, NULL);
	}
	if (stop_signal && !o->quiet)
		fprintf(stderr, "flightrec: %s: stopping\n", strsignal(stop_signal));

	ret = finish(r, start_ns) ? 1 : 0;
	if (o->command && !child_done) {
		/* stopped early: the command goes on as if flightrec were not there,
		 * unless the stop came from a signal meant for both */
		if (stop_signal)
			kill(r->child.pid, stop_signal);
		waitpid(r->child.pid, &status, 0);
		child_done = true;
	}
	/* the job's status is the job's, whatever became of the file (a wrapper
	 * that changed it would break the scripts that launch training) */
	if (o->command) {
		if (WIFEXITED(status))
			ret = WEXITSTATUS(status);
		else if (WIFSIGNALED(status))
			ret = 128 + WTERMSIG(status);
	}
	recording_free(r);
	return ret;

fail_msg:
	fprintf(stderr, "flightrec: %s\n", msg);
	goto fail;
fail_err:
	fprintf(stderr, "flightrec: %s\n", ferr.what);
fail:
	/* both threads write through the writer: gone before it is */
	drain_free(r->drain);
	r->drain = NULL;
	proc_track_close(r->track);
	r->track = NULL;
	if (o->command && r->child.pid > 0)
		launch_abort(&r->child);
	if (r->writer)
		frec_writer_abandon(r->writer);
	if (!r->ring) /* ring mode never made FILE: it may be anyone's */
		unlink(o->output);
	recording_free(r);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("flightrec %s\n", FLIGHTREC_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "record"))
		return cmd_record(argc - 1, argv + 1);
	fprintf(stderr, "flightrec: unknown command '%s' (see 'flightrec --help')\n", argv[1]);
	return 2;
}
