/* Two recordings compared, as `perf diff` compares two profiles, for
 * training jobs: before and after a change, each a set of trace files
 * whose models have run.  Asked of the models after both passes; nothing
 * recounted.
 *
 * Normalised per step when both sides know their steps (the findings
 * model's steps), else per second of wall time; CPU as ms per unit (and
 * its share of the side's samples beside); GPU memory at the peak as
 * bytes.  The function lists hold one row per frame name over both
 * sides: CPU total and self share (the flame tree: total once per stack,
 * recursion counted once), and the CUDA time and GPU memory in use at the
 * peak of the calls it made itself (the innermost frame of the call's
 * stack that is not a CUDA API function: who called cudaMemcpy, not every
 * ancestor of it).  The stack lists key on the whole merged stack.
 * Comparable unless the probes (event families present), the sampling
 * rate (estimated: stack_calls.h) or the ranks differ; the notes say
 * which.  Not for output (out_diff.c). */
#ifndef FLIGHTREC_TRACE_DIFF_H
#define FLIGHTREC_TRACE_DIFF_H

#include <stddef.h>
#include <stdint.h>
#include "frec_error.h"
#include "model_findings.h"

struct trace_set;
struct model_cpu_result;
struct mem_result;
struct stragglers_result;
struct stack_calls_result;

struct diff_input {
	struct trace_set *ts;
	const struct model_cpu_result *cpu;
	const struct mem_result *mem;
	const struct findings_result *findings;
	const struct stragglers_result *stragglers; /* may be NULL */
	const struct stack_calls_result *calls;
};

struct diff_side {
	size_t files, gpu_procs, ranks;
	size_t steps;               /* 0: unknown */
	const char *steps_from;
	double wall_s, per;         /* per: the unit's count (steps or seconds) */
	double step_ms;             /* wall / steps; -1 unknown */
	double gpu_idle_ms, gpu_idle_share; /* share of wall x GPU processes; -1 none */
	uint64_t cpu_samples;
	double sample_hz;           /* estimated; 0 unknown */
	uint64_t mem_peak_bytes;    /* the largest file's device peak */
	unsigned families;          /* bit per DIFF_FAM_* with events */
	int straggler;              /* a verdict */
	int32_t straggler_rank;
	double straggler_cost_ms_per_step;
};

enum { DIFF_FAM_CPU, DIFF_FAM_SYSCALLS, DIFF_FAM_CUDA, DIFF_FAM_NCCL, DIFF_FAM_RDMA, DIFF_FAMS };
const char *diff_family_name(unsigned fam);

struct diff_finding {
	enum finding_kind kind;
	int listed[2];              /* above the threshold, per side */
	int has_cost;
	double cost[2];             /* ms per unit; 0 when not found on that side */
};

/* A row of one list: key (function, stack or CUDA function) and its
 * values per side. */
#define DIFF_VALUES 5
struct diff_row {
	char *key;
	double v[2][DIFF_VALUES];
};
/* Function rows: CPU ms under it per unit (samples / the estimated
 * rate; samples per unit when no rate is known), CPU total share, CPU
 * self share, CUDA ms per unit, GPU bytes in use at the peak.  Stack rows:
 * CPU ms per unit, CPU share, CUDA ms per unit, GPU bytes at the peak.
 * CUDA call rows: calls, ms, errors per unit.  The CPU lists are ordered
 * by time per unit, not share: shares add up to one, so a function that
 * grew makes every other one shrink by as much, and the one that changed
 * would not stand out. */
enum { DF_CPU_MS, DF_CPU_TOTAL, DF_CPU_SELF, DF_CUDA_MS, DF_MEM_BYTES };
enum { DS_CPU_MS, DS_CPU, DS_CUDA_MS, DS_MEM_BYTES };
enum { DC_CALLS, DC_MS, DC_ERRORS };

/* One list ordered by one value's change: indices into rows. */
struct diff_order {
	size_t *idx;                /* |after - before| descending, then key; changed rows only */
	size_t n;
};

#define DIFF_MAX_NOTES 8

struct trace_diff {
	struct diff_side side[2];   /* before, after */
	const char *unit;           /* "step" or "second" */
	int comparable;
	char notes[DIFF_MAX_NOTES][200];
	size_t n_notes;
	struct diff_finding findings[FIND_KINDS]; /* kinds found on either side */
	size_t n_findings;
	struct diff_row *funcs, *stacks, *calls;
	size_t n_funcs, n_stacks, n_calls;
	struct diff_order by_cpu, by_cuda, by_mem;           /* functions */
	struct diff_order stacks_cpu, stacks_cuda, stacks_mem;
	struct diff_order calls_ms;
};

int trace_diff_build(const struct diff_input *before, const struct diff_input *after,
		     struct trace_diff *out, struct frec_error *err);
void trace_diff_free(struct trace_diff *d);

#endif
