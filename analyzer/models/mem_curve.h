/* Memory in use over time, bounded: MEM_CURVE_BUCKETS time buckets of
 * equal width (a power of two nanoseconds), each holding the minimum and
 * the maximum value reached in it and their times; when the recording
 * outgrows the buckets the width doubles and neighbours merge.  So a curve
 * has at most 2 * MEM_CURVE_BUCKETS points and every local extreme wider
 * than a bucket survives.  Not for the exact peak (the ledger keeps it). */
#ifndef FLIGHTREC_MEM_CURVE_H
#define FLIGHTREC_MEM_CURVE_H

#include <stddef.h>
#include <stdint.h>

#define MEM_CURVE_BUCKETS 1024

/* One point of a curve, as the memory model's results give it. */
struct mem_point {
	uint64_t t_ns;  /* from the start of the recording (file's start_mono_ns) */
	uint64_t bytes; /* in use after the change at t_ns */
};

struct mem_curve_bucket {
	uint64_t tmin, vmin, tmax, vmax;
	int used;
};

struct mem_curve {
	uint64_t t0;
	unsigned shift;                    /* bucket width = 1 << shift ns */
	struct mem_curve_bucket *buckets;  /* MEM_CURVE_BUCKETS, on the first value */
};

void mem_curve_init(struct mem_curve *c, unsigned shift);
/* value from time t on; t never earlier than the previous one.  -1 when
 * the buckets cannot be allocated (the curve stays empty). */
int mem_curve_add(struct mem_curve *c, uint64_t t, uint64_t value);
/* The points in time order, times minus start (0 when earlier): *points is
 * the caller's to free (NULL, *n 0 for an empty curve).  -1 out of memory. */
int mem_curve_points(const struct mem_curve *c, uint64_t start, struct mem_point **points,
		     size_t *n);
void mem_curve_free(struct mem_curve *c);

#endif
