/* The stragglers model's median and MAD (strag_stats.c, a quickselect)
 * against a sort's, exactly: odd and even sizes, ties, sorted, reversed,
 * organ-pipe and sawtooth orders (the shapes that defeat naive pivots),
 * all-equal values, and 200 seeded random arrays up to 5,000 values; a
 * 200,000-value organ pipe ends with the right answer too (the fallback to
 * a sort). */
#include "check.h"
#include "strag_private.h"

#include <math.h>

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double sorted_median(const double *v, size_t n)
{
	double *s = malloc(n * sizeof(*s));
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp);
	double m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return m;
}

static double sorted_mad(const double *v, size_t n)
{
	double med = sorted_median(v, n), *d = malloc(n * sizeof(*d));
	for (size_t i = 0; i < n; i++)
		d[i] = fabs(v[i] - med);
	double m = sorted_median(d, n);
	free(d);
	return m;
}

static int same(const double *v, size_t n)
{
	double *a = malloc(n * sizeof(*a)), *b = malloc(n * sizeof(*b));
	memcpy(a, v, n * sizeof(*a));
	memcpy(b, v, n * sizeof(*b));
	int ok = strag_median(a, n) == sorted_median(v, n) && strag_mad(b, n) == sorted_mad(v, n);
	if (!ok)
		fprintf(stderr, "n=%zu: median %g vs %g\n", n, strag_median(a, n), sorted_median(v, n));
	free(a);
	free(b);
	return ok;
}

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

int main(void)
{
	double one[] = { 4.5 };
	CHECK(strag_median(one, 1) == 4.5);
	CHECK(strag_median(one, 0) == 0);
	double two[] = { 3, 1 };
	CHECK(strag_median(two, 2) == 2);
	size_t sizes[] = { 2, 3, 4, 5, 7, 8, 16, 17, 100, 101, 1000, 1001 };
	double *v = malloc(200000 * sizeof(*v));
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s];
		for (size_t i = 0; i < n; i++)
			v[i] = (double)i; /* sorted */
		CHECK(same(v, n));
		for (size_t i = 0; i < n; i++)
			v[i] = (double)(n - i); /* reversed */
		CHECK(same(v, n));
		for (size_t i = 0; i < n; i++)
			v[i] = (double)(i < n / 2 ? i : n - i); /* organ pipe */
		CHECK(same(v, n));
		for (size_t i = 0; i < n; i++)
			v[i] = (double)(i % 7); /* sawtooth, many ties */
		CHECK(same(v, n));
		for (size_t i = 0; i < n; i++)
			v[i] = 2.5; /* all equal */
		CHECK(same(v, n));
	}
	for (int r = 0; r < 200; r++) {
		size_t n = 1 + next() % 5000;
		for (size_t i = 0; i < n; i++)
			v[i] = (double)(next() % (r % 2 ? 50 : 1000000)) / 8;
		CHECK(same(v, n));
	}
	for (size_t i = 0; i < 200000; i++)
		v[i] = (double)(i < 100000 ? i : 200000 - i);
	CHECK(same(v, 200000));
	free(v);
	return check_finish();
}
