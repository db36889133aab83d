/* The stragglers model: which rank the others wait for, since when, what it
 * costs per step, and what that rank does in its slow compute segments.
 * It wraps the NCCL model (ranks, matched collectives, steps, clock
 * alignment) and also keeps the CPU samples and system calls it needs for
 * the evidence.
 *
 * Definitions (see /work/shared/research/anchor-analysis.md, section 1):
 *   ready time     a rank's entry into a collective instance (nccl.h hook:
 *                  its first RDMA post, when such data exists)
 *   lateness       ready time minus the median ready time of the instance
 *   lost           latest ready time minus the second latest: what every
 *                  other rank waited for the latest one
 *   compute        per step, step time minus time inside NCCL calls (the
 *                  compute segments: leaving call i-1 to entering call i)
 *   score          fastest rank's median compute / this rank's (NVRx's
 *                  relative section score); below 0.75 is flagged
 *   verdict        a rank is THE straggler when it is the latest in at least
 *                  half of the complete collectives (of the one class with
 *                  the largest median spread of ready times: with several
 *                  collectives per step only the one after the compute
 *                  carries lateness, see pick_class) and its median lateness
 *                  exceeds max(2% of the median step time, 3 MAD of the
 *                  other ranks' lateness); otherwise there is none
 *   since step     the change point: the step s maximizing, over its steps
 *                  from s on, the steps it is latest in (in at least half
 *                  of that step's collectives) minus the steps it is not
 *   cost per step  sum of lost over the collectives it was latest in, since
 *                  that step, divided by its steps since then
 *   confidence     share of collectives since then in which it was latest,
 *                  times (1 - threshold / median lateness)
 *
 * Not for output (cmd_stragglers.c lays it out). */
#ifndef FLIGHTREC_MODEL_STRAGGLERS_H
#define FLIGHTREC_MODEL_STRAGGLERS_H

#include <stddef.h>
#include <stdint.h>
#include "model.h"
#include "model_nccl.h"

extern const struct model_ops model_stragglers_ops;

#define STRAGGLER_SCORE_FLAG 0.75

struct straggler_row {
	uint32_t rank_index;        /* into nccl->ranks */
	size_t steps;
	double mean_step_ms;        /* -1 when no steps */
	double mean_wait_ms;        /* time inside NCCL calls per step */
	double median_compute_ms;   /* per step; -1 when no steps */
	double score;               /* (0, 1]; -1 unknown */
	uint64_t latest;            /* complete collectives it was the latest in */
	double median_lateness_ms;  /* 0 when in no complete collective */
};

/* A function the straggler's compute segments hold much more of. */
struct straggler_frame {
	const char *name;           /* interned by the set's symbolizer */
	double share;               /* of its CPU samples in compute segments */
	double others_share;        /* pooled over the other ranks */
};

/* A system call the straggler spends much more time in. */
struct straggler_syscall {
	const char *name;
	uint32_t nr;
	uint64_t calls;
	double ms_per_step;
	double others_ms_per_step;  /* mean over the other ranks */
};

#define STRAGGLER_MAX_CAUSES 3

struct straggler_verdict {
	int found;
	uint32_t rank_index;        /* into nccl->ranks */
	double confidence;
	double cost_ms_per_step;
	int32_t since_step;
	uint64_t latest;            /* collectives since since_step it was latest in */
	uint64_t collectives;       /* complete collectives since since_step */
	double median_lateness_ms;
	double threshold_ms;
	struct straggler_frame frames[STRAGGLER_MAX_CAUSES];
	size_t n_frames;
	struct straggler_syscall syscalls[STRAGGLER_MAX_CAUSES];
	size_t n_syscalls;
	uint64_t samples;           /* its CPU samples in compute segments */
	uint64_t others_samples;
	double offcpu_share;        /* of its compute time; -1 unknown */
	double others_offcpu_share;
	char evidence[1024];
};

struct stragglers_result {
	const struct nccl_result *nccl;
	struct straggler_row *rows; /* one per nccl rank, same order */
	size_t n_rows;
	size_t complete_collectives; /* instances every rank of the comm is in */
	size_t verdict_collectives;  /* of those, the class the verdict looks at */
	double median_step_ms;      /* -1 when no steps */
	double noise_mad_ms;        /* MAD of the non-candidate ranks' lateness */
	int32_t candidate;          /* rank index latest most often; -1 none */
	char why_none[256];         /* when no straggler: the reason, for humans */
	struct straggler_verdict verdict;
	/* With a verdict, per nccl instance (nccl->instances' order): the lost
	 * of each complete instance the straggler was latest in since
	 * since_step -- what each other member waited for it there, the sum
	 * cost_ms_per_step is made of; 0 for every other instance.  NULL
	 * without a verdict.  The findings model charges exactly this to the
	 * straggler, inside each member's wait (findings_nccl.c). */
	int64_t *charged_lost_ns;
};

const struct stragglers_result *model_stragglers_result(const void *state);

/* Ignore FR_EV_STEP events: steps from the collective period. */
void model_stragglers_ignore_step_markers(void *state);

#endif
