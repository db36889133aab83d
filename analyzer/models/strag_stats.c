/* The stragglers model's small statistics: median and median absolute
 * deviation of a scratch array of doubles.  Not for the integer MAD of the
 * NCCL model's lag search (nccl_infer_comm.c). */
#include "strag_private.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Puts the k-th smallest of v[0..n) at v[k], the smaller ones before it
 * and the larger after (quickselect, median-of-three pivots).  Linear on
 * average where a sort is n log n: the verdict takes medians over every
 * rank of every collective (16,384 ranks x 200 steps is 3.3 M values).  A
 * trace chosen to defeat the pivots falls back to a sort once the rounds
 * pass twice the depth a fair split needs, so hostile input costs no more
 * than the sort did. */
static void select_kth(double *v, size_t n, size_t k)
{
	ptrdiff_t lo = 0, hi = (ptrdiff_t)n - 1, want = (ptrdiff_t)k;
	unsigned rounds = 16;
	for (size_t m = n; m > 1; m >>= 1)
		rounds += 2;
	while (hi > lo) {
		if (!rounds--) {
			qsort(v + lo, (size_t)(hi - lo + 1), sizeof(*v), cmp_double);
			return;
		}
		double a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi];
		double pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
		ptrdiff_t i = lo, j = hi;
		while (i <= j) {
			while (v[i] < pivot)
				i++;
			while (v[j] > pivot)
				j--;
			if (i <= j) {
				double t = v[i];
				v[i++] = v[j];
				v[j--] = t;
			}
		}
		/* v[lo..j] <= pivot <= v[i..hi], and what lies between equals it */
		if (want <= j)
			hi = j;
		else if (want >= i)
			lo = i;
		else
			return;
	}
}

/* Median of v[0..n) (reorders v); 0 when n is 0. */
double strag_median(double *v, size_t n)
{
	if (!n)
		return 0;
	select_kth(v, n, n / 2);
	if (n % 2)
		return v[n / 2];
	/* the other middle one: the largest of those before it */
	double lower = v[0];
	for (size_t i = 1; i < n / 2; i++)
		if (v[i] > lower)
			lower = v[i];
	return (lower + v[n / 2]) / 2;
}

/* Median absolute deviation (reorders and overwrites v). */
double strag_mad(double *v, size_t n)
{
	double med = strag_median(v, n);
	for (size_t i = 0; i < n; i++)
		v[i] = fabs(v[i] - med);
	return strag_median(v, n);
}
