/* The steps of a process (fx_steps_of, findings_private.h): the outermost
 * unit that repeats.  Step markers when the recording has them; else (an
 * NCCL job's collective period is applied later, findings_kinds.c) the
 * synchronizing calls that open idle intervals, read as a sequence of
 * sites (function, stack):
 *
 *   a site seen at least twice whose occurrences span at least half of
 *   the sequence is a candidate boundary; between two of its occurrences
 *   lies one step.  Another such site is *inside* the candidate's step
 *   when about the same number of it (>= 1, within a quarter of the most
 *   common count) falls in at least 80% of those steps, *rare* when it
 *   occurs in fewer than half of them (a periodic evaluation or save, or a
 *   few calls whose stacks differ from their site's others), and
 *   otherwise breaks the candidate (it does not
 *   repeat with it).  The boundary is the unbroken candidate with the most
 *   occurrences that has a site inside it; when none has, the unbroken
 *   one with the most occurrences (a loop of one synchronize a step).
 *
 * So a synchronize made many times a step (a per-op .item()) is inside the
 * step whose end is marked by a call made once a step, and not a step of
 * its own; a sequence of one site is its own steps.  The limit: a
 * synchronizing call made every N steps with nothing else repeating inside
 * the step (one synchronize a step, one more every 5th) is read as the
 * boundary of N-step units; step markers (--step-marker) settle it.
 *
 * How regular the steps are: the median time between consecutive
 * boundaries (markers, or the boundary site's returns) and the share of
 * steps within 25% of it. */
#include "findings_idle.h"
#include "hmap.h"

#include <stdlib.h>
#include <string.h>

#define MAX_SITES 32      /* the most frequent sites considered */
#define INSIDE_SHARE 0.8

struct site {
	uint64_t key;         /* what << 32 | stack_id */
	size_t count;
	size_t first, last;   /* positions in the sequence */
	uint16_t what;
	int sync;             /* an explicit synchronize: the boundary among equals */
};

static int site_cmp(const void *a, const void *b)
{
	const struct site *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	if (x->sync != y->sync)
		return x->sync ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The median time between consecutive boundaries t[0..n) and the share
 * of steps within 25% of it (a mean and a deviation would let the one
 * step that saves a checkpoint speak for the other nineteen). */
static void regularity(const uint64_t *t, size_t n, double *median_ms, double *regular)
{
	*median_ms = 0;
	*regular = 0;
	if (n < 2)
		return;
	uint64_t *d = malloc((n - 1) * sizeof(*d));
	if (!d)
		return;
	for (size_t i = 1; i < n; i++)
		d[i - 1] = t[i] > t[i - 1] ? t[i] - t[i - 1] : 0;
	qsort(d, n - 1, sizeof(*d), u64_cmp);
	uint64_t med = d[(n - 1) / 2];
	size_t near = 0;
	for (size_t i = 0; i + 1 < n; i++)
		near += 4 * d[i] >= 3 * med && 4 * d[i] <= 5 * med;
	*median_ms = (double)med / 1e6;
	*regular = (double)near / (double)(n - 1);
	free(d);
}

/* Whether candidate a is unbroken (0), broken (1), and in *inside how
 * many sites lie inside its steps; -1 when memory runs out.  The counts
 * per step are kept only for the sites not rare beside a: at most 2n/k of
 * them, so at most 2n counters. */
static int judge(const uint64_t *seq, size_t n, const struct site *sites, size_t n_sites,
		 size_t a, size_t *inside)
{
	size_t k = sites[a].count, windows = k - 1;
	*inside = 0;
	if (2 * (sites[a].last - sites[a].first + 1) < n)
		return 1; /* does not span the run */
	if (!windows)
		return 0;
	size_t col[MAX_SITES], n_col = 0;
	for (size_t s = 0; s < n_sites; s++)
		if (s != a && 2 * sites[s].count >= k)
			col[n_col++] = s;
	if (!n_col)
		return 0;
	uint32_t *win = calloc(n_col * windows, sizeof(*win));
	if (!win)
		return -1;
	size_t w = 0;
	for (size_t i = sites[a].first + 1; i < sites[a].last; i++) {
		if (seq[i] == sites[a].key) {
			w++;
			continue;
		}
		for (size_t c = 0; c < n_col; c++)
			if (seq[i] == sites[col[c]].key) {
				win[c * windows + w]++;
				break;
			}
	}
	int broken = 0;
	for (size_t c = 0; c < n_col && !broken; c++) {
		/* the most common count per step (a histogram up to 255) */
		size_t hist[256] = { 0 }, best = 0;
		for (size_t j = 0; j < windows; j++) {
			uint32_t v = win[c * windows + j];
			hist[v < 255 ? v : 255]++;
		}
		/* in fewer than half of the steps: rare, however many times it
		 * occurs there (a burst, or a few stacks of a per-op call that
		 * unwound differently, must not break the step) */
		if (2 * (windows - hist[0]) < windows)
			continue;
		for (size_t v = 1; v < 256; v++)
			if (hist[v] > hist[best])
				best = v;
		/* the steps holding about that many (within a quarter: a step
		 * whose few calls unwound to another stack, a data-dependent
		 * count) */
		size_t near = 0;
		for (size_t v = 1; v < 255; v++)
			near += 4 * v >= 3 * best && 4 * v <= 5 * best ? hist[v] : 0;
		if (best == 0 || best == 255 || (double)near < INSIDE_SHARE * (double)windows)
			broken = 1; /* repeats, but not with a's steps */
		else
			(*inside)++;
	}
	free(win);
	return broken;
}

void fx_steps_of(struct fx_proc *p)
{
	if (p->step_marks) {
		p->steps = p->step_marks;
		p->steps_from = "marker";
		regularity(p->mark_ts, p->n_mark_ts, &p->step_ms, &p->step_regular);
		return;
	}
	p->steps = 1;
	p->steps_from = "none";
	p->step_ms = p->step_regular = 0;
	p->step_site = 0;
	size_t n = 0;
	for (size_t i = 0; i < p->n; i++) {
		uint64_t t;
		n += fx_opens_at(&p->ev[i], &t);
	}
	uint64_t *seq = n ? malloc(n * sizeof(*seq)) : NULL;
	uint64_t *at = n ? malloc(n * sizeof(*at)) : NULL;
	struct site *sites = NULL;
	struct hmap index;
	hmap_init(&index);
	if (!seq || !at)
		goto out;
	size_t n_sites = 0, cap_sites = 0;
	n = 0;
	for (size_t i = 0; i < p->n; i++) {
		uint64_t t;
		if (!fx_opens_at(&p->ev[i], &t))
			continue;
		uint64_t key = (uint64_t)p->ev[i].what << 32 | p->ev[i].stack_id;
		uint64_t v;
		if (!hmap_get(&index, key, 0, &v)) {
			if (n_sites == cap_sites) {
				size_t cap = cap_sites ? 2 * cap_sites : 16;
				struct site *g = realloc(sites, cap * sizeof(*g));
				if (!g)
					goto out;
				sites = g;
				cap_sites = cap;
			}
			v = n_sites;
			sites[n_sites++] = (struct site){ .key = key, .first = n, .what = p->ev[i].what,
							  .sync = p->ev[i].type == FXE_SYNC };
			if (hmap_put(&index, key, 0, v))
				goto out;
		}
		sites[v].count++;
		sites[v].last = n;
		seq[n] = key;
		at[n++] = t;
	}
	if (!n_sites)
		goto out;
	qsort(sites, n_sites, sizeof(*sites), site_cmp);
	if (n_sites > MAX_SITES)
		n_sites = MAX_SITES;
	while (n_sites && sites[n_sites - 1].count < 2)
		n_sites--;
	size_t best = SIZE_MAX, best_inside = 0;
	for (size_t a = 0; a < n_sites; a++) {
		size_t inside;
		int broken = judge(seq, n, sites, n_sites, a, &inside);
		if (broken < 0)
			goto out;
		if (broken)
			continue;
		/* sites are by count, most first: the first unbroken one with a
		 * site inside wins, else the first unbroken one */
		if (best == SIZE_MAX || (inside && !best_inside)) {
			best = a;
			best_inside = inside;
		}
		if (best_inside)
			break;
	}
	if (best == SIZE_MAX)
		goto out;
	p->steps = sites[best].count;
	p->steps_from = "sync_period";
	p->step_site = sites[best].what;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (seq[i] == sites[best].key)
			at[k++] = at[i];
	regularity(at, k, &p->step_ms, &p->step_regular);
out:
	free(seq);
	free(at);
	free(sites);
	hmap_free(&index);
}
