/* GPU idle from host signals, per process, and what it was spent on.
 * Not the findings themselves (findings_kinds.c) nor output.
 *
 * The rule.  When a synchronizing call returns, the device has finished
 * everything queued before it: its streams are empty.  They stay empty
 * until the process queues new device work.  So, per process:
 *   opens   the return of a synchronize (class FR_FN_SYNC:
 *           cudaStreamSynchronize, cudaDeviceSynchronize,
 *           cudaEventSynchronize, cuEventSynchronize), of a synchronous
 *           copy (cudaMemcpy, cuMemcpy: not the Async ones), of an
 *           implicitly synchronizing call (cudaFree, cuMemFree,
 *           cudaFreeHost, cudaMallocHost, cudaHostAlloc, cuMemHostAlloc),
 *           of a blocking NCCL call (findings_nccl.c: a job whose calls
 *           return only once every rank entered)
 *   closes  the entry of a launch (FR_FN_LAUNCH), a graph launch
 *           (FR_FN_GRAPH_LAUNCH) or an async copy from pinned memory
 *           (queued: the host runs on while it moves); not a launch made
 *           inside an NCCL call (the collective's own kernel)
 *   neither a copy from pageable memory that starts while the device is
 *           empty: the host stages it synchronously (an async one too, on
 *           NVIDIA's driver), the compute waits for its data; its time is
 *           the pageable_copy cause and the interval goes on; nor an NCCL
 *           call: the GPU computes nothing while it moves data or waits
 *           for the other ranks, so an interval open at its entry goes on
 *           through it (an enqueued collective's span too, up to the
 *           synchronize that waited for it: findings_nccl.c)
 * An interval runs from the first opening return to the next closing
 * entry; every interval is GPU-idle time.  The last one, opened after
 * the last launch (a final checkpoint, an evaluation on the CPU), runs
 * until the process exits (FR_EV_PROC_EXIT), or to its last event when
 * the recording ended first.  A process that queued no device
 * work the trace shows (no launch, no pinned async copy: the cuda probe
 * not attached, or a job whose compute is not on the GPU, as
 * samples/nccl_train's) has for intervals only the spans of its NCCL calls
 * (nccl_spans): what its GPU did between them is not known.
 *
 * Limits: one process drives one GPU (as usual) and a synchronize is taken
 * to empty the device (true of the legacy stream, of device and event
 * synchronizes after the last work, and of one-stream loops); processes
 * are analysed separately; idle before the first synchronize is not
 * counted.  The stand-in's fake GPU
 * (samples/cudart) runs work exactly as queued, so there the intervals are
 * exact; on a real GPU a launch takes a few microseconds to start.
 *
 * How an interval divides among its causes is in findings_attribute.c,
 * the gaps inside launch-bound runs in findings_launch_bound.c, the steps
 * in findings_steps.c.
 *
 * Streams and devices.  Idle intervals are read per process: a synchronize
 * of any stream is taken to empty the process's device(s), so time another
 * stream or device was still busy counts as idle (fx_streams_of counts the
 * streams and devices so the output can say so; an NCCL call's stream is
 * not counted: a data-parallel process always has one beside its compute
 * stream, and its collectives' time is read as said in 1b).  Only
 * launch-bound runs check the stream, as said above. */
#include "findings_idle.h"
#include "trace_set.h"

#include <stdlib.h>
#include <string.h>

/* ---- sorting and intervals ---------------------------------------------------- */

static int ev_cmp(const void *a, const void *b)
{
	const struct fx_ev *x = a, *y = b;
	if (x->t0 != y->t0)
		return x->t0 < y->t0 ? -1 : 1;
	if (x->t1 != y->t1)
		return x->t1 > y->t1 ? -1 : 1; /* an outer call before the calls inside it */
	return (int)x->type - (int)y->type;
}


static int mark_cmp(const void *a, const void *b)
{
	const struct mark *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->open != y->open)
		return x->open ? 1 : -1; /* work queued at the instant of a return came first */
	return x->ev < y->ev ? -1 : x->ev > y->ev;
}

struct interval {
	uint64_t a, b;
	uint32_t opener;
};

/* ---- the process ---------------------------------------------------------------- */

/* A process that queued no device work the trace shows (no launch, no
 * pinned async copy: the cuda probe was not attached, or its compute is
 * not the GPU's, as in samples/nccl_train): what its GPU did between
 * collectives is not known, so only the spans of its NCCL calls are idle
 * intervals, each its own (a span that overlaps an earlier one of another
 * thread starts where that one ended, its cut part unexplained: two
 * threads in collectives at once are one wait of the GPU). */
static int nccl_spans(struct fx_proc *p, struct trace_set *ts, struct symbolizer *sym,
		      int have_samples, char *const *paths, size_t *fdpath, size_t n_fdpath)
{
	struct ctx c = { .p = p, .ts = ts, .sym = sym, .have_samples = have_samples,
			 .f = trace_set_file(ts, p->file), .paths = paths, .fdpath = fdpath,
			 .n_fdpath = n_fdpath };
	hmap_init(&c.sample_class);
	uint64_t done = 0;
	int rc = 0;
	for (size_t i = 0; i < p->n && !rc; i++) {
		const struct fx_ev *e = &p->ev[i];
		if (e->type != FXE_NCCL)
			continue;
		uint64_t a = e->t0 > done ? e->t0 : done;
		if (e->t1 <= a)
			continue;
		struct rest_to to = { .kind = FIND_KINDS, .stack_id = e->stack_id,
				      .leaf = (uint16_t)(FX_LEAF_NCCL | e->what) };
		rc = fx_attribute(&c, a, e->t1, e->tid, &to);
		done = e->t1; /* > a >= done */
	}
	free(c.frames);
	free(c.segs);
	hmap_free(&c.sample_class);
	return rc;
}

static int sample_cmp(const void *a, const void *b)
{
	const struct fx_sample *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

static int offcpu_cmp(const void *a, const void *b)
{
	const struct fx_offcpu *x = a, *y = b;
	if (x->t0 != y->t0)
		return x->t0 < y->t0 ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

void fx_sort_events(struct fx_proc *p)
{
	if (p->n)
		qsort(p->ev, p->n, sizeof(*p->ev), ev_cmp);
	if (p->n_offcpu)
		qsort(p->offcpu, p->n_offcpu, sizeof(*p->offcpu), offcpu_cmp);
	fx_sort_samples(p);
	fx_nccl_prepare(p);
}

void fx_sort_samples(struct fx_proc *p)
{
	if (p->n_samples)
		qsort(p->samples, p->n_samples, sizeof(*p->samples), sample_cmp);
}

/* Whether a synchronous copy is a value read back to the host (.item(),
 * .cpu() of a scalar or a small tensor): it waits for the device as a
 * synchronize does, and the host's work after it is host_sync. */
#define SMALL_SYNC_COPY_BYTES (64u << 10)

static int reads_back(const struct fx_ev *e)
{
	return e->type == FXE_COPY && !e->async && e->d2h && e->bytes <= SMALL_SYNC_COPY_BYTES;
}

/* The interval iv, ended, attributed: the rest of it (the thread's own
 * work) is host_sync after a synchronize, a blocking collective or a
 * value read back; unexplained after an implicit synchronize or another
 * copy. */
static int close_interval(struct ctx *c, const struct interval *iv)
{
	const struct fx_ev *opener = &c->p->ev[iv->opener];
	int nccl = opener->type == FXE_NCCL, copy = reads_back(opener);
	struct rest_to to = {
		.kind = opener->type == FXE_SYNC || nccl || copy ? FIND_HOST_SYNC : FIND_KINDS,
		.stack_id = opener->stack_id,
		.leaf = nccl ? (uint16_t)(FX_LEAF_NCCL | opener->what) : opener->what,
		.copy_bytes = copy ? opener->bytes : 0,
		.read_back = copy,
	};
	return iv->b > iv->a ? fx_attribute(c, iv->a, iv->b, opener->tid, &to) : 0;
}

int fx_idle_attribute(struct fx_proc *p, struct trace_set *ts, struct symbolizer *sym,
		      int have_samples, char *const *paths)
{
	if (!p->n)
		return 0;
	size_t n_fdpath = 0, *fdpath = NULL;
	for (size_t i = 0; i < p->n; i++)
		n_fdpath += p->ev[i].type == FXE_FDPATH;
	if (n_fdpath && !(fdpath = malloc(n_fdpath * sizeof(*fdpath))))
		return -1;
	n_fdpath = 0;
	for (size_t i = 0; fdpath && i < p->n; i++)
		if (p->ev[i].type == FXE_FDPATH)
			fdpath[n_fdpath++] = i;
	struct mark *marks = NULL;
	size_t n_marks = 0, n_closes = 0, n_spans = 0;
	for (size_t i = 0; i < p->n; i++) {
		uint64_t t;
		if (fx_opens_at(&p->ev[i], &t))
			n_marks++;
		else if (fx_closes_at(&p->ev[i], &t))
			n_marks++, n_closes++;
		n_spans += p->ev[i].type == FXE_NCCL;
	}
	if (!n_closes && n_spans) {
		/* no device work of its own in the trace: its collectives */
		int rc = nccl_spans(p, ts, sym, have_samples, paths, fdpath, n_fdpath);
		free(fdpath);
		return rc;
	}
	if (!n_marks) {
		free(fdpath);
		return 0;
	}
	marks = malloc(n_marks * sizeof(*marks));
	if (!marks) {
		free(fdpath);
		return -1;
	}
	n_marks = 0;
	for (size_t i = 0; i < p->n; i++) {
		uint64_t t;
		if (fx_opens_at(&p->ev[i], &t))
			marks[n_marks++] = (struct mark){ t, (uint32_t)i, 1 };
		else if (fx_closes_at(&p->ev[i], &t))
			marks[n_marks++] = (struct mark){ t, (uint32_t)i, 0 };
	}
	qsort(marks, n_marks, sizeof(*marks), mark_cmp);

	struct ctx c = { .p = p, .ts = ts, .sym = sym, .have_samples = have_samples,
			 .f = trace_set_file(ts, p->file), .paths = paths, .fdpath = fdpath,
			 .n_fdpath = n_fdpath };
	hmap_init(&c.sample_class);
	int rc = 0, idle = 0;
	struct interval iv = { 0 };
	size_t run_from = SIZE_MAX; /* the mark that ended the last interval */
	for (size_t i = 0; i < n_marks && !rc; i++) {
		if (marks[i].open) {
			if (!idle) {
				/* the run of work since the last interval, before this one */
				if (run_from != SIZE_MAX)
					rc = fx_launch_run(&c, marks, run_from, i, &p->ev[marks[i].ev]);
				idle = 1;
				iv.a = marks[i].t;
				iv.opener = marks[i].ev;
			}
		} else if (idle) {
			idle = 0;
			iv.b = marks[i].t;
			run_from = i;
			rc = close_interval(&c, &iv);
		}
	}
	if (idle && !rc) {
		/* the last interval: no launch follows (a final save, an
		 * evaluation on the CPU, the teardown); it lasts until the
		 * process ends, or its last event where the exit is not in the
		 * recording */
		iv.b = p->exit_ns;
		for (size_t i = 0; i < p->n; i++)
			if (p->ev[i].t1 > iv.b)
				iv.b = p->ev[i].t1;
		if (p->n_samples && p->samples[p->n_samples - 1].t > iv.b)
			iv.b = p->samples[p->n_samples - 1].t; /* sorted */
		rc = close_interval(&c, &iv);
	}
	free(marks);
	free(c.frames);
	free(c.segs);
	free(fdpath);
	hmap_free(&c.sample_class);
	return rc;
}
