/* The tracking thread: everything about the traced processes that is not a
 * kernel event.  It names processes and threads (/proc), follows their
 * executable mappings through perf's mmap2 records (synchronous in the
 * kernel, with build-ids, so even a process that lives a millisecond is
 * covered), registers the mapped files, lets go the processes held at
 * dlopen's return once their new mappings are handled (lib_hold.h), and
 * writes clock anchors and
 * per-probe counters every second.  All its output goes to its own META
 * chunk builder, so the drain thread never waits for /proc or the disk. */
#ifndef FLIGHTREC_PROC_TRACK_H
#define FLIGHTREC_PROC_TRACK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "attach/bpf_probes.h"
#include "symbols/dso_table.h"
#include "events.h"
#include "frec_writer.h"
#include "attach/lib_hold.h"
#include "symbols/sym_collector.h"
#include "track/rdma_counters.h"
#include "attach/uprobe_family.h"
#include "track/python.h"
#include "track/job_pids.h"
#include "symbols/unwind_cache.h"
#include "symbols/unwind_writer.h"
#include "symbols/ustack_sparse.h"

/* A file a traced process mapped for the first time (library discovery):
 * the mapping as the kernel reported it. */
typedef void (*track_new_file_fn)(void *ctx, struct frec_builder *b,
				  const struct mapped_file *mf, uint64_t mapped_ns);

/* What FR_REC_STATS and END report: events and losses per probe, losses
 * per (probe, reason), the recorder's CPU time. */
struct recorder_stats {
	/* a family each, and the counters that are not families (writer,
	 * mmap, rdma_idle_polls, ustack_*) */
	struct fr_probe_stats probes[FR_PROBE_MAX + 8];
	uint32_t n_probes;
	struct fr_drop_count drops[FR_DROP_COUNTS_MAX];
	uint32_t n_drops;
	uint64_t cpu_user_ns, cpu_sys_ns;
};

typedef void (*track_stats_fn)(void *ctx, struct recorder_stats *out);

/* What the tracking thread works with; everything is the caller's and
 * outlives it.  NULL members are features not asked for. */
struct proc_track_config {
	struct bpf_probes *probes;
	struct dso_table *dsos;
	struct sym_collector *syms;        /* the symbols of every stack seen */
	struct frec_writer *writer;        /* its META chunks go here */
	bool ring;                         /* ring mode: exited processes' metadata is
					      retired from writer with their events */
	track_stats_fn stats_fn;           /* the STATS record, every second */
	void *stats_ctx;
	track_new_file_fn new_file_fn;     /* library discovery, or NULL */
	void *new_file_ctx;
	struct uprobe_family *rdma_dp;     /* NULL without the rdma probes */
	struct rdma_counters *rdma_counters; /* NULL when not sampling */
	struct python_state *python;       /* NULL: no Python frames */
	struct job_pids *job;              /* the exit trigger's job (NULL: not asked) */
	bool dwarf;                        /* --stack dwarf: write unwind data */
	struct unwind_cache *unwind_cache; /* NULL: --no-cache or none usable */
	struct ustack_sparse *sparse;      /* given each file's unwind image, or NULL */
	bool quiet;
	int64_t realtime_offset_ns;        /* test hook: shifts realtime anchors */
	const char *cgroup_v2_path;        /* cgroup mode: path relative to the v2 root */
};

/* Counters any thread may read while it runs. */
struct proc_track_counts {
	uint64_t mappings;        /* mapping records written */
	uint64_t mmap_lost;       /* perf mmap records the kernel lost */
	uint64_t processes_seen, processes_exited;
};

struct proc_track;

/* Opens the per-CPU mmap tracking events (before the target runs); its
 * thread is not started.  0 and *out, or -errno with err filled and nothing
 * left open. */
int proc_track_open(const struct proc_track_config *cfg, struct proc_track **out,
		    struct frec_error *err);
/* Its META builder, the caller's until proc_track_start (lib_attach_prepare
 * writes with it). */
struct frec_builder *proc_track_builder(struct proc_track *t);
/* 0, or -errno (the thread could not be made). */
int proc_track_start(struct proc_track *t);
/* Describes a process that exists now: process record, threads, mappings
 * from /proc/PID/maps.  Used for --pid/--cgroup targets at start. */
void proc_track_add_existing(struct proc_track *t, uint32_t pid);
/* Called by the drain thread for every process event. */
void proc_track_notify(void *ctx, const struct fr_ev_common *ev);
/* Has the tracking thread write what it has pending now — processes,
 * mappings, the symbols of every stack seen so far, Python code objects,
 * clock and counters — and seal its chunk; waits for that (at most
 * timeout_ns).  Returns 0, or -1 on timeout.  A snapshot needs the metadata
 * of every event it holds. */
int proc_track_flush_sync(struct proc_track *t, uint64_t timeout_ns);
/* The end of a recording: joins, then writes the last symbols, clock anchor
 * and stats record; the writer is not used again (the counts still
 * answer). */
void proc_track_stop(struct proc_track *t);

/* The dlopen hold's probes, NULL when it has none: at the end they are
 * removed with the families' (bpf_probes_detach, while the tracking thread
 * still runs; proc_track_stop lets go of held processes), so that their
 * grace periods overlap. */
struct uprobe_family *proc_track_hold_probes(struct proc_track *t);
/* Safe at any stage and with NULL: a thread still running is stopped
 * without the last writes (a recording that failed), held processes go on,
 * and everything is freed.  Before the writer is closed or abandoned,
 * unless proc_track_stop ran. */
void proc_track_close(struct proc_track *t);

struct proc_track_counts proc_track_counts(const struct proc_track *t);
/* What the unwind writer did; final once proc_track_stop returned. */
const struct unwind_writer_stats *proc_track_unwind(const struct proc_track *t);

/* One clock anchor record now (also used at start and at the end). */
void proc_track_write_clock(struct proc_track *t);

#endif
