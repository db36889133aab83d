/* What the HTML report needs that no model provides yet, gathered from the
 * event stream with bounded memory: CPU samples per (file, pid, stack) so
 * the report can draw one flame graph per process, and copies per
 * cudaMemcpyKind (model_cuda does not keep the kind the caller passed).
 * Plus counts of the event families, so the report can say "no NCCL events
 * in this trace".
 *
 * Not for output: out_report.c turns these results into the page. */
#ifndef FLIGHTREC_OUT_REPORT_DATA_H
#define FLIGHTREC_OUT_REPORT_DATA_H

#include <stddef.h>
#include <stdint.h>
#include "flame_tree.h"
#include "frec_error.h"

struct trace_set;

struct report_copy_kind {
	uint64_t calls, bytes, total_ns;
};

struct report_proc_tree {
	uint32_t file_index, pid;
	uint64_t samples;
	struct flame_tree *tree; /* owned */
};

struct report_data {
	/* CPU */
	uint64_t cpu_samples;
	struct flame_tree *cpu_all;         /* every sample; NULL when none */
	struct report_proc_tree *procs;     /* the busiest processes, most samples first */
	size_t n_procs;
	size_t procs_left_out;              /* processes with samples beyond the cap */
	/* CUDA */
	uint64_t cuda_events;
	struct report_copy_kind copies[6];  /* enum fr_cuda_copy_kind; 5: unknown */
	/* other families, counted for the hook sections */
	uint64_t cuda_alloc_events, nccl_events, rdma_events, step_events;
};

/* At most this many per-process flame graphs go into the report. */
#define REPORT_MAX_PROC_TREES 32

struct report_collect;

/* Registers the collector with ts (before trace_set_run). */
struct report_collect *report_collect_attach(struct trace_set *ts, struct frec_error *err);
/* After trace_set_run: symbolizes and builds the result (owned by the
 * collector, which trace_set_free releases). */
const struct report_data *report_collect_result(struct report_collect *c, struct trace_set *ts,
						struct frec_error *err);

#endif
