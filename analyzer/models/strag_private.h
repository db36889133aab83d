/* What the parts of the stragglers model share: the CPU samples and system
 * calls it keeps for the evidence, the model's state, and the functions
 * one part calls in another.  Private to model_stragglers.c and its
 * strag_*.c parts; everything else reads model_stragglers.h.
 *
 *   model_stragglers.c  the model interface: wraps the NCCL model, keeps
 *                       the samples and system calls, runs the stages
 *   strag_stats.c       median and MAD
 *   strag_rows.c        per-rank rows: step, wait and compute times, score
 *   strag_verdict.c     the verdict over the complete collectives: the
 *                       class, the candidate, the threshold, since which
 *                       step, cost and confidence
 *   strag_evidence.c    what the straggler does in its compute segments
 *                       that the others do not, and that as one paragraph */
#ifndef FLIGHTREC_STRAG_PRIVATE_H
#define FLIGHTREC_STRAG_PRIVATE_H

#include <stddef.h>
#include <stdint.h>
#include "model_stragglers.h"
#include "proc_lists.h"

struct trace_set;

/* What the evidence keeps of each CPU sample and system call, in a list
 * per process (proc_lists.h). */
struct cpu_sample {
	uint64_t ts_ns;
	uint32_t stack_id;
};

struct syscall_ev {
	uint64_t ts_ns;
	uint64_t duration_ns;
	uint32_t nr;
};

struct model_stragglers {
	void *nccl;
	struct proc_lists samples;  /* struct cpu_sample */
	struct proc_lists syscalls; /* struct syscall_ev */
	struct stragglers_result result;
};

/* strag_stats.c: median of v[0..n) (reorders v; 0 when n is 0), and the
 * median absolute deviation (reorders and overwrites v). */
double strag_median(double *v, size_t n);
double strag_mad(double *v, size_t n);

/* The stages, in the order finish() runs them once r->nccl is set; each
 * returns 0, or -1 when memory runs out. */

/* strag_rows.c: r->rows and r->median_step_ms. */
int strag_build_rows(struct stragglers_result *r);

/* strag_verdict.c: the rows' latest and median lateness, the candidate,
 * and r->verdict (found) or r->why_none. */
int strag_verdict(struct stragglers_result *r);

/* strag_evidence.c, for a found verdict: its frames, system calls and
 * off-CPU shares (sorts the kept samples and system calls; fills err),
 * then all of that as the evidence paragraph. */
int strag_evidence(struct model_stragglers *m, struct trace_set *ts, struct frec_error *err);
void strag_write_evidence(struct stragglers_result *r);

#endif
