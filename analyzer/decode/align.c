/* Multi-file clock alignment (see align.h): the anchor offset of each file
 * and the per-file correction estimated from simultaneous events.  Not for
 * deciding which events are simultaneous: callers hand them in. */
#include "align.h"
#include "file_groups.h"
#include "trace_set.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts v); 0 when n is 0. */
static int64_t median_i64(int64_t *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_i64);
	if (n % 2)
		return v[n / 2];
	/* sorted, so the unsigned difference is exact: no overflow */
	uint64_t lo = (uint64_t)v[n / 2 - 1], hi = (uint64_t)v[n / 2];
	return (int64_t)(lo + (hi - lo) / 2);
}

int64_t align_anchor_offset_ns(const struct trace_file *f)
{
	size_t n = f->n_clock_pairs + 1;
	int64_t small[64];
	int64_t *d = n <= 64 ? small : malloc(n * sizeof(*d));
	if (!d) /* out of memory: the header's pair alone */
		return (int64_t)(f->hdr.start_real_ns - f->hdr.start_mono_ns);
	size_t k = 0;
	if (f->hdr.start_real_ns && f->hdr.start_mono_ns)
		d[k++] = (int64_t)(f->hdr.start_real_ns - f->hdr.start_mono_ns);
	for (size_t i = 0; i < f->n_clock_pairs; i++)
		if (f->clock_pairs[i].real_ns && f->clock_pairs[i].mono_ns)
			d[k++] = (int64_t)(f->clock_pairs[i].real_ns - f->clock_pairs[i].mono_ns);
	int64_t off = k ? median_i64(d, k)
			: (int64_t)(f->hdr.start_real_ns - f->hdr.start_mono_ns);
	if (d != small)
		free(d);
	return off;
}

int64_t trace_set_time_offset_ns(struct trace_set *ts, size_t file_index)
{
	const struct trace_file *f = trace_set_file(ts, file_index);
	if (!f)
		return 0;
	/* wrapping: anchors from a hostile file may be anything */
	return (int64_t)((uint64_t)align_anchor_offset_ns(f) + (uint64_t)f->align.correction_ns);
}

void align_node_get(struct trace_set *ts, size_t file_index, struct align_node *out)
{
	memset(out, 0, sizeof(*out));
	out->file_index = file_index;
	out->uncertainty_ns = -1;
	const struct trace_file *f = trace_set_file(ts, file_index);
	if (!f)
		return;
	out->host = f->hdr.host;
	out->refined = f->align.refined;
	out->n_sync = f->align.n_sync;
	if (f->align.refined) {
		out->skew_ns = -f->align.correction_ns;
		out->uncertainty_ns = f->align.uncertainty_ns;
		out->is_reference = f->align.reference;
	}
}

/* ---- refinement ----------------------------------------------------------- */

/* The events of one group on one file, reduced to their median time. */
struct group_file {
	uint64_t group;
	uint32_t file_index;
	int64_t t_ns;       /* anchor-aligned earliest exit */
	int64_t entry_ns;   /* anchor-aligned latest entry; INT64_MIN unknown */
	int64_t range_ns;   /* exits: max - min (0 for a single event) */
	uint32_t members;
};

void align_group_file_add(struct align_group_file *g, uint64_t exit_ns, uint64_t entry_ns)
{
	if (!g->members++) {
		g->first_exit_ns = g->last_exit_ns = exit_ns;
		g->last_entry_ns = entry_ns;
		return;
	}
	if (exit_ns < g->first_exit_ns)
		g->first_exit_ns = exit_ns;
	if (exit_ns > g->last_exit_ns)
		g->last_exit_ns = exit_ns;
	if (entry_ns > g->last_entry_ns)
		g->last_entry_ns = entry_ns;
}

static int cmp_group_file(const void *a, const void *b)
{
	const struct group_file *x = a, *y = b;
	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	if (x->file_index != y->file_index)
		return x->file_index < y->file_index ? -1 : 1;
	return 0;
}

/* Each file's (group, file) entries, in group order, so that what two files
 * share is a merge of their two lists: comparing every file against all of
 * gf was files^2 x groups, minutes at thousands of nodes.  gf is sorted by
 * group, then file, one entry per (group, file); grouping keeps each
 * file's entries in that order. */
static uint32_t gf_file(const void *items, size_t i)
{
	return ((const struct group_file *)items)[i].file_index;
}

/* Calls each(ga, gb, arg) for every group files a and b are both in, in
 * group order; returns how many. */
static size_t shared_merge(const struct file_groups *sh, const struct group_file *gf, size_t a,
			   size_t b,
			   void (*each)(const struct group_file *, const struct group_file *, void *),
			   void *arg)
{
	size_t x = sh->file_at[a], xe = sh->file_at[a + 1];
	size_t y = sh->file_at[b], ye = sh->file_at[b + 1];
	size_t k = 0;
	while (x < xe && y < ye) {
		const struct group_file *ga = &gf[sh->order[x]], *gb = &gf[sh->order[y]];
		if (ga->group < gb->group) {
			x++;
		} else if (gb->group < ga->group) {
			y++;
		} else {
			if (each)
				each(ga, gb, arg);
			k++, x++, y++;
		}
	}
	return k;
}

struct diffs {
	int64_t corr_a;
	int64_t *out;
	size_t k;
	int64_t lo, hi;
};

static void diff_one(const struct group_file *ga, const struct group_file *gb, void *arg)
{
	struct diffs *d = arg;
	d->out[d->k++] = ga->t_ns + d->corr_a - gb->t_ns;
	if (ga->entry_ns != INT64_MIN && ga->entry_ns + d->corr_a - gb->t_ns > d->lo)
		d->lo = ga->entry_ns + d->corr_a - gb->t_ns;
	if (gb->entry_ns != INT64_MIN && ga->t_ns + d->corr_a - gb->entry_ns < d->hi)
		d->hi = ga->t_ns + d->corr_a - gb->entry_ns;
}

/* Differences (t_a + corr_a) - t_b over the groups files a and b share, and
 * the causality bounds on the correction of b: exits on b (corrected) not
 * before entries on a, and the reverse. */
static size_t shared_diffs(const struct file_groups *sh, const struct group_file *gf, size_t a,
			   int64_t corr_a, size_t b, int64_t *out, int64_t *lo, int64_t *hi)
{
	struct diffs d = { corr_a, out, 0, INT64_MIN, INT64_MAX };
	shared_merge(sh, gf, a, b, diff_one, &d);
	*lo = d.lo;
	*hi = d.hi;
	return d.k;
}

/* The refined file sharing the most groups with f (the lowest index on a
 * tie), SIZE_MAX if none; *best_n its count.  A file in no more groups than
 * the best so far cannot beat it, and none beats one sharing all of f's
 * groups: with every rank in every collective the first refined file ends
 * the search. */
static size_t best_refined(struct trace_set *ts, const struct file_groups *sh,
			   const struct group_file *gf, const uint64_t *groups_of, size_t n_files,
			   size_t f, size_t *best_n)
{
	size_t best = SIZE_MAX;
	*best_n = 0;
	for (size_t g = 0; g < n_files && *best_n < groups_of[f]; g++) {
		if (g == f || !trace_set_file(ts, g)->align.refined || groups_of[g] <= *best_n)
			continue;
		size_t k = shared_merge(sh, gf, f, g, NULL, NULL);
		if (k > *best_n) {
			*best_n = k;
			best = g;
		}
	}
	return best;
}

/* A hostile trace's times may be anything: the sums wrap rather than
 * overflow (undefined), as the offsets do. */
static int64_t anchored(uint64_t ns, int64_t anchor)
{
	return (int64_t)(ns + (uint64_t)anchor);
}

int align_refine(struct trace_set *ts, const struct align_group_file *in, size_t n,
		 struct frec_error *err)
{
	size_t n_files = trace_set_count(ts);
	for (size_t i = 0; i < n_files; i++)
		memset(&trace_set_file(ts, i)->align, 0, sizeof(struct ts_align));
	if (!n || n_files < 2)
		return 0;
	struct group_file *gf = malloc(n * sizeof(*gf));
	int64_t *tmp = malloc(n * sizeof(*tmp));
	int64_t *ranges = malloc(n * sizeof(*ranges));
	int64_t *anchor = calloc(n_files, sizeof(*anchor));
	uint64_t *groups_of = calloc(n_files, sizeof(*groups_of));
	struct file_groups sh = { 0 };
	if (!gf || !tmp || !ranges || !anchor || !groups_of)
		goto oom;
	for (size_t i = 0; i < n_files; i++)
		anchor[i] = align_anchor_offset_ns(trace_set_file(ts, i));
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (in[i].file_index >= n_files || !in[i].members)
			continue;
		int64_t a = anchor[in[i].file_index];
		gf[m++] = (struct group_file){
			in[i].group, in[i].file_index, anchored(in[i].first_exit_ns, a),
			in[i].last_entry_ns ? anchored(in[i].last_entry_ns, a) : INT64_MIN,
			(int64_t)(in[i].last_exit_ns - in[i].first_exit_ns), in[i].members };
	}
	qsort(gf, m, sizeof(*gf), cmp_group_file);
	size_t n_gf = m, n_ranges = 0;
	for (size_t i = 0; i < n_gf; i++) {
		if (gf[i].members >= 2)
			ranges[n_ranges++] = gf[i].range_ns;
		groups_of[gf[i].file_index]++;
	}
	double spread_ns = (double)median_i64(ranges, n_ranges);
	if (file_groups_build(&sh, gf, n_gf, n_files, gf_file))
		goto oom;

	size_t ref = 0;
	for (size_t i = 1; i < n_files; i++)
		if (groups_of[i] > groups_of[ref])
			ref = i;
	struct ts_align *ra = &trace_set_file(ts, ref)->align;
	ra->refined = 1;
	ra->reference = 1;
	ra->n_sync = groups_of[ref];

	/* Grow the set of refined files, each against the refined file it
	 * shares the most groups with. */
	for (int progress = 1; progress;) {
		progress = 0;
		for (size_t f = 0; f < n_files; f++) {
			struct ts_align *fa = &trace_set_file(ts, f)->align;
			if (fa->refined)
				continue;
			size_t best_n;
			size_t best = best_refined(ts, &sh, gf, groups_of, n_files, f, &best_n);
			if (best == SIZE_MAX || best_n < ALIGN_MIN_GROUPS)
				continue;
			const struct ts_align *ba = &trace_set_file(ts, best)->align;
			int64_t lo, hi;
			size_t k = shared_diffs(&sh, gf, best, ba->correction_ns, f, tmp, &lo, &hi);
			int64_t corr = median_i64(tmp, k);
			for (size_t i = 0; i < k; i++)
				tmp[i] = llabs(tmp[i] - corr);
			double mad = 1.4826 * (double)median_i64(tmp, k);
			double unc = sqrt(mad * mad / (double)k + spread_ns * spread_ns / 4.0);
			if (lo != INT64_MIN && hi != INT64_MAX && lo <= hi) {
				if (corr < lo)
					corr = lo;
				if (corr > hi)
					corr = hi;
				double far = (double)(hi - corr > corr - lo ? hi - corr : corr - lo);
				if (far < unc)
					unc = far;
			}
			double chained = (double)ba->uncertainty_ns;
			fa->refined = 1;
			fa->correction_ns = corr;
			fa->uncertainty_ns = (int64_t)llround(sqrt(unc * unc + chained * chained));
			fa->n_sync = k;
			progress = 1;
		}
	}
	free(gf), free(tmp), free(ranges), free(anchor), free(groups_of);
	file_groups_free(&sh);
	return 0;
oom:
	free(gf), free(tmp), free(ranges), free(anchor), free(groups_of);
	file_groups_free(&sh);
	frec_error_set(err, "flightrec-analyze", -1, ENOMEM, "out of memory aligning clocks");
	return -1;
}
