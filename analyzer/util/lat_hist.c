/* The log-linear latency histogram (lat_hist.h).  Not for exact quantiles
 * nor for display bins.
 *
 * Buckets.  With b bits, the values 0 .. 2^b - 1 have a bucket each (group
 * 0).  Above, the values of one bit length form a group of 2^b equal
 * buckets: group g >= 1 holds [2^b << (g - 1), 2^b << g) in buckets
 * 2^(g - 1) wide, so a bucket is never wider than 2^-b of its smallest
 * value.  A group's counts are allocated when its first value arrives:
 * durations that span three decades use about ten groups of 2^b counts,
 * whatever their number (1 KiB each at 7 bits).
 *
 * Quantiles are nearest-rank, the ceil(q * count)-th smallest value, read
 * as the bucket that holds it; the caller decides what of the bucket to
 * show (lat_hist_quantile: its middle, clamped to the exact min and max). */
#include "lat_hist.h"

#include <stdlib.h>
#include <string.h>

void lat_hist_init(struct lat_hist *h, unsigned bits)
{
	memset(h, 0, sizeof(*h));
	h->bits = bits;
}

int lat_hist_add(struct lat_hist *h, uint64_t ns)
{
	if (h->bits < LAT_HIST_MIN_BITS || h->bits > LAT_HIST_MAX_BITS)
		return -1; /* never initialised: fail rather than index out of the groups */
	uint64_t sub = (uint64_t)1 << h->bits;
	unsigned g = 0;
	uint64_t slot = ns;
	if (ns >= sub) {
		unsigned shift = 63u - (unsigned)__builtin_clzll(ns) - h->bits; /* bucket width: 2^shift */
		g = shift + 1u;
		slot = (ns >> shift) - sub;
	}
	if (!h->group[g] && !(h->group[g] = calloc(sub, sizeof(uint64_t))))
		return -1;
	h->group[g][slot]++;
	if (!h->count || ns < h->min_ns)
		h->min_ns = ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
	h->count++;
	h->sum_ns += ns;
	return 0;
}

int lat_hist_quantile_bucket(const struct lat_hist *h, double q, uint64_t *low_ns,
			     uint64_t *high_ns)
{
	if (!h->count)
		return -1;
	uint64_t rank = (uint64_t)(q * (double)h->count);
	if ((double)rank < q * (double)h->count)
		rank++;
	if (rank < 1)
		rank = 1;
	if (rank > h->count)
		rank = h->count;
	uint64_t sub = (uint64_t)1 << h->bits, seen = 0;
	for (unsigned g = 0; g < LAT_HIST_GROUPS; g++) {
		if (!h->group[g])
			continue;
		for (uint64_t s = 0; s < sub; s++) {
			seen += h->group[g][s];
			if (seen < rank)
				continue;
			if (!g) {
				*low_ns = *high_ns = s;
			} else {
				*low_ns = (sub + s) << (g - 1u);
				*high_ns = *low_ns + (((uint64_t)1 << (g - 1u)) - 1u);
			}
			return 0;
		}
	}
	*low_ns = *high_ns = h->max_ns; /* counts and count disagree: cannot happen */
	return 0;
}

uint64_t lat_hist_quantile(const struct lat_hist *h, double q)
{
	uint64_t low, high;
	if (lat_hist_quantile_bucket(h, q, &low, &high))
		return 0;
	uint64_t mid = low + (high - low) / 2u;
	return mid < h->min_ns ? h->min_ns : mid > h->max_ns ? h->max_ns : mid;
}

void lat_hist_free(struct lat_hist *h)
{
	for (unsigned g = 0; g < LAT_HIST_GROUPS; g++)
		free(h->group[g]);
	lat_hist_init(h, h->bits);
}
