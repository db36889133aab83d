/* A log-linear latency histogram: percentiles of any number of durations in
 * memory that follows their spread, not their count.  The one histogram
 * behind every latency percentile the analyzer prints (the CUDA API table,
 * the RDMA connection and opcode rows, the report's event-based CUDA
 * table).  lat_hist.c explains the buckets.  Not for exact quantiles (those
 * need every value) nor for fixed display bins. */
#ifndef FLIGHTREC_LAT_HIST_H
#define FLIGHTREC_LAT_HIST_H

#include <stdint.h>

/* Precision: 2^bits buckets per power of two, values below 2^bits exact;
 * a bucket's middle is within 2^-(bits + 1) of every value in it (7 bits:
 * 0.4%, 6: 0.8%, 3: 6.25%). */
#define LAT_HIST_MIN_BITS 3u
#define LAT_HIST_MAX_BITS 16u
/* Group 0: 0 .. 2^bits - 1; group g >= 1: the values of bit length bits + g. */
#define LAT_HIST_GROUPS (65u - LAT_HIST_MIN_BITS)

struct lat_hist {
	uint64_t *group[LAT_HIST_GROUPS];       /* 2^bits counts each; NULL until used */
	uint64_t count, min_ns, max_ns, sum_ns; /* exact */
	unsigned bits;
};

/* An empty histogram of that precision (LAT_HIST_MIN_BITS ..
 * LAT_HIST_MAX_BITS).  A caller keeps its precision: a percentile printed
 * once should not move. */
void lat_hist_init(struct lat_hist *h, unsigned bits);
/* 0, or -1 when out of memory (or h was never initialised). */
int lat_hist_add(struct lat_hist *h, uint64_t ns);
/* The bucket [*low_ns, *high_ns] holding the nearest-rank quantile q
 * (0 < q <= 1): the ceil(q * count)-th smallest value.  -1 when empty. */
int lat_hist_quantile_bucket(const struct lat_hist *h, double q, uint64_t *low_ns,
			     uint64_t *high_ns);
/* That bucket's middle, clamped to [min_ns, max_ns]; 0 when empty. */
uint64_t lat_hist_quantile(const struct lat_hist *h, double q);
/* Frees the buckets; h is empty again, with the same precision. */
void lat_hist_free(struct lat_hist *h);

#endif
