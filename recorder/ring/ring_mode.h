/* Flight-recorder mode as the recorder's main thread runs it (--ring): the
 * writer's ring with the live allocations it carries, the triggers the
 * drain feeds, the hang poll, and the snapshots they write.  main.c calls
 * these at the steps of a recording; the work is in live_allocs.c,
 * triggers.c, hang_poll.c and snapshot.c. */
#ifndef FLIGHTREC_RING_MODE_H
#define FLIGHTREC_RING_MODE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "drain/drain.h"
#include "frec_writer.h"
#include "ring/hang_poll.h"
#include "ring/live_allocs.h"
#include "track/proc_track.h"
#include "ring/snapshot.h"
#include "ring/triggers.h"

struct bpf_probes;

/* What flight-recorder mode needs of the command line (main.c fills it
 * from struct record_opts, whose field names these are). */
struct ring_mode_config {
	uint64_t ring_bytes;         /* compressed events kept in memory */
	unsigned triggers;           /* TRIGGER_BIT()s of --trigger */
	double trigger_delay_s;      /* aftermath in an OOM snapshot */
	double hang_timeout_s;
	const char *output;          /* FILE: snapshots are FILE-1, FILE-2, ... */
	unsigned max_snapshots;
	uint64_t max_snapshot_bytes;
	double snapshot_interval_s;
	double status_interval_s;    /* --status-interval: the running summary line */
	const char *on_snapshot;     /* --on-snapshot CMD */
	bool quiet;
};

struct ring_mode {
	struct live_allocs live;
	struct triggers triggers;
	struct snapshots snaps;
	struct hang_poll hang;
	struct frec_writer *writer;
	unsigned armed;            /* TRIGGER_BIT()s of --trigger */
	const char *on_snapshot;   /* --on-snapshot */
	pid_t hooks[16];           /* --on-snapshot commands not reaped yet */
	/* --trigger exit (not exit=all): the job's processes, and the failed
	 * exits of others, said at most once per --snapshot-interval */
	struct job_pids job;
	bool job_on;
	uint64_t exits_not_job, exits_not_job_unsaid, exits_said_ns;
	struct trigger_hit exit_latest;
	uint64_t status_every_ns, status_last_ns, status_procs;
	struct cpu_history cpu;    /* for the snapshots' END */
	uint64_t cpu_sampled_ns;
	double status_cpu_s;
	bool open;
};

/* The ring writer in place of a file; 0, or -1 with err filled. */
int ring_mode_open(struct ring_mode *m, const struct ring_mode_config *o,
		   const struct frec_writer_opts *wo, struct frec_writer **out,
		   struct frec_error *err);
/* Before drain_start: the hang poll, and what the triggers watch.  0, or -1
 * out of memory. */
int ring_mode_watch(struct ring_mode *m, const struct ring_mode_config *o, struct bpf_probes *probes);
/* The drain's on_commit (drain_config), ctx the ring mode: every event
 * committed goes to the triggers. */
void ring_mode_on_event(void *ctx, const struct fr_ev_common *ev);
/* Once the threads run: what a snapshot needs of the recording. */
void ring_mode_start(struct ring_mode *m, const struct ring_mode_config *o,
		     const struct frec_writer_opts *wo, struct drain *drain,
		     struct proc_track *track, const struct frec_file_info *info,
		     track_stats_fn stats_fn, void *stats_ctx, uint64_t file_start_ns);
/* The command's own process (or a --pid target): the job, whatever it runs. */
void ring_mode_job_root(struct ring_mode *m, uint32_t pid);
/* SIGUSR2: a snapshot, now. */
void ring_mode_signal(struct ring_mode *m, uint64_t now_ns);
/* The main loop, often: hangs looked for, due triggers written. */
void ring_mode_poll(struct ring_mode *m, uint64_t now_ns);
/* --status-interval: the running summary line, when one is due.  procs:
 * processes seen (forked) and exited so far; cpu_s: the recorder's CPU. */
void ring_mode_status(struct ring_mode *m, uint64_t now_ns, uint64_t procs, uint64_t exited,
		      double cpu_s);
/* At the end, while the probes are still attached: every trigger pending
 * is written now, without the rest of its delay. */
void ring_mode_last(struct ring_mode *m, struct drain *drain);
/* The end-of-run lines; rs read before the writer closed. */
void ring_mode_report(const struct ring_mode *m, const struct frec_ring_stats *rs,
		      uint64_t events, const char *output, double cpu_s, double lifetime_s);
void ring_mode_free(struct ring_mode *m);

#endif
