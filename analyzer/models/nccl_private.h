/* What the parts of the NCCL model share: the events it keeps while the
 * decoder streams, the model's state, and the stages finish() runs in
 * order.  Private to model_nccl.c and its nccl_*.c parts; everything else
 * reads model_nccl.h.
 *
 *   model_nccl.c        the model interface: keeps the events, runs the
 *                       stages at finish, function names
 *   nccl_ranks.c        ranks, their calls, communicators from the init
 *                       and split calls, sequence numbers per communicator
 *   nccl_infer_comm.c   communicators whose init was not recorded
 *   nccl_instances.c    calls matched into instances across ranks and
 *                       nodes; instances in time order with their members
 *   nccl_align.c        the clocks aligned on instance exits; every call
 *                       on the common timeline
 *   nccl_steps.c        steps from markers or from the collective period */
#ifndef FLIGHTREC_NCCL_PRIVATE_H
#define FLIGHTREC_NCCL_PRIVATE_H

#include <stddef.h>
#include <stdint.h>
#include "model_nccl.h"

struct trace_set;

/* One FR_EV_NCCL as decoded, with the file it came from. */
struct nccl_raw {
	struct fr_ev_nccl ev;
	uint32_t file_index;
};

/* One FR_EV_STEP marker. */
struct step_raw {
	uint32_t file_index;
	uint32_t pid;
	uint64_t ts_ns;
};

struct model_nccl {
	int ignore_markers;
	struct nccl_raw *raw;
	size_t n_raw, cap_raw;
	struct step_raw *marks;
	size_t n_marks, cap_marks;
	struct nccl_result result;
};

/* The stages, in the order finish() runs them.  Each returns 0 or -1;
 * only nccl_align_clocks fills err (the others fail only for memory). */

/* nccl_ranks.c: one rank per (file, pid) of the kept events (sorted here),
 * its calls, the communicators; ranks sorted by rank. */
int nccl_build_ranks(struct model_nccl *m, struct trace_set *ts);

/* nccl_infer_comm.c: see nccl_result.inferred_ranks. */
int nccl_infer_unknown_comm(struct nccl_result *r);

/* nccl_instances.c: every collective on a known communicator into its
 * (communicator, seq) instance (call.instance); *n_members: the calls
 * matched. */
int nccl_match_instances(struct nccl_result *r, size_t *n_members);

/* nccl_align.c: aligns the files' clocks on the exits of the matched
 * instances, then puts every call on the common timeline and sets each
 * instance's first_entry_common_ns. */
int nccl_align_clocks(struct nccl_result *r, size_t n_members, struct trace_set *ts,
		      struct frec_error *err);

/* nccl_instances.c: instances sorted by time (call.instance renumbered),
 * members laid out grouped by instance in rank order. */
int nccl_order_instances(struct nccl_result *r, size_t n_members);

/* nccl_steps.c: the steps of every rank and each call's step (sorts the
 * markers). */
int nccl_build_steps(struct model_nccl *m);

#endif
