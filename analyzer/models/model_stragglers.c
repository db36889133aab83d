/* The stragglers model (definitions in model_stragglers.h): per-rank step,
 * wait and compute times and scores, the verdict over the complete
 * collective instances, and the evidence from the straggler's compute
 * segments (CPU samples, system calls, off-CPU time) against the other
 * ranks'.  Not for matching collectives or aligning clocks (model_nccl.c,
 * align.c) nor for output (cmd_stragglers.c). */
#include "model_stragglers.h"
#include "hmap.h"
#include "symbolize.h"
#include "syscall_names.h"
#include "trace_set.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cpu_sample {
	uint32_t file_index;
	uint32_t pid;
	uint64_t ts_ns;
	uint32_t stack_id;
};

struct syscall_ev {
	uint32_t file_index;
	uint32_t pid;
	uint64_t ts_ns;
	uint64_t duration_ns;
	uint32_t nr;
};

struct model_stragglers {
	void *nccl;
	struct cpu_sample *samples;
	size_t n_samples, cap_samples;
	struct syscall_ev *syscalls;
	size_t n_syscalls, cap_syscalls;
	struct stragglers_result result;
};

/* ---- feed ----------------------------------------------------------------- */

static void *strag_create(const struct model_opts *opts)
{
	struct model_stragglers *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	if (!(m->nccl = model_nccl_ops.create(opts))) {
		free(m);
		return NULL;
	}
	m->result.candidate = -1;
	return m;
}

void model_stragglers_ignore_step_markers(void *state)
{
	model_nccl_ignore_step_markers(((struct model_stragglers *)state)->nccl);
}

static int grow(void **p, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return 0;
	size_t want = *cap ? *cap * 2 : 1024;
	void *q = realloc(*p, want * elem);
	if (!q)
		return -1;
	*p = q;
	*cap = want;
	return 0;
}

static int strag_feed(void *state, uint32_t file_index, const struct fr_rec_hdr *rec)
{
	struct model_stragglers *m = state;
	struct fr_rec_hdr h;
	memcpy(&h, rec, sizeof(h));
	if (h.type == FR_EV_CPU_SAMPLE) {
		struct fr_ev_cpu_sample ev;
		memcpy(&ev, rec, sizeof(ev));
		if (grow((void **)&m->samples, &m->cap_samples, m->n_samples, sizeof(*m->samples)))
			return -1;
		m->samples[m->n_samples++] = (struct cpu_sample){ file_index, ev.c.pid, ev.c.ts_ns,
								  ev.stack_id };
		return 0;
	}
	if (h.type == FR_EV_SYSCALL) {
		struct fr_ev_syscall ev;
		memcpy(&ev, rec, sizeof(ev));
		if (grow((void **)&m->syscalls, &m->cap_syscalls, m->n_syscalls,
			 sizeof(*m->syscalls)))
			return -1;
		m->syscalls[m->n_syscalls++] = (struct syscall_ev){ file_index, ev.c.pid, ev.c.ts_ns,
								    ev.duration_ns, ev.nr };
		return 0;
	}
	return model_nccl_ops.feed(m->nccl, file_index, rec);
}

/* ---- small statistics ------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts v); 0 when n is 0. */
static double median(double *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Median absolute deviation (sorts and overwrites v). */
static double mad(double *v, size_t n)
{
	double med = median(v, n);
	for (size_t i = 0; i < n; i++)
		v[i] = fabs(v[i] - med);
	return median(v, n);
}

/* ---- per-rank rows -------------------------------------------------------------- */

static int build_rows(struct stragglers_result *r)
{
	const struct nccl_result *nc = r->nccl;
	r->n_rows = nc->n_ranks;
	r->rows = calloc(nc->n_ranks ? nc->n_ranks : 1, sizeof(*r->rows));
	size_t total_steps = 0;
	for (size_t ri = 0; ri < nc->n_ranks; ri++)
		total_steps += nc->ranks[ri].n_steps;
	double *all_steps = malloc((total_steps ? total_steps : 1) * sizeof(double));
	if (!r->rows || !all_steps) {
		free(all_steps);
		return -1;
	}
	size_t n_all = 0;
	double fastest = -1;
	for (size_t ri = 0; ri < nc->n_ranks; ri++) {
		const struct nccl_rank *rk = &nc->ranks[ri];
		struct straggler_row *row = &r->rows[ri];
		row->rank_index = (uint32_t)ri;
		row->steps = rk->n_steps;
		row->mean_step_ms = row->median_compute_ms = row->score = -1;
		if (!rk->n_steps)
			continue;
		double *wait = calloc(rk->n_steps, sizeof(double));
		if (!wait) {
			free(all_steps);
			return -1;
		}
		for (size_t c = 0; c < rk->n_calls; c++) {
			const struct nccl_call *call = &rk->calls[c];
			if (call->step >= 0 && (size_t)call->step < rk->n_steps)
				wait[call->step] += (double)(call->exit_ns - call->entry_ns) / 1e6;
		}
		double step_sum = 0, wait_sum = 0;
		for (size_t s = 0; s < rk->n_steps; s++) {
			double step_ms = (double)(rk->step_end_ns[s] - rk->step_begin_ns[s]) / 1e6;
			step_sum += step_ms;
			wait_sum += wait[s];
			all_steps[n_all++] = step_ms;
			wait[s] = step_ms > wait[s] ? step_ms - wait[s] : 0; /* now: compute */
		}
		row->mean_step_ms = step_sum / (double)rk->n_steps;
		row->mean_wait_ms = wait_sum / (double)rk->n_steps;
		row->median_compute_ms = median(wait, rk->n_steps);
		if (fastest < 0 || row->median_compute_ms < fastest)
			fastest = row->median_compute_ms;
		free(wait);
	}
	for (size_t ri = 0; ri < nc->n_ranks; ri++) {
		struct straggler_row *row = &r->rows[ri];
		if (row->median_compute_ms < 0)
			continue;
		row->score = row->median_compute_ms > 0 ? fastest / row->median_compute_ms : 1.0;
	}
	r->median_step_ms = n_all ? median(all_steps, n_all) : -1;
	free(all_steps);
	return 0;
}

/* ---- the verdict ------------------------------------------------------------------ */

/* One complete instance as the verdict sees it. */
struct inst_view {
	size_t instance;        /* into nccl->instances */
	uint32_t latest;        /* rank index */
	int64_t lost_ns;        /* latest - second latest ready time */
	double spread_ms;       /* latest - median ready time */
	uint32_t cls;           /* (comm, function, count) class */
	int32_t cand_step;      /* the candidate's step (filled later) */
};

static int instance_complete(const struct nccl_result *nc, const struct nccl_instance *in)
{
	if (!in->consistent || in->n_members < 2)
		return 0;
	int32_t nranks = nc->comms[in->comm_index].nranks;
	return nranks < 0 || in->n_members == (uint32_t)nranks;
}

static void why(struct stragglers_result *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void why(struct stragglers_result *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->why_none, sizeof(r->why_none), fmt, ap);
	va_end(ap);
}

/* The class the verdict looks at: with several collectives per step only
 * the one after the compute carries the lateness (the others start
 * together), so, as HTA does, take the (communicator, function, count)
 * class whose instances have the largest median spread of ready times. */
static uint32_t pick_class(struct inst_view *iv, size_t n_iv, double *tmp)
{
	uint32_t n_cls = 0, best = 0;
	for (size_t i = 0; i < n_iv; i++)
		if (iv[i].cls + 1 > n_cls)
			n_cls = iv[i].cls + 1;
	double best_spread = -1;
	size_t best_n = 0;
	for (uint32_t c = 0; c < n_cls; c++) {
		size_t k = 0;
		for (size_t i = 0; i < n_iv; i++)
			if (iv[i].cls == c)
				tmp[k++] = iv[i].spread_ms;
		double sp = median(tmp, k);
		/* classes of fewer than 3 instances only when nothing else */
		if ((k >= 3) > (best_n >= 3) || ((k >= 3) == (best_n >= 3) && sp > best_spread)) {
			best = c;
			best_spread = sp;
			best_n = k;
		}
	}
	return best;
}

static int verdict(struct stragglers_result *r)
{
	const struct nccl_result *nc = r->nccl;
	struct straggler_verdict *v = &r->verdict;
	size_t n_ranks = nc->n_ranks;
	int rc = -1;
	struct hmap cls_of;
	hmap_init(&cls_of);
	struct inst_view *iv = malloc((nc->n_instances ? nc->n_instances : 1) * sizeof(*iv));
	double *late = malloc((nc->n_members ? nc->n_members : 1) * sizeof(double));
	uint32_t *late_rank = malloc((nc->n_members ? nc->n_members : 1) * sizeof(uint32_t));
	double *tmp = malloc((nc->n_members + nc->n_instances + 1) * sizeof(double));
	int64_t *ready = malloc((n_ranks ? n_ranks : 1) * sizeof(int64_t));
	uint32_t *n_seen = NULL;
	uint32_t *n_latest = NULL;
	if (!iv || !late || !late_rank || !tmp || !ready)
		goto out;
	size_t n_iv = 0;
	for (size_t i = 0; i < nc->n_instances; i++) {
		const struct nccl_instance *in = &nc->instances[i];
		if (!instance_complete(nc, in))
			continue;
		const struct nccl_member *mem = &nc->members[in->first_member];
		uint32_t latest = 0, second = UINT32_MAX;
		for (uint32_t k = 0; k < in->n_members; k++) {
			ready[k] = nccl_member_ready_ns(nc, &mem[k]);
			tmp[k] = (double)ready[k];
		}
		for (uint32_t k = 1; k < in->n_members; k++) {
			if (ready[k] > ready[latest]) {
				second = latest;
				latest = k;
			} else if (second == UINT32_MAX || ready[k] > ready[second]) {
				second = k;
			}
		}
		if (second == UINT32_MAX)
			second = latest == 0 ? 1 : 0;
		double med = median(tmp, in->n_members);
		int created;
		uint64_t key = (uint64_t)in->comm_index << 16 | in->func;
		uint64_t *slot = hmap_slot(&cls_of, key, in->count, &created);
		if (!slot)
			goto out;
		if (created)
			*slot = cls_of.count - 1;
		iv[n_iv++] = (struct inst_view){ i, mem[latest].rank_index,
						 ready[latest] - ready[second],
						 ((double)ready[latest] - med) / 1e6, (uint32_t)*slot, -1 };
	}
	uint32_t cls = pick_class(iv, n_iv, tmp);
	size_t n_cls = 0, n_late = 0;
	for (size_t i = 0; i < n_iv; i++) {
		if (iv[i].cls != cls)
			continue;
		n_cls++;
		const struct nccl_instance *in = &nc->instances[iv[i].instance];
		const struct nccl_member *mem = &nc->members[in->first_member];
		for (uint32_t k = 0; k < in->n_members; k++)
			tmp[k] = (double)nccl_member_ready_ns(nc, &mem[k]);
		double med = median(tmp, in->n_members);
		for (uint32_t k = 0; k < in->n_members; k++) {
			late[n_late] = ((double)nccl_member_ready_ns(nc, &mem[k]) - med) / 1e6;
			late_rank[n_late++] = mem[k].rank_index;
		}
		r->rows[iv[i].latest].latest++;
	}
	r->complete_collectives = n_iv;
	r->verdict_collectives = n_cls;
	for (size_t ri = 0; ri < n_ranks; ri++) {
		size_t k = 0;
		for (size_t j = 0; j < n_late; j++)
			if (late_rank[j] == ri)
				tmp[k++] = late[j];
		r->rows[ri].median_lateness_ms = median(tmp, k);
	}
	if (n_ranks < 2) {
		why(r, "fewer than two ranks made NCCL calls");
		rc = 0;
		goto out;
	}
	if (n_cls < 3) {
		why(r, "%zu complete collective%s matched across ranks (need 3)", n_cls,
		    n_cls == 1 ? "" : "s");
		rc = 0;
		goto out;
	}
	uint32_t cand = 0;
	for (uint32_t ri = 1; ri < n_ranks; ri++)
		if (r->rows[ri].latest > r->rows[cand].latest)
			cand = ri;
	r->candidate = (int32_t)cand;
	size_t k = 0;
	for (size_t j = 0; j < n_late; j++)
		if (late_rank[j] != cand)
			tmp[k++] = late[j];
	r->noise_mad_ms = mad(tmp, k);
	double threshold = 3 * r->noise_mad_ms;
	if (r->median_step_ms > 0 && 0.02 * r->median_step_ms > threshold)
		threshold = 0.02 * r->median_step_ms;
	const struct straggler_row *crow = &r->rows[cand];
	v->threshold_ms = threshold;
	v->median_lateness_ms = crow->median_lateness_ms;
	int32_t crank = nc->ranks[cand].rank;
	if (2 * crow->latest < n_cls) {
		why(r, "no rank is the latest in half of the collectives (most often: rank %d, "
		    "%llu of %zu)", crank, (unsigned long long)crow->latest, n_cls);
		rc = 0;
		goto out;
	}
	if (crow->median_lateness_ms <= threshold) {
		why(r, "rank %d is the latest in %llu of %zu collectives, but only %.3f ms after the "
		    "median rank (threshold %.3f ms: max of 2%% of the step, 3 MAD)", crank,
		    (unsigned long long)crow->latest, n_cls, crow->median_lateness_ms, threshold);
		rc = 0;
		goto out;
	}

	/* Since which step: per candidate step, is it the latest in at least
	 * half of that step's collectives (of the class)? */
	const struct nccl_rank *crk = &nc->ranks[cand];
	size_t n_steps = crk->n_steps;
	n_seen = calloc(n_steps + 1, sizeof(*n_seen));
	n_latest = calloc(n_steps + 1, sizeof(*n_latest));
	if (!n_seen || !n_latest)
		goto out;
	for (size_t i = 0; i < n_iv; i++) {
		struct inst_view *x = &iv[i];
		const struct nccl_instance *in = &nc->instances[x->instance];
		const struct nccl_member *mem = &nc->members[in->first_member];
		for (uint32_t q = 0; q < in->n_members; q++)
			if (mem[q].rank_index == cand)
				x->cand_step = crk->calls[mem[q].call_index].step;
		if (x->cls == cls && x->cand_step >= 0 && (size_t)x->cand_step < n_steps) {
			n_seen[x->cand_step]++;
			n_latest[x->cand_step] += x->latest == cand;
		}
	}
	/* the change point: the step s maximizing, over steps t >= s, the
	 * steps it was latest in minus the steps it was not */
	v->since_step = 0;
	long best = LONG_MIN, run = 0;
	for (size_t s = n_steps; s-- > 0;) {
		if (n_seen[s])
			run += 2 * n_latest[s] >= n_seen[s] ? 1 : -1;
		if (n_seen[s] && 2 * n_latest[s] >= n_seen[s] && run >= best) {
			best = run;
			v->since_step = (int32_t)s;
		}
	}
	double lost_ms = 0;
	for (size_t i = 0; i < n_iv; i++) {
		if (n_steps && iv[i].cand_step < v->since_step)
			continue;
		if (iv[i].cls == cls) {
			v->collectives++;
			v->latest += iv[i].latest == cand;
		}
		if (iv[i].latest == cand) /* every class: what the others wait */
			lost_ms += (double)iv[i].lost_ns / 1e6;
	}
	size_t steps_since = n_steps > (size_t)v->since_step ? n_steps - (size_t)v->since_step : 0;
	v->found = 1;
	v->rank_index = cand;
	v->cost_ms_per_step = lost_ms / (double)(steps_since ? steps_since
						       : (v->collectives ? v->collectives : 1));
	double share = v->collectives ? (double)v->latest / (double)v->collectives : 0;
	double margin = 1 - threshold / crow->median_lateness_ms;
	v->confidence = share * (margin < 0 ? 0 : margin);
	rc = 0;
out:
	hmap_free(&cls_of);
	free(iv);
	free(late);
	free(late_rank);
	free(tmp);
	free(ready);
	free(n_seen);
	free(n_latest);
	return rc;
}

/* ---- evidence ------------------------------------------------------------------- */

struct segment {
	uint64_t begin_ns, end_ns; /* node clock */
};

/* A rank's compute segments from step since on: leaving call i-1 (or the
 * step's beginning) to entering call i. */
static size_t rank_segments(const struct nccl_rank *rk, int32_t since, struct segment *out)
{
	size_t n = 0;
	for (size_t c = 0; c < rk->n_calls; c++) {
		const struct nccl_call *call = &rk->calls[c];
		if (call->step < since || call->step < 0)
			continue;
		uint64_t begin = c ? rk->calls[c - 1].exit_ns : rk->step_begin_ns[call->step];
		if (rk->calls[c].step != (c ? rk->calls[c - 1].step : -2) &&
		    rk->step_begin_ns[call->step] > begin)
			begin = rk->step_begin_ns[call->step]; /* a marker after the last exit */
		if (begin < call->entry_ns)
			out[n++] = (struct segment){ begin, call->entry_ns };
	}
	return n;
}

/* Index of the segment holding ts, or -1 (segments sorted, disjoint). */
static long in_segment(const struct segment *seg, size_t n, uint64_t ts)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (seg[mid].end_ns <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && seg[lo].begin_ns <= ts ? (long)lo : -1;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct cpu_sample *x = a, *y = b;
	if (x->file_index != y->file_index)
		return x->file_index < y->file_index ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
}

static int cmp_syscall(const void *a, const void *b)
{
	const struct syscall_ev *x = a, *y = b;
	if (x->file_index != y->file_index)
		return x->file_index < y->file_index ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
}

/* The recorder's sampling frequency, from its command line (--freq N or
 * --freq=N), else its default of 99 Hz. */
static double sample_period_ns(const struct trace_file *f)
{
	const char *p = f->cmdline ? strstr(f->cmdline, "--freq") : NULL;
	double hz = 99;
	if (p) {
		p += 6;
		if (*p == '=' || *p == ' ')
			p++;
		double v = strtod(p, NULL);
		if (v > 0 && v < 1e6)
			hz = v;
	}
	return 1e9 / hz;
}

/* Per frame name: in how many in-segment samples of the straggler and of
 * the others it appears (once per sample). */
struct frame_count {
	const char *name;
	uint64_t cand, others;
};

struct evidence_ctx {
	struct model_stragglers *m;
	struct trace_set *ts;
	struct symbolizer *sym;
	struct hmap frame_index;  /* name pointer -> index + 1 */
	struct frame_count *frames;
	size_t n_frames;
	const char **names;       /* scratch for one stack */
	size_t cap_names;
};

static int count_frames(struct evidence_ctx *e, const struct nccl_rank *rk, uint32_t stack_id,
			int is_cand)
{
	const struct trace_file *f = trace_set_file(e->ts, rk->file_index);
	const struct ts_stack *st = stack_id ? trace_file_stack(f, stack_id) : NULL;
	if (!st)
		return 0;
	size_t n = (size_t)st->n_kernel + st->n_user;
	if (n > e->cap_names) {
		const char **grown = realloc(e->names, n * sizeof(*grown));
		if (!grown)
			return -1;
		e->names = grown;
		e->cap_names = n;
	}
	symbolize_stack(e->sym, f, rk->file_index, st, e->names);
	for (size_t i = 0; i < n; i++) {
		const char *name = e->names[i];
		if (!name)
			return -1;
		if (name[0] == '[')
			continue;
		int dup = 0; /* recursion: count a function once per sample */
		for (size_t j = 0; j < i && !dup; j++)
			dup = e->names[j] == name;
		if (dup)
			continue;
		int created;
		uint64_t *slot = hmap_slot(&e->frame_index, (uint64_t)(uintptr_t)name, 0, &created);
		if (!slot)
			return -1;
		if (created) {
			struct frame_count *fc = realloc(e->frames, (e->n_frames + 1) * sizeof(*fc));
			if (!fc)
				return -1;
			e->frames = fc;
			fc[e->n_frames] = (struct frame_count){ name, 0, 0 };
			*slot = ++e->n_frames;
		}
		struct frame_count *fc = &e->frames[*slot - 1];
		if (is_cand)
			fc->cand++;
		else
			fc->others++;
	}
	return 0;
}

/* A rank's system call time in its segments, by number. */
struct sc_total {
	uint32_t nr;
	uint64_t calls;
	double cand_ms;           /* the straggler's */
	double others_ms_per_step_sum; /* sum over other ranks of their ms per step */
};

static struct sc_total *sc_slot(struct sc_total **t, size_t *n, uint32_t nr)
{
	for (size_t i = 0; i < *n; i++)
		if ((*t)[i].nr == nr)
			return &(*t)[i];
	struct sc_total *g = realloc(*t, (*n + 1) * sizeof(*g));
	if (!g)
		return NULL;
	*t = g;
	g[*n] = (struct sc_total){ .nr = nr };
	return &g[(*n)++];
}

static int evidence(struct model_stragglers *m, struct trace_set *ts, struct frec_error *err)
{
	struct stragglers_result *r = &m->result;
	const struct nccl_result *nc = r->nccl;
	struct straggler_verdict *v = &r->verdict;
	struct evidence_ctx e = { .m = m, .ts = ts };
	hmap_init(&e.frame_index);
	struct segment *seg = NULL;
	struct sc_total *sct = NULL;
	size_t n_sct = 0;
	int rc = -1;
	if (!(e.sym = trace_set_symbolizer(ts, err)))
		goto done;
	if (m->n_samples)
		qsort(m->samples, m->n_samples, sizeof(*m->samples), cmp_sample);
	if (m->n_syscalls)
		qsort(m->syscalls, m->n_syscalls, sizeof(*m->syscalls), cmp_syscall);
	double cand_wall = 0, cand_on = 0, others_wall = 0, others_on = 0;
	size_t others = 0;
	for (size_t ri = 0; ri < nc->n_ranks; ri++) {
		const struct nccl_rank *rk = &nc->ranks[ri];
		int is_cand = ri == v->rank_index;
		free(seg);
		if (!(seg = malloc((rk->n_calls ? rk->n_calls : 1) * sizeof(*seg))))
			goto oom;
		size_t n_seg = rank_segments(rk, v->since_step, seg);
		size_t steps = rk->n_steps > (size_t)v->since_step ? rk->n_steps - (size_t)v->since_step : 1;
		if (!n_seg)
			continue;
		double wall = 0;
		for (size_t s = 0; s < n_seg; s++)
			wall += (double)(seg[s].end_ns - seg[s].begin_ns);
		/* CPU samples of this process in its segments */
		struct cpu_sample key = { rk->file_index, rk->pid, 0, 0 };
		size_t lo = 0, hi = m->n_samples;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (cmp_sample(&m->samples[mid], &key) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		uint64_t in = 0;
		for (size_t i = lo; i < m->n_samples && m->samples[i].file_index == rk->file_index &&
				    m->samples[i].pid == rk->pid; i++) {
			if (in_segment(seg, n_seg, m->samples[i].ts_ns) < 0)
				continue;
			in++;
			if (count_frames(&e, rk, m->samples[i].stack_id, is_cand))
				goto oom;
		}
		double on = (double)in * sample_period_ns(trace_set_file(ts, rk->file_index));
		if (is_cand) {
			v->samples = in;
			cand_wall = wall;
			cand_on = on;
		} else {
			v->others_samples += in;
			others_wall += wall;
			others_on += on;
			others++;
		}
		/* system calls entered in its segments */
		struct syscall_ev skey = { rk->file_index, rk->pid, 0, 0, 0 };
		lo = 0, hi = m->n_syscalls;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (cmp_syscall(&m->syscalls[mid], &skey) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t i = lo; i < m->n_syscalls && m->syscalls[i].file_index == rk->file_index &&
				    m->syscalls[i].pid == rk->pid; i++) {
			const struct syscall_ev *sc = &m->syscalls[i];
			if (in_segment(seg, n_seg, sc->ts_ns) < 0)
				continue;
			struct sc_total *t = sc_slot(&sct, &n_sct, sc->nr);
			if (!t)
				goto oom;
			double ms = (double)sc->duration_ns / 1e6;
			if (is_cand) {
				t->calls++;
				t->cand_ms += ms;
			} else {
				t->others_ms_per_step_sum += ms / (double)steps;
			}
		}
		if (is_cand)
			for (size_t i = 0; i < n_sct; i++)
				sct[i].cand_ms /= (double)steps; /* now per step */
	}
	v->offcpu_share = cand_wall > 0 && v->samples ? fmax(0, 1 - cand_on / cand_wall) : -1;
	v->others_offcpu_share = others_wall > 0 && v->others_samples
					 ? fmax(0, 1 - others_on / others_wall) : -1;
	/* frames with the largest excess share (at least 5 points) */
	for (size_t pick = 0; pick < STRAGGLER_MAX_CAUSES && v->samples; pick++) {
		double best = 0.05;
		size_t at = SIZE_MAX;
		for (size_t i = 0; i < e.n_frames; i++) {
			double s = (double)e.frames[i].cand / (double)v->samples;
			double o = v->others_samples ? (double)e.frames[i].others /
							       (double)v->others_samples : 0;
			if (s - o > best) {
				best = s - o;
				at = i;
			}
		}
		if (at == SIZE_MAX)
			break;
		struct straggler_frame *fr = &v->frames[v->n_frames++];
		fr->name = e.frames[at].name;
		fr->share = (double)e.frames[at].cand / (double)v->samples;
		fr->others_share = v->others_samples ? (double)e.frames[at].others /
							       (double)v->others_samples : 0;
		e.frames[at].cand = 0; /* taken */
	}
	/* system calls with the largest excess time per step (at least 0.1 ms) */
	for (size_t pick = 0; pick < STRAGGLER_MAX_CAUSES; pick++) {
		double best = 0.1;
		size_t at = SIZE_MAX;
		for (size_t i = 0; i < n_sct; i++) {
			double o = others ? sct[i].others_ms_per_step_sum / (double)others : 0;
			if (sct[i].cand_ms - o > best) {
				best = sct[i].cand_ms - o;
				at = i;
			}
		}
		if (at == SIZE_MAX)
			break;
		struct straggler_syscall *s = &v->syscalls[v->n_syscalls++];
		const char *name = syscall_name(sct[at].nr);
		s->name = name ? name : "syscall";
		s->nr = sct[at].nr;
		s->calls = sct[at].calls;
		s->ms_per_step = sct[at].cand_ms;
		s->others_ms_per_step = others ? sct[at].others_ms_per_step_sum / (double)others : 0;
		sct[at].cand_ms = 0; /* taken */
	}
	rc = 0;
	goto done;
oom:
	frec_error_set(err, "flightrec-analyze", -1, ENOMEM, "out of memory gathering straggler evidence");
done:
	hmap_free(&e.frame_index);
	free(e.frames);
	free(e.names);
	free(seg);
	free(sct);
	return rc;
}

/* The evidence as one paragraph of plain text. */
static void write_evidence(struct stragglers_result *r)
{
	const struct straggler_verdict *v = &r->verdict;
	const struct nccl_rank *rk = &r->nccl->ranks[v->rank_index];
	char *p = (char *)v->evidence;
	size_t left = sizeof(v->evidence), used = 0;
#define ADD(...) do { \
	int _n = snprintf(p + used, left - used, __VA_ARGS__); \
	if (_n > 0) used = (size_t)_n < left - used ? used + (size_t)_n : left - 1; \
} while (0)
	ADD("rank %d is the last to enter %llu of %llu collectives since step %d, a median "
	    "%.2f ms after the median rank (threshold %.2f ms); every other rank waits %.2f ms "
	    "per step for it.", rk->rank, (unsigned long long)v->latest,
	    (unsigned long long)v->collectives, v->since_step, v->median_lateness_ms,
	    v->threshold_ms, v->cost_ms_per_step);
	for (size_t i = 0; i < v->n_frames; i++)
		ADD(" rank %d spends %.0f%% of its compute segments in %s (others: %.0f%%).",
		    rk->rank, 100 * v->frames[i].share, v->frames[i].name,
		    100 * v->frames[i].others_share);
	if (!v->samples)
		ADD(" No CPU samples fall in its compute segments (cpu probe off?).");
	for (size_t i = 0; i < v->n_syscalls; i++)
		ADD(" %s: %.2f ms per step in its compute segments, %llu calls (others: %.2f ms).",
		    v->syscalls[i].name, v->syscalls[i].ms_per_step,
		    (unsigned long long)v->syscalls[i].calls, v->syscalls[i].others_ms_per_step);
	if (v->offcpu_share >= 0)
		ADD(" Off CPU %.0f%% of its compute time (others: %.0f%%; from sample counts).",
		    100 * v->offcpu_share,
		    v->others_offcpu_share >= 0 ? 100 * v->others_offcpu_share : 0.0);
#undef ADD
}

static int strag_finish(void *state, struct trace_set *ts, struct frec_error *err)
{
	struct model_stragglers *m = state;
	struct stragglers_result *r = &m->result;
	if (model_nccl_ops.finish(m->nccl, ts, err))
		return -1;
	r->nccl = model_nccl_result(m->nccl);
	if (build_rows(r) || verdict(r)) {
		frec_error_set(err, "flightrec-analyze", -1, ENOMEM,
			       "out of memory in the stragglers model");
		return -1;
	}
	if (!r->verdict.found)
		return 0;
	if (evidence(m, ts, err))
		return -1;
	write_evidence(r);
	return 0;
}

static void strag_destroy(void *state)
{
	struct model_stragglers *m = state;
	if (!m)
		return;
	model_nccl_ops.destroy(m->nccl);
	free(m->samples);
	free(m->syscalls);
	free(m->result.rows);
	free(m);
}

const struct stragglers_result *model_stragglers_result(const void *state)
{
	return &((const struct model_stragglers *)state)->result;
}

const struct model_ops model_stragglers_ops = {
	.name = "stragglers",
	.create = strag_create,
	.feed = strag_feed,
	.finish = strag_finish,
	.destroy = strag_destroy,
};
