/* The ring-buffer drain thread: wakes on a timer (no wakeup per event: that
 * triples the per-event cost in the kernel), moves events into the events
 * chunk builder, and replaces raw stacks by ids of the stack table.  It never
 * waits for compression or disk: sealed chunks go to the writer's thread.
 *
 * Nothing optional slows it.  Work that only makes records smaller - today
 * the sparse raw stacks of --stack dwarf (symbols/ustack_sparse.h) - is done
 * here while the drain keeps up, and steps aside when it does not: while the
 * ring is more than 1/16 full (read from the ring's own consumer and producer
 * pages, drain/ring_fill.h, before each raw stack), a copy is written whole,
 * unplanned, at the whole-copy path's cost, and counted (ring_sink
 * whole_behind: the "ustack_behind" entry of the trace's STATS and END, and
 * the end-of-run line).  So once the ring holds more than 1/16 of its size
 * the drain empties it as fast as the whole-copy path would, and it can drop
 * an event only where the whole-copy path would have filled the other 15/16
 * too.  The writer's thread is never given more than the whole-copy path
 * gives it (a copy is whole or smaller).
 *
 * Measured, before choosing this over a planner thread of its own: on the
 * 100,000-pair cuda_storm a sparse copy cost the drain 6.6 us against 0.8 us
 * for a whole one, three quarters of it the scan for the copy's last byte
 * read, now a word at a time; with that, planning costs about as much as the
 * 16 KiB copy it saves (1.0 against 0.75 us a copy at 40,000 calls/s, the
 * writer 0.3 against 1.1 us), so a thread of its own would save the drain
 * little and add a queue and a copy; and unwinds that take libdw's slow path
 * cost far more, which stepping aside bounds (tests/bench/bench_drain.py). */
#ifndef FLIGHTREC_DRAIN_H
#define FLIGHTREC_DRAIN_H

#include <stdint.h>

#include "events.h"
#include "frec_writer.h"
#include "symbols/stack_table.h"
#include "symbols/sym_collector.h"
#include "track/python.h"
#include "symbols/dso_table.h"
#include "attach/uprobe_family.h"
#include "drain/ring_record.h"

/* Process events and RDMA ops-table reports go to the tracking thread too. */
typedef void (*drain_proc_cb)(void *ctx, const struct fr_ev_common *ev);
/* Every event committed, as written (the flight recorder's triggers). */
typedef void (*drain_event_cb)(void *ctx, const struct fr_ev_common *ev);

/* What the drain works with; everything is the caller's and outlives it.
 * NULL members are features not asked for. */
struct drain_config {
	int ring_fd;                        /* the BPF ring buffer map */
	struct frec_writer *writer;         /* its EVENTS chunks go here */
	struct stack_table *stacks;         /* raw stacks become ids of this table */
	struct sym_collector *syms;         /* told about every new stack */
	struct python_state *python;        /* told about code objects in stacks */
	struct ustack_sparse *sparse;       /* --stack dwarf's sparse copies */
	/* fr_ustack_tops: each thread's stack top its sparse plans find, which
	 * bounds the kernel's later copies of that thread; -1: never bounded */
	int ustack_tops_fd;
	/* rdma: the data path is attached as soon as a context's ops table is
	 * seen (setup to first post can take 2 ms) */
	struct uprobe_family *rdma_dp;
	const struct uprobe_family *rdma_ctrl; /* its control path: attached = verbs in use */
	struct dso_table *dsos;
	bool quiet;
	drain_proc_cb on_proc;              /* process events (the tracking thread) */
	void *on_proc_ctx;
	drain_event_cb on_commit;           /* every event committed, or NULL */
	void *on_commit_ctx;
};

struct drain;

/* Starts the drain thread.  0 and *out, or -errno with err filled and
 * nothing left running. */
int drain_start(const struct drain_config *cfg, struct drain **out, struct frec_error *err);
/* What the ring sink counted (events and losses per probe, stacks): its
 * atomics may be read while the drain runs. */
const struct ring_sink *drain_counts(const struct drain *d);
/* Has the drain thread empty the ring buffer and seal its chunk, and waits
 * for that (at most timeout_ns): what the kernel had sent before this call
 * is then in the writer's queue.  Returns 0, or -1 on timeout. */
int drain_flush_sync(struct drain *d, uint64_t timeout_ns);
/* Drains what is left, flushes, joins; held processes go on, and the
 * writer is not used again (drain_counts still answers).  Safe with NULL
 * and twice. */
void drain_stop(struct drain *d);
/* drain_stop, then frees.  Before the writer is closed or abandoned. */
void drain_free(struct drain *d);

#endif
