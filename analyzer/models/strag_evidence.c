/* The stragglers model's evidence, once a straggler is found: its compute
 * segments (leaving one NCCL call to entering the next) from the verdict's
 * step on, against every other rank's; the functions its CPU samples there
 * hold much more often, the system calls it spends much more time in,
 * off-CPU time estimated from sample counts; then all of it as one
 * paragraph of plain text.  The samples and system calls are counted in
 * the model's second look at the events (model.h revisit_*), as they come:
 * none is kept, and only the segments of the node being read are.  Not
 * for the verdict (strag_verdict.c). */
#include "strag_private.h"
#include "grow.h"
#include "hmap.h"
#include "symbolize.h"
#include "syscall_names.h"
#include "trace_set.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* A rank's system call time in its segments, by number. */
struct sc_total {
	uint32_t nr;
	uint64_t calls;
	double cand_ms;           /* the straggler's */
	double others_ms_per_step_sum; /* sum over other ranks of their ms per step */
};

/* A rank's part of the second look. */
struct rank_look {
	struct segment *seg;      /* while its file is read; NULL otherwise */
	size_t n_seg;
	double wall_ns;           /* its segments' length */
	double steps;             /* since the verdict's step (at least 1) */
	uint64_t in;              /* its samples in its segments */
};

struct strag_look {
	struct trace_set *ts;
	struct symbolizer *sym;
	struct hmap rank_of;      /* (file, pid) -> rank index + 1 */
	struct rank_look *ranks;
	uint32_t file;            /* the file whose ranks have segments; UINT32_MAX none */
	uint32_t *with_seg;       /* those ranks */
	size_t n_with_seg, cap_with_seg;
	struct hmap frame_index;  /* name pointer -> index + 1 */
	struct frame_count *frames;
	size_t n_frames;
	const char **names;       /* scratch for one stack */
	size_t cap_names;
	struct sc_total *sct;
	size_t n_sct;
};

static int count_frames(struct strag_look *e, const struct nccl_rank *rk, uint32_t stack_id,
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

void strag_look_free(struct model_stragglers *m)
{
	struct strag_look *e = m->look;
	if (!e)
		return;
	const struct nccl_result *nc = m->result.nccl;
	for (size_t i = 0; e->ranks && nc && i < nc->n_ranks; i++)
		free(e->ranks[i].seg);
	free(e->ranks);
	free(e->with_seg);
	hmap_free(&e->rank_of);
	hmap_free(&e->frame_index);
	free(e->frames);
	free(e->names);
	free(e->sct);
	free(e);
	m->look = NULL;
}

int strag_look_begin(struct model_stragglers *m, struct trace_set *ts, struct frec_error *err)
{
	const struct stragglers_result *r = &m->result;
	const struct nccl_result *nc = r->nccl;
	const struct straggler_verdict *v = &r->verdict;
	struct strag_look *e = calloc(1, sizeof(*e));
	if (!e)
		goto oom;
	m->look = e;
	e->ts = ts;
	e->file = UINT32_MAX;
	hmap_init(&e->rank_of);
	hmap_init(&e->frame_index);
	if (!(e->sym = trace_set_symbolizer(ts, err)))
		return -1;
	if (!(e->ranks = calloc(nc->n_ranks ? nc->n_ranks : 1, sizeof(*e->ranks))))
		goto oom;
	struct segment *seg = NULL;
	for (size_t ri = 0; ri < nc->n_ranks; ri++) {
		const struct nccl_rank *rk = &nc->ranks[ri];
		struct rank_look *rl = &e->ranks[ri];
		rl->steps = rk->n_steps > (size_t)v->since_step
				    ? (double)(rk->n_steps - (size_t)v->since_step) : 1;
		struct segment *grown = realloc(seg, (rk->n_calls ? rk->n_calls : 1) * sizeof(*seg));
		if (!grown)
			goto oom_seg;
		seg = grown;
		size_t n_seg = rank_segments(rk, v->since_step, seg);
		for (size_t s = 0; s < n_seg; s++)
			rl->wall_ns += (double)(seg[s].end_ns - seg[s].begin_ns);
		if (n_seg && hmap_put(&e->rank_of, rk->file_index, rk->pid, ri + 1))
			goto oom_seg;
	}
	free(seg);
	return 0;
oom_seg:
	free(seg);
oom:
	frec_error_set(err, "flightrec-analyze", -1, ENOMEM, "out of memory gathering straggler evidence");
	return -1;
}

/* The segments of the ranks of file, made as its first event of theirs
 * comes and dropped when the next file starts: the files are read one
 * after the other, so only one node's segments are held. */
static struct rank_look *rank_in_file(struct model_stragglers *m, uint32_t file, uint32_t pid,
				      size_t *rank_index)
{
	struct strag_look *e = m->look;
	const struct nccl_result *nc = m->result.nccl;
	uint64_t at;
	if (!hmap_get(&e->rank_of, file, pid, &at) || !at || at > nc->n_ranks)
		return NULL;
	if (file != e->file) {
		for (size_t i = 0; i < e->n_with_seg; i++) {
			free(e->ranks[e->with_seg[i]].seg);
			e->ranks[e->with_seg[i]].seg = NULL;
		}
		e->n_with_seg = 0;
		e->file = file;
	}
	*rank_index = at - 1;
	return &e->ranks[at - 1];
}

static int rank_segs(struct model_stragglers *m, size_t ri, struct rank_look *rl)
{
	struct strag_look *e = m->look;
	if (rl->seg)
		return 0;
	const struct nccl_rank *rk = &m->result.nccl->ranks[ri];
	if (grow_array((void **)&e->with_seg, &e->cap_with_seg, e->n_with_seg + 1,
		       sizeof(*e->with_seg), 16) ||
	    !(rl->seg = malloc((rk->n_calls ? rk->n_calls : 1) * sizeof(*rl->seg))))
		return -1;
	e->with_seg[e->n_with_seg++] = (uint32_t)ri;
	rl->n_seg = rank_segments(rk, m->result.verdict.since_step, rl->seg);
	return 0;
}

int strag_look_feed(struct model_stragglers *m, uint32_t file_index, const struct fr_rec_hdr *rec)
{
	struct strag_look *e = m->look;
	const struct nccl_result *nc = m->result.nccl;
	struct fr_rec_hdr h;
	memcpy(&h, rec, sizeof(h));
	struct fr_ev_common c;
	memcpy(&c, rec, sizeof(c));
	size_t ri;
	struct rank_look *rl = rank_in_file(m, file_index, c.pid, &ri);
	if (!rl)
		return 0;
	if (rank_segs(m, ri, rl))
		return -1;
	int is_cand = ri == m->result.verdict.rank_index;
	if (h.type == FR_EV_CPU_SAMPLE) {
		struct fr_ev_cpu_sample ev;
		memcpy(&ev, rec, sizeof(ev));
		if (in_segment(rl->seg, rl->n_seg, ev.c.ts_ns) < 0)
			return 0;
		rl->in++;
		return count_frames(e, &nc->ranks[ri], ev.stack_id, is_cand);
	}
	if (h.type == FR_EV_SYSCALL) {
		struct fr_ev_syscall ev;
		memcpy(&ev, rec, sizeof(ev));
		if (in_segment(rl->seg, rl->n_seg, ev.c.ts_ns) < 0)
			return 0;
		struct sc_total *t = sc_slot(&e->sct, &e->n_sct, ev.nr);
		if (!t)
			return -1;
		double ms = (double)ev.duration_ns / 1e6;
		if (is_cand) {
			t->calls++;
			t->cand_ms += ms;
		} else {
			t->others_ms_per_step_sum += ms / rl->steps;
		}
	}
	return 0;
}

int strag_look_end(struct model_stragglers *m)
{
	struct strag_look *e = m->look;
	struct stragglers_result *r = &m->result;
	const struct nccl_result *nc = r->nccl;
	struct straggler_verdict *v = &r->verdict;
	double cand_wall = 0, cand_on = 0, others_wall = 0, others_on = 0;
	size_t others = 0;
	for (size_t ri = 0; ri < nc->n_ranks; ri++) {
		const struct rank_look *rl = &e->ranks[ri];
		const struct nccl_rank *rk = &nc->ranks[ri];
		uint64_t at;
		if (!hmap_get(&e->rank_of, rk->file_index, rk->pid, &at))
			continue; /* no compute segment since the verdict's step */
		double on = (double)rl->in * sample_period_ns(trace_set_file(e->ts, rk->file_index));
		if (ri == v->rank_index) {
			v->samples = rl->in;
			cand_wall = rl->wall_ns;
			cand_on = on;
			for (size_t i = 0; i < e->n_sct; i++)
				e->sct[i].cand_ms /= rl->steps; /* now per step */
		} else {
			v->others_samples += rl->in;
			others_wall += rl->wall_ns;
			others_on += on;
			others++;
		}
	}
	v->offcpu_share = cand_wall > 0 && v->samples ? fmax(0, 1 - cand_on / cand_wall) : -1;
	v->others_offcpu_share = others_wall > 0 && v->others_samples
					 ? fmax(0, 1 - others_on / others_wall) : -1;
	/* frames with the largest excess share (at least 5 points) */
	for (size_t pick = 0; pick < STRAGGLER_MAX_CAUSES && v->samples; pick++) {
		double best = 0.05;
		size_t at = SIZE_MAX;
		for (size_t i = 0; i < e->n_frames; i++) {
			double s = (double)e->frames[i].cand / (double)v->samples;
			double o = v->others_samples ? (double)e->frames[i].others /
							       (double)v->others_samples : 0;
			if (s - o > best) {
				best = s - o;
				at = i;
			}
		}
		if (at == SIZE_MAX)
			break;
		struct straggler_frame *fr = &v->frames[v->n_frames++];
		fr->name = e->frames[at].name;
		fr->share = (double)e->frames[at].cand / (double)v->samples;
		fr->others_share = v->others_samples ? (double)e->frames[at].others /
							       (double)v->others_samples : 0;
		e->frames[at].cand = 0; /* taken */
	}
	/* system calls with the largest excess time per step (at least 0.1 ms) */
	for (size_t pick = 0; pick < STRAGGLER_MAX_CAUSES; pick++) {
		double best = 0.1;
		size_t at = SIZE_MAX;
		for (size_t i = 0; i < e->n_sct; i++) {
			double o = others ? e->sct[i].others_ms_per_step_sum / (double)others : 0;
			if (e->sct[i].cand_ms - o > best) {
				best = e->sct[i].cand_ms - o;
				at = i;
			}
		}
		if (at == SIZE_MAX)
			break;
		struct straggler_syscall *s = &v->syscalls[v->n_syscalls++];
		const char *name = syscall_name(e->sct[at].nr);
		s->name = name ? name : "syscall";
		s->nr = e->sct[at].nr;
		s->calls = e->sct[at].calls;
		s->ms_per_step = e->sct[at].cand_ms;
		s->others_ms_per_step = others ? e->sct[at].others_ms_per_step_sum / (double)others : 0;
		e->sct[at].cand_ms = 0; /* taken */
	}
	strag_look_free(m);
	return 0;
}

/* The evidence as one paragraph of plain text. */
void strag_write_evidence(struct stragglers_result *r)
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
