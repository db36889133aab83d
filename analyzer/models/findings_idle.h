/* What the files of the idle attribution share (findings_idle.c reads the
 * intervals, findings_attribute.c splits one among its causes,
 * findings_launch_bound.c reads the gaps of a launch-bound run).  Private
 * to those files. */
#ifndef FLIGHTREC_FINDINGS_IDLE_H
#define FLIGHTREC_FINDINGS_IDLE_H

#include "findings_private.h"

struct mark {
	uint64_t t;
	uint32_t ev;
	uint32_t open;
};

struct seg {
	uint64_t s, e;
};

struct ctx {
	struct fx_proc *p;
	struct trace_set *ts;
	struct symbolizer *sym;
	const struct trace_file *f;
	struct hmap sample_class; /* stack_id -> class + 1 (enum finding_kind, or FIND_KINDS: other) */
	const char **frames;
	size_t cap;
	struct seg *segs;         /* claimed by copies and system calls, this interval */
	size_t n_segs, cap_segs;
	int have_samples;
	char *const *paths;       /* the state's FXE_FDPATH names */
	size_t *fdpath;           /* indexes of p's FXE_FDPATH events, in time order */
	size_t n_fdpath;
};

/* What the rest of an interval (step 3: the thread's own work, not a
 * loader's or a checkpoint's) is charged to: host_sync after a
 * synchronize or a value read back, launch_bound in a launch-bound run's
 * gap, FIND_KINDS (unexplained) after an implicit synchronize or another
 * copy; and the stack
 * (with its CUDA leaf) that names it. */
struct rest_to {
	enum finding_kind kind;
	uint32_t stack_id;
	uint16_t leaf;
	int read_back;            /* the opener is a small copy to the host */
	uint64_t copy_bytes;      /* its bytes */
};


/* findings_attribute.c: the idle interval [a, b) of thread tid: its
 * causes, kept in p->idle (callers go in time order) and summed into p.
 * -1 when memory runs out. */
int fx_attribute(struct ctx *c, uint64_t a, uint64_t b, uint32_t tid,
		 const struct rest_to *rest_to);

/* findings_launch_bound.c: the run of device work from marks[from] (the
 * launch that ended an idle interval) to marks[to] (the synchronize
 * `opener`, which opens the next): when the host set its pace, the gaps
 * the replayed GPU idled in, attributed.  Not a launch-bound run:
 * nothing.  -1 when memory runs out. */
int fx_launch_run(struct ctx *c, const struct mark *marks, size_t from, size_t to,
		  const struct fx_ev *opener);

/* Whether e opens an idle interval (at *t: its return) or closes one (at
 * *t: its entry): the rule at the top of findings_idle.c. */
static inline int fx_opens_at(const struct fx_ev *e, uint64_t *t)
{
	if (e->type == FXE_SYNC || e->type == FXE_IMPLICIT || (e->type == FXE_COPY && !e->async) ||
	    (e->type == FXE_NCCL && !e->async)) {
		*t = e->t1;
		return 1;
	}
	return 0;
}

static inline int fx_closes_at(const struct fx_ev *e, uint64_t *t)
{
	if (e->type == FXE_WORK || (e->type == FXE_COPY && e->async && !e->pageable)) {
		*t = e->t0;
		return 1;
	}
	return 0;
}

#endif
