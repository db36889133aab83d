/* What the HTML report shows beside the models' own sections, read from
 * the models and the decoder (never from events): the CPU trees (model_cpu,
 * one per busiest process), copies per cudaMemcpyKind (model_cuda) and the
 * event counts per family, so the report can say "no NCCL events in this
 * trace".
 *
 * Not for output: out_report.c turns these results into the page. */
#ifndef FLIGHTREC_OUT_REPORT_DATA_H
#define FLIGHTREC_OUT_REPORT_DATA_H

#include <stddef.h>
#include <stdint.h>
#include "flame_tree.h"
#include "model_cpu.h"
#include "model_cuda.h"

struct trace_set;

struct report_data {
	/* CPU (trees owned by the cpu model) */
	uint64_t cpu_samples;
	const struct flame_tree *cpu_all;       /* every sample; NULL when none */
	const struct cpu_proc_tree *procs;      /* the busiest processes, most samples first */
	size_t n_procs;
	size_t procs_left_out;                  /* processes with samples beyond the cap */
	/* CUDA */
	uint64_t cuda_events;
	const struct cuda_kind_count *copies;   /* CUDA_KINDS; NULL without the cuda model */
	/* other families, counted for the hook sections */
	uint64_t cuda_alloc_events, nccl_events, rdma_events, step_events;
};

/* At most this many per-process flame graphs go into the report (the cpu
 * model's per_process). */
#define REPORT_MAX_PROC_TREES 32

/* After trace_set_run, from the models' states (cpu, cuda, mem). */
void report_data_build(struct report_data *d, struct trace_set *ts, const void *cpu,
		       const void *cuda, const void *mem);

#endif
