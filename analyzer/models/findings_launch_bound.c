/* The gaps of a launch-bound run, attributed (findings_idle.c finds the
 * runs between idle intervals).
 *
 * Launch-bound steps.  Between the launch that ends an idle interval and
 * the synchronize that opens the next, the GPU has work queued, and host
 * signals alone cannot say whether it ran all along: no kernel's GPU time
 * is recorded.  One case can be read.  When the host, not the GPU, sets
 * the pace, the synchronize that ends the run finds (almost) nothing left
 * to wait for.  So a run counts as launch-bound when
 *   - it has at least LB_MIN_LAUNCHES launches (many kernels; nested driver
 *     launches inside a runtime launch count once) and no graph launch;
 *   - every launch and pinned async copy of it went to one stream of one
 *     device, and the run ends with a synchronize of that stream (or a
 *     cudaDeviceSynchronize of that device): a synchronize of another
 *     stream, or an event synchronize, says nothing about these kernels;
 *   - that synchronize waited less than the median time between the run's
 *     launches (the queue held less than one launch's worth of work when
 *     the host reached it); with kernel records, the kernels' work left
 *     at its entry is the wait, not the call's time.
 * The synchronize proves that the run's last kernel ran within `bound` =
 * its return minus that launch's entry.  Assuming no kernel of the run ran
 * longer than that (the many small kernels of a launch-bound step; a run
 * that mixes long kernels with a short last one is overstated), the GPU is
 * replayed with every kernel taking `bound`, queued at its launch's entry
 * and started when the one before it ends: each stretch from a replayed
 * kernel's end to the next launch's entry is GPU idle, at least.  Each
 * such gap is attributed like an idle interval (pageable copies, system
 * calls, CPU samples of the thread that made the next launch), and what
 * step 3 would give host_sync goes to launch_bound (the host issuing
 * work: the launch calls and the dispatch code between them).  The run
 * before the first idle interval is not read: what the GPU held when the
 * recording began is not known.  Where the trace has the process's kernel
 * records (--gpu-kernels) the gaps are read off them instead of replayed
 * (measured_gaps). */
#include "findings_idle.h"
#include "fr_family.h"

#include <stdlib.h>

#define LB_MIN_LAUNCHES 16

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Whether the synchronize sync waited for the work of stream `stream` on
 * `device` (-1: unknown, taken to match). */
static int sync_covers(const struct fx_ev *sync, uint64_t stream, int16_t device)
{
	int same_device = sync->device < 0 || device < 0 || sync->device == device;
	if (sync->what == FR_CUDA_DEVICE_SYNC)
		return same_device;
	if (sync->what == FR_CUDA_STREAM_SYNC)
		return same_device && sync->stream == stream;
	return 0; /* an event's stream is not known here */
}

/* With the process's kernel records the gaps need no replay: every
 * stretch between two of its merged kernel spans inside the run, from the
 * first kernel on, up to the synchronize's return, is GPU idle, charged
 * to the launch that queued the kernel ending it (the latest launch
 * entered before it) or, for the stretch after the last kernel, to the
 * synchronize's own thread. */
static int measured_gaps(struct ctx *c, const uint32_t *items, size_t n, const struct fx_ev *opener)
{
	const struct fx_proc *p = c->p;
	const struct gpu_proc *g = p->gpu;
	uint64_t b = opener->t1;
	size_t next_launch = 0;
	for (size_t k = gpu_first_span_after(g, p->ev[items[0]].t0); k < g->n_busy && g->busy[k].end_ns < b; k++) {
		uint64_t gap_a = g->busy[k].end_ns;
		uint64_t gap_b = k + 1 < g->n_busy && g->busy[k + 1].start_ns < b ? g->busy[k + 1].start_ns : b;
		if (gap_b <= gap_a)
			continue;
		while (next_launch + 1 < n && p->ev[items[next_launch + 1]].t0 <= gap_b)
			next_launch++;
		const struct fx_ev *by = gap_b == b ? opener : &p->ev[items[next_launch]];
		struct rest_to rest = { .kind = FIND_LAUNCH_BOUND, .stack_id = by->stack_id,
					.leaf = by->what };
		if (fx_attribute(c, gap_a, gap_b, by->tid, &rest))
			return -1;
	}
	return 0;
}

/* The run of device work from marks[from] (the launch that ended an idle
 * interval) to marks[to] (the synchronize `opener`, which opens the next):
 * when the host set its pace (the rule at the top), the gaps the replayed
 * GPU idled in, attributed.  Not a launch-bound run: nothing. */
int fx_launch_run(struct ctx *c, const struct mark *marks, size_t from, size_t to,
		      const struct fx_ev *opener)
{
	struct fx_proc *p = c->p;
	size_t n = 0;
	for (size_t i = from; i < to; i++)
		n += !marks[i].open;
	if (opener->type != FXE_SYNC || n < LB_MIN_LAUNCHES)
		return 0;
	uint32_t *items = malloc(n * sizeof(*items));
	uint64_t *gaps = malloc(n * sizeof(*gaps));
	int rc = -1;
	if (!items || !gaps)
		goto out;
	n = 0;
	int mixed = 0;
	const struct fx_ev *outer = NULL;
	for (size_t i = from; i < to; i++) {
		if (marks[i].open)
			continue;
		const struct fx_ev *e = &p->ev[marks[i].ev];
		if (outer && e->tid == outer->tid && e->t0 < outer->t1)
			continue; /* a driver launch inside the runtime's: one launch */
		outer = e;
		if (e->type == FXE_WORK &&
		    fr_func_class_of(FR_PROBE_CUDA, e->what) == FR_FN_GRAPH_LAUNCH)
			mixed = 1; /* a graph is many kernels in one launch */
		if (n && (e->stream != p->ev[items[0]].stream || e->device != p->ev[items[0]].device))
			mixed = 1;
		items[n++] = marks[i].ev;
	}
	rc = 0;
	if (n < LB_MIN_LAUNCHES)
		goto out;
	const struct fx_ev *first = &p->ev[items[0]], *last = &p->ev[items[n - 1]];
	if (mixed || !sync_covers(opener, first->stream, first->device)) {
		p->e.lb_mixed++;
		goto out;
	}
	for (size_t i = 0; i + 1 < n; i++)
		gaps[i] = p->ev[items[i + 1]].t0 - p->ev[items[i]].t0;
	qsort(gaps, n - 1, sizeof(*gaps), u64_cmp);
	uint64_t wait = opener->t1 - opener->t0, median_gap = gaps[(n - 1) / 2];
	/* With kernel records the work still queued is read off them: the
	 * call's own time also holds any time its thread was descheduled
	 * inside it, which on a loaded host would call a host-paced run
	 * GPU-paced. */
	uint64_t left = p->gpu ? gpu_work_left(p->gpu, opener->t0, opener->t1) : wait;
	if (left >= median_gap || opener->t1 <= last->t0)
		goto out; /* work was still queued: the GPU, not the host, set the pace */
	uint64_t bound = opener->t1 - last->t0, end = 0, launch_ns = 0;
	if (p->gpu) {
		for (size_t i = 0; i < n; i++)
			launch_ns += p->ev[items[i]].t1 - p->ev[items[i]].t0;
		rc = measured_gaps(c, items, n, opener);
		goto counted;
	}
	for (size_t i = 0; i < n && !rc; i++) {
		const struct fx_ev *e = &p->ev[items[i]];
		launch_ns += e->t1 - e->t0;
		uint64_t start = e->t0 > end ? e->t0 : end;
		end = start + bound;
		if (i + 1 == n)
			break;
		const struct fx_ev *next = &p->ev[items[i + 1]];
		struct rest_to rest = { .kind = FIND_LAUNCH_BOUND, .stack_id = next->stack_id,
					.leaf = next->what };
		if (next->t0 > end)
			rc = fx_attribute(c, end, next->t0, next->tid, &rest);
	}
counted:
	p->e.lb_steps++;
	p->e.lb_launches += n;
	p->e.lb_launch_ns += launch_ns;
	p->e.lb_span_ns += last->t0 - first->t0;
	p->e.lb_wait_ns += wait;
	p->e.lb_left_ns += left;
	p->e.lb_bound_ns += bound;
out:
	free(items);
	free(gaps);
	return rc;
}
