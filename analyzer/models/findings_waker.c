/* Who a waiting training thread waited for (fx_find_waker,
 * findings_private.h): a DataLoader's worker process feeding it through a
 * pipe, a pin-memory thread signalling a condition variable.
 *
 * Where the sched family was recorded, the scheduler says it: the wait's
 * system call has an off-CPU event naming the task whose wake-up ended its
 * last block.  Otherwise it is read from system calls alone: a wait for
 * input ends when another thread hands the input over, so the thread whose
 * handing-over call (write, writev, sendto, sendmsg into the pipe or
 * socket, futex to wake a waiter) entered latest inside the wait, before
 * it ended, is taken for the one that ended it.  Either way, the thread
 * that ended at least half of the waits is the waker; none otherwise.
 * A wake-up from an interrupt (a timer) names no thread. */
#include "findings_private.h"
#include "hmap.h"

static int hands_over(uint16_t nr)
{
	/* write writev sendto sendmsg futex */
	return nr == 1 || nr == 20 || nr == 44 || nr == 46 || nr == 202;
}

/* The latest handing-over call of a thread other than w's that entered
 * inside w, in q's events (sorted by entry); 0 when none. */
static const struct fx_ev *latest_in(const struct fx_proc *q, const struct fx_wait *w)
{
	size_t lo = 0, hi = q->n; /* first event entering after w ends */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (q->ev[mid].t0 <= w->t1)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo-- > 0) {
		const struct fx_ev *e = &q->ev[lo];
		if (e->t0 < w->t0)
			break;
		if (e->type == FXE_SYSCALL && e->tid != w->tid && hands_over(e->what))
			return e;
	}
	return NULL;
}

/* The off-CPU event of wait w's system call, or NULL: the thread's, of the
 * same call number, its first block inside the wait. */
static const struct fx_offcpu *offcpu_of(const struct fx_proc *p, const struct fx_wait *w)
{
	size_t lo = 0, hi = p->n_offcpu; /* first event at or after w->t0 */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->offcpu[mid].t0 < w->t0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < p->n_offcpu && p->offcpu[i].t0 <= w->t1; i++)
		if (p->offcpu[i].tid == w->tid && p->offcpu[i].nr == w->what)
			return &p->offcpu[i];
	return NULL;
}

static int find_woken(const struct fx_proc *p, struct fx_waker *out)
{
	struct hmap votes, blocked; /* (pid, tid) -> waits it woke, their time off CPU */
	hmap_init(&votes);
	hmap_init(&blocked);
	out->woken = 1;
	int rc = 0;
	for (size_t i = 0; i < p->n_dl_waits && !rc; i++) {
		const struct fx_offcpu *o = offcpu_of(p, &p->dl_waits[i]);
		if (!o || o->waker_irq || !o->waker_tid)
			continue;
		uint64_t *v = hmap_slot(&votes, o->waker_pid, o->waker_tid, NULL);
		uint64_t *ns = hmap_slot(&blocked, o->waker_pid, o->waker_tid, NULL);
		if (!v || !ns) {
			rc = -1;
			break;
		}
		*ns += o->off_ns;
		if (++*v > out->matched) {
			out->matched = *v;
			out->pid = o->waker_pid;
			out->tid = o->waker_tid;
		}
	}
	if (!rc && out->matched)
		hmap_get(&blocked, out->pid, out->tid, &out->blocked_ns);
	hmap_free(&votes);
	hmap_free(&blocked);
	return rc;
}

int fx_find_waker(const struct fx_state *m, const struct fx_proc *p, struct fx_waker *out)
{
	*out = (struct fx_waker){ .file = p->file };
	for (size_t i = 0; i < p->n_dl_waits; i++)
		out->wait_ns += p->dl_waits[i].t1 - p->dl_waits[i].t0;
	out->waits = p->n_dl_waits;
	if (m->offcpu_events) {
		int rc = find_woken(p, out);
		if (2 * out->matched < out->waits || !out->matched)
			out->pid = out->tid = 0, out->matched = 0, out->blocked_ns = 0;
		return rc;
	}
	struct hmap votes; /* (pid, tid) -> waits it ended */
	hmap_init(&votes);
	int rc = 0;
	for (size_t i = 0; i < p->n_dl_waits && !rc; i++) {
		const struct fx_wait *w = &p->dl_waits[i];
		const struct fx_ev *best = NULL;
		uint32_t best_pid = 0;
		for (size_t k = 0; k < m->n_procs; k++) {
			const struct fx_proc *q = &m->procs[k];
			if (q->file != p->file)
				continue;
			const struct fx_ev *e = latest_in(q, w);
			if (e && (!best || e->t0 > best->t0)) {
				best = e;
				best_pid = q->pid;
			}
		}
		if (!best)
			continue;
		uint64_t *v = hmap_slot(&votes, best_pid, best->tid, NULL);
		if (!v) {
			rc = -1;
			break;
		}
		if (++*v > out->matched) {
			out->matched = *v;
			out->pid = best_pid;
			out->tid = best->tid;
		}
	}
	hmap_free(&votes);
	if (2 * out->matched < out->waits || !out->matched)
		out->pid = out->tid = 0, out->matched = 0;
	return rc;
}
