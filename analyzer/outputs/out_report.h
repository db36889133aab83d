/* The HTML report: ONE self-contained file (all JS and CSS inline, a
 * Content-Security-Policy that forbids every fetch) that opens from disk in
 * any current browser.  The page is data + renderer: each section is a small
 * function (out_report_*.c, listed in out_report_sections.h) that writes one
 * JSON member from one model's result, and analyzer/web/report.js draws it
 * (DOM built with textContent only, charts as inline SVG, flame graphs
 * through the one renderer analyzer/web/flame.js).
 * Sizes are bounded: aggregated views, pruned flame trees, never one element
 * per event.
 *
 * The page's data object: title, summary, findings, cpu, mem, cuda,
 * stragglers, rdma, syscalls, presence ("findings" is `findings --json`'s
 * object: out_findings_json.h).
 *
 * Not for gathering data (models, out_report_data.c) nor the command line.
 *
 * Each model section takes its model's state through out_report_input; a
 * NULL state, or a model that saw none of its events, writes null and the
 * page says what the trace holds instead of inventing numbers. */
#ifndef FLIGHTREC_OUT_REPORT_H
#define FLIGHTREC_OUT_REPORT_H

#include <stddef.h>
#include <stdio.h>
#include "frec_error.h"

struct trace_set;
struct report_data;

struct out_report_input {
	struct trace_set *ts;             /* after trace_set_run */
	const struct report_data *data;   /* out_report_data.c: cpu, cuda table, counts */
	const void *syscalls;             /* model_syscalls state, NULL when not run */
	/* model states (what trace_set_use_model returned); NULL: not run, and
	 * the section says what the trace holds instead */
	const void *mem;          /* model_mem: peak, in use over time, alloc graph,
				     leaks, failed allocations */
	/* model_mem states of a second pass, each set to one instant
	 * (model_mem_set_at): the in-use graphs of the report's time slider */
	const void *const *mem_snapshots;
	size_t n_mem_snapshots;
	const void *cuda;         /* model_cuda: API table with self time, copies
				     pinned/pageable, async-then-sync */
	const void *cuda_time;    /* model_call_time (cuda_time): the CUDA-time flame graph */
	const void *stragglers;   /* model_stragglers: verdict, rank x step heatmaps */
	const void *rdma;         /* model_rdma: connections, latency by opcode/size */
	const void *findings;     /* model_findings: what to fix first (the page's
				     first section after the summary) */
};

/* Max flame frames embedded per graph (the "all" graph gets twice this). */
#define REPORT_FLAME_MAX_NODES 20000

int out_report_write(FILE *out, const struct out_report_input *in, struct frec_error *err);

#endif
