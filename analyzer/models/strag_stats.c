/* The stragglers model's small statistics: median and median absolute
 * deviation of a scratch array of doubles.  Not for the integer MAD of the
 * NCCL model's lag search (nccl_infer_comm.c). */
#include "strag_private.h"

#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts v); 0 when n is 0. */
double strag_median(double *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Median absolute deviation (sorts and overwrites v). */
double strag_mad(double *v, size_t n)
{
	double med = strag_median(v, n);
	for (size_t i = 0; i < n; i++)
		v[i] = fabs(v[i] - med);
	return strag_median(v, n);
}
