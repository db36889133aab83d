/* RDMA port counters: every second, the increase of each counter under
 * DIR/<device>/ports/<port>/hw_counters (DIR is /sys/class/infiniband on a
 * real node) goes into the trace as one FR_REC_RDMA_COUNTERS record:
 * retransmissions, sequence errors, timeouts, CNPs, as the NIC names them. */
#ifndef FLIGHTREC_RDMA_COUNTERS_H
#define FLIGHTREC_RDMA_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include "frec_writer.h"

#define RDMA_MAX_COUNTERS 512

struct rdma_counters {
	const char *dir;
	size_t n;
	char names[RDMA_MAX_COUNTERS][40];
	uint64_t last[RDMA_MAX_COUNTERS];
	uint64_t last_ns;
	int primed;
};

/* 0 when dir holds at least one counter (then sampling is worthwhile). */
int rdma_counters_open(struct rdma_counters *rc, const char *dir);
void rdma_counters_sample(struct rdma_counters *rc, struct frec_builder *b);

#endif
