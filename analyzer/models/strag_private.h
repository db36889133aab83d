/* What the parts of the stragglers model share: the model's state, and
 * the functions one part calls in another.  Private to model_stragglers.c and its
 * strag_*.c parts; everything else reads model_stragglers.h.
 *
 *   model_stragglers.c  the model interface: wraps the NCCL model, runs
 *                       the stages and the second look at the events
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
#include "events.h"
#include "frec_error.h"

struct trace_set;

struct strag_look;

struct model_stragglers {
	void *nccl;
	struct strag_look *look;    /* the second look under way (strag_evidence.c) */
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

/* strag_evidence.c, for a found verdict, in the model's second look at
 * the events: begin (the ranks' segments since the verdict's step; fills
 * err), every CPU sample and system call of the set (-1: out of memory),
 * end (its frames, system calls and off-CPU shares; frees the look), then
 * strag_write_evidence.  strag_look_free for a look cut short. */
int strag_look_begin(struct model_stragglers *m, struct trace_set *ts, struct frec_error *err);
int strag_look_feed(struct model_stragglers *m, uint32_t file_index, const struct fr_rec_hdr *rec);
int strag_look_end(struct model_stragglers *m);
void strag_look_free(struct model_stragglers *m);
void strag_write_evidence(struct stragglers_result *r);

#endif
