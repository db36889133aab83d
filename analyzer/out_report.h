/* The HTML report: ONE self-contained file (all JS and CSS inline, a
 * Content-Security-Policy that forbids every fetch) that opens from disk in
 * any current browser.  The page is data + renderer: each section is a small
 * function here that writes one JSON member from one model's result, and
 * analyzer/web/report.js draws it (DOM built with textContent only, charts
 * as inline SVG, flame graphs through the one renderer analyzer/web/flame.js).
 * Sizes are bounded: aggregated views, pruned flame trees, never one element
 * per event.
 *
 * Not for gathering data (models, out_report_data.c) nor the command line.
 *
 * Hooks: the sections for models still being written take their result
 * through the members marked HOOK below; NULL means "this build has no such
 * model", and the page then says what the trace holds instead of inventing
 * numbers. */
#ifndef FLIGHTREC_OUT_REPORT_H
#define FLIGHTREC_OUT_REPORT_H

#include <stdio.h>
#include "frec_error.h"

struct trace_set;
struct report_data;

struct out_report_input {
	struct trace_set *ts;             /* after trace_set_run */
	const struct report_data *data;   /* out_report_data.c: cpu, cuda table, counts */
	const void *syscalls;             /* model_syscalls state, NULL when not run */
	/* HOOK: model_mem result (in use over time, in-use snapshots, alloc
	 * graph, leaks, failed allocations) */
	const void *mem;
	/* HOOK: model_cuda result (replaces the simple CUDA table; pinned vs
	 * pageable copies) */
	const void *cuda;
	/* HOOK: stragglers model result (rank x step heatmap, verdict) */
	const void *stragglers;
	/* HOOK: rdma model result (connections, latency histograms) */
	const void *rdma;
};

/* Max flame frames embedded per graph (the "all" graph gets twice this). */
#define REPORT_FLAME_MAX_NODES 20000

int out_report_write(FILE *out, const struct out_report_input *in, struct frec_error *err);

#endif
