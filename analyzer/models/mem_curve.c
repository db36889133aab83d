/* The bounded in-use curve (see mem_curve.h). */
#include "mem_curve.h"

#include <stdlib.h>
#include <string.h>

void mem_curve_init(struct mem_curve *c, unsigned shift)
{
	memset(c, 0, sizeof(*c));
	c->shift = shift;
}

int mem_curve_add(struct mem_curve *c, uint64_t t, uint64_t v)
{
	if (!c->buckets) {
		c->buckets = calloc(MEM_CURVE_BUCKETS, sizeof(*c->buckets));
		if (!c->buckets)
			return -1;
		c->t0 = t;
	}
	uint64_t off = t - c->t0;
	while ((off >> c->shift) >= MEM_CURVE_BUCKETS) {
		/* Double the width: bucket i takes old buckets 2i and 2i+1. */
		for (size_t i = 0; i < MEM_CURVE_BUCKETS / 2; i++) {
			struct mem_curve_bucket a = c->buckets[2 * i], b = c->buckets[2 * i + 1];
			struct mem_curve_bucket *d = &c->buckets[i];
			if (!a.used) {
				*d = b;
			} else {
				*d = a;
				if (b.used) {
					if (b.vmin < d->vmin) { d->vmin = b.vmin; d->tmin = b.tmin; }
					if (b.vmax > d->vmax) { d->vmax = b.vmax; d->tmax = b.tmax; }
				}
			}
		}
		memset(c->buckets + MEM_CURVE_BUCKETS / 2, 0,
		       MEM_CURVE_BUCKETS / 2 * sizeof(*c->buckets));
		c->shift++;
	}
	struct mem_curve_bucket *b = &c->buckets[off >> c->shift];
	if (!b->used) {
		b->used = 1;
		b->vmin = b->vmax = v;
		b->tmin = b->tmax = t;
	} else if (v < b->vmin) {
		b->vmin = v;
		b->tmin = t;
	} else if (v > b->vmax) {
		b->vmax = v;
		b->tmax = t;
	}
	return 0;
}

static uint64_t rel(uint64_t start, uint64_t t)
{
	return t > start ? t - start : 0;
}

int mem_curve_points(const struct mem_curve *c, uint64_t start, struct mem_point **points,
		     size_t *n)
{
	*points = NULL;
	*n = 0;
	if (!c->buckets)
		return 0;
	struct mem_point *p = malloc(2 * MEM_CURVE_BUCKETS * sizeof(*p));
	if (!p)
		return -1;
	size_t k = 0;
	for (size_t i = 0; i < MEM_CURVE_BUCKETS; i++) {
		const struct mem_curve_bucket *b = &c->buckets[i];
		if (!b->used)
			continue;
		struct mem_point lo = { rel(start, b->tmin), b->vmin },
				 hi = { rel(start, b->tmax), b->vmax };
		/* each bucket's extremes in the order they happened */
		if (b->vmin == b->vmax) {
			p[k++] = b->tmin <= b->tmax ? lo : hi;
		} else if (b->tmin <= b->tmax) {
			p[k++] = lo;
			p[k++] = hi;
		} else {
			p[k++] = hi;
			p[k++] = lo;
		}
	}
	*points = p;
	*n = k;
	return 0;
}

void mem_curve_free(struct mem_curve *c)
{
	free(c->buckets);
	c->buckets = NULL;
}
