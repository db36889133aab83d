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
 *   nccl_align.c        the clocks aligned on instance exits; each rank's
 *                       offset to the common timeline
 *   nccl_steps.c        steps from markers or from the collective period
 *   nccl_hang.c         a collective some ranks entered and never left */
#ifndef FLIGHTREC_NCCL_PRIVATE_H
#define FLIGHTREC_NCCL_PRIVATE_H

#include <stddef.h>
#include <stdint.h>
#include "hmap.h"
#include "model_nccl.h"
#include "proc_lists.h"

struct trace_set;

/* One FR_EV_STEP marker. */
struct step_raw {
	uint32_t file_index;
	uint32_t pid;
	uint64_t ts_ns;
};

/* A CUDA event a rank records and waits on, as its events left it
 * (nccl_hang.c): what a rank that enqueued a collective waits with. */
struct cuda_event_state {
	uint32_t file_index;
	uint32_t pid;
	uint64_t event;           /* cudaEvent_t / CUevent */
	uint64_t stream;          /* of its latest record */
	uint64_t recorded_ns;     /* latest record; 0 none seen */
	uint64_t not_ready_ns;    /* first not-ready query since then; 0 none */
	uint64_t last_not_ready_ns; /* the latest not-ready query */
	int complete;             /* a query or synchronize saw it complete since */
};

struct model_nccl {
	int ignore_markers;
	int align_only;           /* the align pass's instance: stops after the clocks */
	int adopted;              /* ranks, calls and instances came from that one */
	struct proc_lists raw;    /* struct fr_ev_nccl, per (file, pid); each process's
				   * freed once its rank is built */
	struct step_raw *marks;
	size_t n_marks, cap_marks;
	struct cuda_event_state *events;
	size_t n_events, cap_events;
	struct hmap event_of;     /* (file << 32 | pid, event) -> index + 1 */
	struct hmap sync_seen;    /* (file << 32 | tid) -> latest entry of a synchronize
				   * that returned (its event is in the trace) */
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
 * instances, then sets every rank's offset_ns to the common timeline and
 * each instance's first_entry_common_ns. */
int nccl_align_clocks(struct nccl_result *r, struct trace_set *ts, struct frec_error *err);

/* nccl_instances.c: instances sorted by time (call.instance renumbered),
 * members laid out grouped by instance in rank order. */
int nccl_order_instances(struct nccl_result *r, size_t n_members);

/* nccl_steps.c: the steps of every rank and each call's step (sorts the
 * markers). */
int nccl_build_steps(struct model_nccl *m);

/* nccl_hang.c: one CUDA event of the feed (records, queries and
 * synchronizes of CUDA events; others ignored).  0, or -1 out of memory. */
int nccl_note_cuda(struct model_nccl *m, uint32_t file_index, const struct fr_ev_cuda *ev);
/* nccl_hang.c: result.hang, after every other stage. */
int nccl_find_hang(struct model_nccl *m, struct trace_set *ts);
void nccl_hang_free(struct nccl_hang *h);

#endif
