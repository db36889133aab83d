/* What writes a flight-recorder snapshot (flightrec record --ring
 * --trigger): the drain thread shows every event it commits to
 * triggers_on_event, which notices an out-of-memory allocation, a failed
 * NCCL call or a traced process that died badly; the main thread adds
 * SIGUSR2 and hangs (it polls for those), takes what is pending when it is
 * due, and decides, with the caps and the rate limit, whether a snapshot is
 * written.  An OOM's snapshot waits a short while (--trigger-delay) so the
 * aftermath is in it: the caching allocator's cache flush and retry, whose
 * outcome is followed here. */
#ifndef FLIGHTREC_TRIGGERS_H
#define FLIGHTREC_TRIGGERS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "events.h"
#include "frec_records.h"
#include "track/job_pids.h"

/* Bits of struct triggers.armed: 1 << enum fr_snapshot_trigger. */
#define TRIGGER_BIT(t) (1u << (t))
/* --trigger exit=all: every traced process's failure, not only the job's
 * (job_pids.h); set with TRIGGER_BIT(FR_TRIGGER_EXIT). */
#define TRIGGER_EXIT_ALL (1u << 31)
#define TRIGGER_KINDS_MASK (~TRIGGER_EXIT_ALL)

struct trigger_hit {
	uint16_t kind;        /* enum fr_snapshot_trigger */
	uint64_t at_ns;       /* CLOCK_MONOTONIC of the event */
	uint64_t due_ns;      /* when the snapshot is written */
	uint32_t pid, tid;
	char detail[240];
};

struct frec_writer;
struct hang_watch;

struct triggers {
	unsigned armed;       /* TRIGGER_BIT of each trigger asked for */
	/* the ring keeps a pending trigger's event and aftermath until its
	 * snapshot (frec_writer_ring_hold); NULL: none */
	struct frec_writer *ring;
	/* the drain's cuda events also go to the asynchronous hang watch
	 * (hang_watch.h); NULL: none */
	struct hang_watch *watch;
	uint64_t delay_ns;    /* OOM and NCCL errors: aftermath kept */
	pthread_mutex_t mu;
	/* Under mu: */
	bool pending;
	struct trigger_hit hit;
	uint32_t merged;      /* later triggers folded into the pending one */
	/* the failed allocation followed for its retry (tid 0: none) */
	uint32_t oom_pid, oom_tid;
	uint64_t oom_bytes, oom_end_ns;
	uint16_t oom_retry;   /* enum fr_oom_retry */
	/* exit without exit=all: the processes that died badly, each decided
	 * (the job's or not) by the main thread once the tracking thread has
	 * caught up with it (triggers_take_exits) */
	struct trigger_hit *exits;
	size_t n_exits, cap_exits;
	/* Drain thread only: the job's CUDA/NCCL/RDMA callers (marked in
	 * job_pids, NULL: none); a pid cache so a call costs no lock */
	struct job_pids *job;
	uint32_t job_cache[64];
	unsigned job_cache_gen[64];
};

void triggers_init(struct triggers *t, unsigned armed, uint64_t delay_ns);
void triggers_destroy(struct triggers *t);

/* The drain thread, for every event it committed (ctx: struct triggers). */
void triggers_on_event(void *ctx, const struct fr_ev_common *ev);

/* Any thread: a trigger the caller saw itself (SIGUSR2, a hang); it is due
 * at due_ns.  Folded into one already pending. */
void triggers_raise(struct triggers *t, const struct trigger_hit *hit);

/* The main thread: the exits waiting for their decision (job_pids), moved
 * into *out (the caller frees it); their number. */
size_t triggers_take_exits(struct triggers *t, struct trigger_hit **out);

/* The main thread: the pending trigger once due (true, *out filled, the
 * number folded into it in *merged and what the OOM's retry did in
 * *oom_retry), cleared. */
bool triggers_take_due(struct triggers *t, uint64_t now_ns, struct trigger_hit *out,
		       uint32_t *merged, uint16_t *oom_retry);

/* "oom", "nccl-error", ...: a trigger's name as --trigger and messages say it. */
const char *trigger_name(unsigned kind);
/* Parses a --trigger list into TRIGGER_BIT()s (exit=all: with
 * TRIGGER_EXIT_ALL); -1 with the bad word in *bad on an unknown one. */
int triggers_parse(const char *list, unsigned *out, const char **bad);

#endif
