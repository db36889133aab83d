/* Attaching the verbs data path (post_send, post_recv, poll_cq) of a
 * process at the provider functions its context's ops table points to.
 * The addresses come from the BPF side (FR_RDMA_OPS events); each is mapped
 * to its file and offset through the process's mappings and probed once
 * per file+offset, for every process using that provider. */
#ifndef FLIGHTREC_RDMA_DATAPATH_H
#define FLIGHTREC_RDMA_DATAPATH_H

#include <stdbool.h>
#include <stdint.h>

#include "symbols/dso_table.h"
#include "frec_writer.h"
#include "attach/uprobe_family.h"

/* addrs: post_send, post_recv, poll_cq as read from the ops table.  Safe
 * from any thread.  Returns false when an address has no known mapping yet
 * (its mmap record not processed): the caller retries later, and on its
 * last try (last_try) the failure is reported. */
bool rdma_datapath_attach(struct uprobe_family *dp, struct dso_table *dsos,
			  struct frec_builder *b, uint32_t pid, const uint64_t addrs[3],
			  bool quiet, bool last_try);

/* Same, with the process's ancestors (nearest first) whose mappings a
 * freshly forked child still shares, for when the child's own copies of
 * them are not recorded yet. */
bool rdma_datapath_attach_lineage(struct uprobe_family *dp, struct dso_table *dsos,
				  struct frec_builder *b, const uint32_t *lineage, int n,
				  const uint64_t addrs[3], bool quiet, bool last_try);

enum rdma_dp_status {
	RDMA_DP_ATTACHED, /* every function with an address is probed (now or before) */
	RDMA_DP_UNMAPPED, /* an address has no known mapping yet: try again (not last_try) */
	RDMA_DP_FAILED,   /* something could not be attached (reported) */
};

/* rdma_datapath_attach_lineage, saying which of the three happened.
 * opened_ns: when the program got the context (the ops event), to say in
 * the attach record how long after it the data path was attached (gap_ns);
 * held: the process was stopped meanwhile (attach_hold.h). */
enum rdma_dp_status rdma_datapath_attach_ops(struct uprobe_family *dp, struct dso_table *dsos,
					     struct frec_builder *b, const uint32_t *lineage,
					     int n_lineage, const uint64_t addrs[3],
					     uint64_t opened_ns, bool held, bool quiet,
					     bool last_try);

#endif
