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

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "events.h"
#include "frec_writer.h"
#include "symbols/stack_table.h"
#include "symbols/sym_collector.h"
#include "track/python.h"
#include "symbols/dso_table.h"
#include "attach/uprobe_family.h"
#include "drain/ring_record.h"
#include "drain/ring_fill.h"
#include "attach/attach_hold.h"

struct ring_buffer;

/* Process events and RDMA ops-table reports go to the tracking thread too. */
typedef void (*drain_proc_cb)(void *ctx, const struct fr_ev_common *ev);
/* Every event committed, as written (the flight recorder's triggers). */
typedef void (*drain_event_cb)(void *ctx, const struct fr_ev_common *ev);

struct drain {
	struct ring_buffer *rb;
	struct frec_builder *builder;
	struct ring_sink sink;      /* ring records into file records; counts events */
	struct ring_fill fill;      /* how full the ring is */
	uint64_t behind_bytes;      /* filled past this, the drain is behind */
	struct sym_collector *syms; /* told about every new stack */
	uint64_t *kips;             /* kernel ips already sent to syms (0: empty) */
	size_t kips_n, kips_cap;
	drain_proc_cb on_proc;
	void *on_proc_ctx;
	struct python_state *python;     /* told about code objects in stacks */
	/* rdma: attach the data path as soon as a context's ops table is seen
	 * (setup to first post can take 2 ms); NULL without rdma probes */
	struct uprobe_family *rdma_dp;
	const struct uprobe_family *rdma_ctrl; /* its control path: attached = verbs in use */
	struct dso_table *dsos;
	bool quiet;
	struct pid_parent { uint32_t pid, ppid; } parents[1024]; /* from fork events */
	/* ops tables whose provider mapping was not known yet: retried every
	 * drain period; given up after a second (a held process is then let
	 * go, the others handed to the tracking thread when this is full) */
	struct pending_ops {
		struct fr_ev_rdma_ctrl ev;
		uint64_t give_up_ns;
		uint32_t lineage[4];
		int n_lineage;
	} ops_retry[64];
	int n_ops_retry;
	/* processes held for their data path (attach_hold.h), and those to let
	 * go once the events drained so far are handled */
	struct attach_hold hold;
	struct held_release { uint32_t pid; uint64_t held_ns; bool lost; } releases[64];
	int n_releases;
	unsigned period_us;       /* sleep between drains */
	uint64_t flush_period_ns; /* seal a partial chunk this often */
	drain_event_cb on_commit;
	void *on_commit_ctx;
	pthread_t thread;
	atomic_int stop;
	/* drain_flush_sync: requests and the last one done */
	atomic_uint flush_req, flush_done;
	uint64_t last_flush_ns;
};

/* ring_fd: the BPF ring buffer map.  Returns 0 or -errno. */
int drain_start(struct drain *d, int ring_fd, struct frec_writer *w,
		struct stack_table *stacks, struct sym_collector *syms,
		struct python_state *python, struct uprobe_family *rdma_dp,
		const struct uprobe_family *rdma_ctrl, struct dso_table *dsos, bool quiet,
		drain_proc_cb on_proc, void *ctx);
/* Before drain_start: every committed event also goes to fn (on the drain
 * thread). */
void drain_watch(struct drain *d, drain_event_cb fn, void *ctx);
/* Has the drain thread empty the ring buffer and seal its chunk, and waits
 * for that (at most timeout_ns): what the kernel had sent before this call
 * is then in the writer's queue.  Returns 0, or -1 on timeout. */
int drain_flush_sync(struct drain *d, uint64_t timeout_ns);
/* Drains what is left, flushes, joins.  Frees the builder. */
void drain_stop(struct drain *d);

#endif
