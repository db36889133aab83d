/* The align stage: puts the events of many trace files (one per node) on one
 * clock.  Every event carries its node's CLOCK_MONOTONIC; the common
 * timeline is nanoseconds since the epoch on the REFERENCE node's realtime
 * clock:
 *
 *   common_ns = event ts_ns + trace_set_time_offset_ns(ts, file)
 *
 * The offset has two parts.  First the node's realtime anchors (the file
 * header's start pair and the FR_REC_CLOCK pair written every second): the
 * median of realtime - monotonic over them.  Then, when align_refine() has
 * been given events that must have happened at the same instant on several
 * nodes (all ranks leave a blocking collective together), a per-file
 * correction that removes what the nodes' realtime clocks disagree on.  The
 * correction of a file, negated, is that node's estimated clock skew.
 *
 * Not for finding simultaneous events (model_nccl.c knows collectives), nor
 * for drift within a recording: one constant offset per file (realtime
 * slewing by NTP during a run of minutes is below what a barrier's release
 * latency lets us see). */
#ifndef FLIGHTREC_ALIGN_H
#define FLIGHTREC_ALIGN_H

#include <stddef.h>
#include <stdint.h>
#include "frec_error.h"

struct trace_set;
struct trace_file;

/* Nanoseconds to add to a CLOCK_MONOTONIC timestamp of file file_index to
 * put it on the common timeline (anchors plus refinement, if any); 0 for an
 * index out of range. */
int64_t trace_set_time_offset_ns(struct trace_set *ts, size_t file_index);

/* True once the offsets are final: after the metadata pass, and after the
 * align pass when the set has one (align_pass.c).  align_refine() is then
 * no longer called: what the models and outputs computed with the offsets
 * stays right. */
int trace_set_clocks_final(const struct trace_set *ts);
/* The align stage (align_pass.c): run by trace_set_run between the
 * metadata pass and the events pass. */
int trace_set_align_pass(struct trace_set *ts, struct frec_error *err);

/* The anchor part alone: median of (real - mono) over the file's anchors. */
int64_t align_anchor_offset_ns(const struct trace_file *f);

/* One file's part in a barrier-like group (one collective instance): its
 * members there (the ranks on that node) entered at the latest at
 * last_entry_ns and left between first_exit_ns and last_exit_ns.  Every
 * member of a group leaves at the same instant (plus its own wake-up
 * latency), and none leaves before the last one entered.  One entry per
 * (group, file), not per member: a node's ranks are reduced by the caller
 * as it reads them, and the alignment's memory follows the nodes, not the
 * ranks (at 16,384 ranks one entry per member took half a gigabyte). */
struct align_group_file {
	uint64_t group;
	uint32_t file_index;
	uint32_t members;        /* 1 or more */
	uint64_t first_exit_ns;  /* node clock */
	uint64_t last_exit_ns;
	uint64_t last_entry_ns;  /* 0: no member's entry known (no causality bound) */
};

/* Folds one member (left at exit_ns, entered at entry_ns, 0 unknown) into
 * its file's entry; members 0 starts one. */
void align_group_file_add(struct align_group_file *g, uint64_t exit_ns, uint64_t entry_ns);

/* Fewest shared groups for which a file's correction is estimated. */
#define ALIGN_MIN_GROUPS 3

/* Estimates every file's correction from gf (any order, one entry per
 * (group, file); n may be 0) and stores it in the file (struct
 * ts_align), replacing earlier ones.  The
 * reference is the file in the most groups (lowest index on a tie); a file
 * sharing fewer than ALIGN_MIN_GROUPS groups with any refined file keeps its
 * anchors only.  Per pair of files, a group's release on each file is its
 * earliest exit there (wake-up latency only delays exits); the correction
 * is the median over shared groups of the difference, with uncertainty
 * sqrt((1.4826 MAD)^2 / n + (spread / 2)^2), spread being the median
 * within-file range of a group's exits (the release latency).  Causality
 * then bounds it: no exit on one file precedes the last entry on the other,
 * so the correction lies in [lo, hi] over all groups; when that interval is
 * consistent the estimate is clamped into it and the uncertainty is at most
 * the distance to its far end.  0, or -1 when memory runs out. */
int align_refine(struct trace_set *ts, const struct align_group_file *gf, size_t n,
		 struct frec_error *err);

/* A node's clock as the alignment sees it.  skew_ns: how far its realtime
 * clock is ahead of the reference node's (the negated correction); refined 0
 * means only anchors were available (skew 0, uncertainty unknown). */
struct align_node {
	size_t file_index;
	const char *host;       /* the file header's host name */
	int is_reference;
	int refined;
	int64_t skew_ns;
	int64_t uncertainty_ns; /* -1 when unknown */
	uint64_t n_sync;
};
void align_node_get(struct trace_set *ts, size_t file_index, struct align_node *out);

#endif
