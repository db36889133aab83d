/* The timeline output: Chrome trace event JSON (the "JSON trace" format
 * ui.perfetto.dev and chrome://tracing open), written while the decoder
 * streams the events, so memory holds only per-thread and per-counter state.
 *
 * Layout: one process track per traced process (per file: the same pid on
 * two nodes is two tracks), named "comm (pid P) host H rank R"; CUDA calls,
 * system calls, NCCL calls and the calls of every other family (named by
 * its descriptor: model_events.h) are complete ("X") slices on their thread; a
 * slice that would overlap an earlier slice of its thread without nesting
 * (or that cannot be checked against the thread's recent slices) is written
 * as an async slice ("b"/"e") instead, so the X slices of every thread nest
 * strictly; RDMA work requests are async slices from post to completion;
 * GPU memory in use is a counter ("C") per process and device; steps are
 * slices on a "steps" track of their process; the GPU-idle intervals of the
 * findings model (model_findings.h: findings_proc.idle) are slices on a
 * "GPU idle" track of their process, category gpu_idle, named by the cause
 * that holds most of the interval (dataloader, pageable_copy,
 * sync_checkpoint, host_sync, launch_bound (a launch-bound run's gaps),
 * nccl_exchange, straggler (time inside collectives), or "unexplained";
 * findings_idle_cause), with each cause's ms in args.  GPU kernels (the
 * CUPTI records of a job recorded with --gpu-kernels) are slices, category
 * gpu, on a track per device and stream of their process ("GPU 0 stream
 * 7"), named by the kernel, its launch's correlation id, grid and block in
 * args.  CPU samples are omitted (the
 * flame graph and the report show them).  ts/dur are microseconds from the
 * origin (the earliest event of all files on the common clock,
 * out_clock_offset_ns).  The writer streams in the one pass over the
 * files: the offsets are final from the first event (the decoder's align
 * stage, with model_nccl, which aligns the nodes on collective exits), and
 * the origin comes from the EVENTS chunk headers its metadata pass read.
 *
 * Not for: analyses (models), or the command line (cmd_timeline.c). */
#ifndef FLIGHTREC_OUT_TIMELINE_H
#define FLIGHTREC_OUT_TIMELINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "frec_error.h"

struct trace_set;
struct out_timeline;

struct out_timeline_stats {
	uint64_t slices;        /* X */
	uint64_t demoted;       /* written async because they did not nest */
	uint64_t async;         /* b/e pairs and halves (rdma) */
	uint64_t counters;      /* C */
	uint64_t instants;      /* i */
	uint64_t steps;
	uint64_t gpu_idle;      /* X slices on the "GPU idle" tracks */
	uint64_t gpu_kernels;   /* X slices on the GPU stream tracks */
	uint64_t filtered;      /* events left out by the filter */
};

/* What to keep (all zero: everything).  A window keeps the events whose
 * interval meets [from_ns, to_ns] (ns from the origin, as the JSON's ts:
 * a windowed file's times match the whole one's); each memory counter
 * also gets its value at from_ns.  A process filter keeps the events of
 * process pid (in any file) and/or of the processes whose launcher rank
 * is rank, and names only those processes. */
struct out_timeline_filter {
	int window;
	int64_t from_ns, to_ns;
	int filter_pid;
	uint32_t pid;
	int filter_rank;
	int64_t rank;
};

enum out_timeline_format {
	OUT_TIMELINE_JSON = 0,
	/* Perfetto's own protobuf trace (perfetto.protos.Trace: TracePacket,
	 * TrackDescriptor, TrackEvent; out_perfetto.c): the same tracks,
	 * slices and counters, ns resolution, and no 256 MB string limit */
	OUT_TIMELINE_PERFETTO = 1,
};

/* Registers the streaming writer with ts (before trace_set_run; it asks
 * for the nccl model, which aligns the files' clocks, the mem model,
 * whose ledger gives the memory counters, and the findings model, whose
 * idle intervals it draws at the end) and writes the document's head
 * to out.  filter may be NULL. */
int out_timeline_begin(struct trace_set *ts, FILE *out, enum out_timeline_format format,
		       const struct out_timeline_filter *filter, struct out_timeline **t,
		       struct frec_error *err);

/* After trace_set_run: the last steps, the process and thread names, the
 * document's tail.  Returns 0 or -1 (err filled: write failed). */
int out_timeline_end(struct out_timeline *t, struct trace_set *ts, struct frec_error *err);

const struct out_timeline_stats *out_timeline_stats(const struct out_timeline *t);
void out_timeline_free(struct out_timeline *t);

#endif
