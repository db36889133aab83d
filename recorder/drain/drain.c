/* Ring-buffer drain (see drain.h). */
#include "drain/drain.h"
#include "attach/attach_hold.h"
#include "clock.h"
#include "drain/ring_fill.h"
#include "drain/stack_tops.h"
#include "attach/rdma_datapath.h"
#include "verbs_abi.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The ring filled past 1/DRAIN_BEHIND_FRACTION: the drain is behind, and
 * optional work steps aside (drain.h). */
#define DRAIN_BEHIND_FRACTION 16

struct drain {
	struct ring_buffer *rb;
	struct frec_builder *builder;
	struct ring_sink sink;      /* ring records into file records; counts events */
	struct ring_fill fill;      /* how full the ring is */
	uint64_t behind_bytes;      /* filled past this, the drain is behind */
	struct sym_collector *syms; /* told about every new stack */
	uint64_t *kips;             /* kernel ips already sent to syms (0: empty) */
	size_t kips_n, kips_cap;
	drain_proc_cb on_proc;
	void *on_proc_ctx;
	struct python_state *python;     /* told about code objects in stacks */
	/* fr_ustack_tops (bpf/ustack.bpf.h), -1: copies never bounded; and
	 * which tops it holds (an unchanged one costs no system call) */
	int tops_fd;
	struct stack_tops tops;
	/* rdma: attach the data path as soon as a context's ops table is seen
	 * (setup to first post can take 2 ms); NULL without rdma probes */
	struct uprobe_family *rdma_dp;
	const struct uprobe_family *rdma_ctrl; /* its control path: attached = verbs in use */
	struct dso_table *dsos;
	bool quiet;
	struct pid_parent { uint32_t pid, ppid; } parents[1024]; /* from fork events */
	/* ops tables whose provider mapping was not known yet: retried every
	 * drain period; given up after a second (a held process is then let
	 * go, the others handed to the tracking thread when this is full) */
	struct pending_ops {
		struct fr_ev_rdma_ctrl ev;
		uint64_t give_up_ns;
		uint32_t lineage[4];
		int n_lineage;
	} ops_retry[64];
	int n_ops_retry;
	/* processes held for their data path (attach_hold.h), and those to let
	 * go once the events drained so far are handled */
	struct attach_hold hold;
	struct held_release { uint32_t pid; uint64_t held_ns; bool lost; } releases[64];
	int n_releases;
	unsigned period_us;       /* sleep between drains */
	uint64_t flush_period_ns; /* seal a partial chunk this often */
	drain_event_cb on_commit;
	void *on_commit_ctx;
	pthread_t thread;
	bool running; /* the thread was made */
	atomic_int stop;
	/* drain_flush_sync: requests and the last one done */
	atomic_uint flush_req, flush_done;
	uint64_t last_flush_ns;
};

static void sink_new_stack(void *ctx, uint32_t pid, const uint64_t *kernel_ips,
			   uint16_t n_kernel, const uint64_t *user_ips, uint16_t n_user)
{
	struct drain *d = ctx;
	sym_collector_push(d->syms, pid, kernel_ips, n_kernel, user_ips, n_user);
}

/* Kernel ips of raw stacks: each new one goes to the symbol collector
 * once (a set of those already sent, open addressing, load <= 1/2), so a
 * CPU sample costs a few lookups, not a queued stack. */
static bool kip_seen(struct drain *d, uint64_t ip)
{
	if ((d->kips_n + 1) * 2 > d->kips_cap) {
		size_t cap = d->kips_cap ? d->kips_cap * 2 : 4096;
		uint64_t *t = calloc(cap, sizeof(*t));
		if (!t)
			return true; /* no room to remember: do not send it again and again */
		for (size_t i = 0; i < d->kips_cap; i++) {
			if (!d->kips[i])
				continue;
			size_t j = (size_t)(d->kips[i] * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1);
			while (t[j])
				j = (j + 1) & (cap - 1);
			t[j] = d->kips[i];
		}
		free(d->kips);
		d->kips = t;
		d->kips_cap = cap;
	}
	size_t j = (size_t)(ip * 0x9e3779b97f4a7c15ull >> 20) & (d->kips_cap - 1);
	for (; d->kips[j]; j = (j + 1) & (d->kips_cap - 1))
		if (d->kips[j] == ip)
			return true;
	d->kips[j] = ip;
	d->kips_n++;
	return false;
}

static void sink_kernel_ips(void *ctx, const uint64_t *ips, uint16_t n)
{
	struct drain *d = ctx;
	uint64_t fresh[FR_MAX_KERNEL_FRAMES];
	uint16_t k = 0;
	for (uint16_t i = 0; i < n && i < FR_MAX_KERNEL_FRAMES; i++)
		if (ips[i] && !kip_seen(d, ips[i]))
			fresh[k++] = ips[i];
	if (k)
		sym_collector_push(d->syms, 0, fresh, k, NULL, 0);
}

static void sink_stack_top(void *ctx, uint32_t pid, uint32_t tid, uint64_t top, int cut_short)
{
	struct drain *d = ctx;
	uint64_t key = (uint64_t)pid << 32 | tid, set;
	switch (stack_tops_note(&d->tops, pid, tid, top, cut_short, &set)) {
	case STACK_TOP_SET:
		bpf_map_update_elem(d->tops_fd, &key, &set, BPF_ANY);
		break;
	case STACK_TOP_FORGET:
		bpf_map_delete_elem(d->tops_fd, &key);
		break;
	case STACK_TOP_KEEP:
		break;
	}
}

static bool sink_behind(void *ctx)
{
	struct drain *d = ctx;
	return ring_fill_bytes(&d->fill) > d->behind_bytes;
}

static void sink_py_code(void *ctx, uint32_t pid, uint64_t code, uint16_t fingerprint)
{
	struct drain *d = ctx;
	if (d->python)
		python_note_code(d->python, pid, code, fingerprint);
}

/* The ancestors of pid known from fork events, nearest first: a freshly
 * forked child's mappings are its parent's. */
static int lineage_of(const struct drain *d, uint32_t pid, uint32_t lineage[4])
{
	int n = 1;
	lineage[0] = pid;
	while (n < 4) {
		const struct pid_parent *pp = &d->parents[lineage[n - 1] & 1023];
		if (pp->pid != lineage[n - 1] || !pp->ppid)
			break;
		lineage[n] = pp->ppid;
		n++;
	}
	return n;
}

/* ---- rdma: each context's data path, attached as soon as its ops table
 * is seen; a process held for it (attach_hold.h) let go once it is ---------- */

/* What a program may have posted unseen (FR_DROP_NOT_ATTACHED): a QP it
 * got while its provider was not attached and it was not held, or a held
 * context let go before the attach.  Counted here, all of them, so the
 * trace has one counter for the reason; the work requests themselves were
 * never seen.  at_ns: when it was handed back (0: now). */
static void count_not_attached(struct drain *d, uint64_t at_ns)
{
	struct ring_loss *l = &d->sink.lost[FR_PROBE_RDMA][FR_DROP_NOT_ATTACHED];
	uint64_t when = at_ns ? at_ns : mono_ns();
	if (atomic_fetch_add(&l->count, 1) == 0 || when < atomic_load(&l->first_ns))
		atomic_store(&l->first_ns, when);
	if (when > atomic_load(&l->last_ns))
		atomic_store(&l->last_ns, when);
}

static bool ops_held(const struct fr_ev_rdma_ctrl *r)
{
	return r->flags & RDMA_OPS_HELD;
}

/* The hold is let go after the events drained so far are handled, not at
 * once: another thread's context may be held by the same stop, its ops
 * table a few events later. */
static void schedule_release(struct drain *d, const struct fr_ev_rdma_ctrl *r, bool lost)
{
	for (int i = 0; i < d->n_releases; i++) {
		struct held_release *h = &d->releases[i];
		if (h->pid == r->c.pid && h->held_ns == (uint64_t)r->result) {
			h->lost |= lost;
			return;
		}
	}
	if (d->n_releases == (int)(sizeof(d->releases) / sizeof(d->releases[0]))) {
		/* never leave a process stopped for want of a slot */
		if (!attach_hold_release(&d->hold, r->c.pid, (uint64_t)r->result) || lost)
			count_not_attached(d, 0);
		return;
	}
	d->releases[d->n_releases++] = (struct held_release){r->c.pid, (uint64_t)r->result, lost};
}

static enum rdma_dp_status try_rdma_ops(struct drain *d, const struct pending_ops *p,
					bool last_try)
{
	const struct fr_ev_rdma_ctrl *r = &p->ev;
	uint64_t addrs[3] = {r->addr, r->length, r->obj};
	enum rdma_dp_status st = rdma_datapath_attach_ops(d->rdma_dp, d->dsos, d->builder,
							  p->lineage, p->n_lineage, addrs,
							  r->c.ts_ns, ops_held(r), d->quiet,
							  last_try);
	if (st == RDMA_DP_ATTACHED && (r->flags & RDMA_OPS_KEYED)) {
		/* the probes are per file: nobody is held for this provider again */
		struct rdma_ready_key k;
		memset(&k, 0, sizeof(k));
		memcpy(&k.ino, r->gid, 8);
		memcpy(&k.offset, r->gid + 8, 8);
		k.dev = r->lkey;
		attach_hold_mark_ready(&d->hold, &k);
	}
	if (st != RDMA_DP_UNMAPPED && ops_held(r))
		schedule_release(d, r, st != RDMA_DP_ATTACHED);
	return st;
}

/* Lets go the holds whose contexts are all handled. */
static void release_held(struct drain *d)
{
	int w = 0;
	for (int i = 0; i < d->n_releases; i++) {
		struct held_release h = d->releases[i];
		bool waiting = false;
		for (int j = 0; j < d->n_ops_retry && !waiting; j++)
			waiting = d->ops_retry[j].ev.c.pid == h.pid && ops_held(&d->ops_retry[j].ev) &&
				  (uint64_t)d->ops_retry[j].ev.result == h.held_ns;
		if (waiting) {
			d->releases[w++] = h;
			continue;
		}
		/* not in force any more: the guardian let it go past its bound,
		 * before the attach */
		if (!attach_hold_release(&d->hold, h.pid, h.held_ns) || h.lost)
			count_not_attached(d, 0);
	}
	d->n_releases = w;
}

static void retry_rdma_ops(struct drain *d)
{
	uint64_t now = mono_ns();
	int w = 0;
	for (int i = 0; i < d->n_ops_retry; i++) {
		struct pending_ops *p = &d->ops_retry[i];
		bool last = now >= p->give_up_ns;
		if (try_rdma_ops(d, p, last) == RDMA_DP_UNMAPPED && !last)
			d->ops_retry[w++] = *p;
	}
	d->n_ops_retry = w;
	if (d->n_releases)
		release_held(d);
}

/* An ops table: attach now, on this thread (the tracking thread would be
 * milliseconds later, and a program that is not held may post a
 * millisecond after opening).  false when the tracking thread is to try. */
static bool on_rdma_ops(struct drain *d, const struct fr_ev_rdma_ctrl *r)
{
	struct pending_ops p;

	if ((r->flags & RDMA_OPS_READY) && !ops_held(r))
		return true; /* its provider is attached, for every process */
	if ((r->flags & RDMA_OPS_QP) && !ops_held(r))
		count_not_attached(d, r->c.ts_ns); /* a debugger's, a terminal's job ... */
	memset(&p, 0, sizeof(p));
	p.ev = *r;
	p.give_up_ns = mono_ns() + 1000000000ull;
	p.n_lineage = lineage_of(d, r->c.pid, p.lineage);
	if (try_rdma_ops(d, &p, false) != RDMA_DP_UNMAPPED)
		return true;
	if (d->n_ops_retry < (int)(sizeof(d->ops_retry) / sizeof(d->ops_retry[0]))) {
		d->ops_retry[d->n_ops_retry++] = p;
		return true;
	}
	if (ops_held(r)) {
		/* no room to wait for its mapping: report and let it go */
		try_rdma_ops(d, &p, true);
		return true;
	}
	return false;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct drain *d = ctx;
	const struct fr_ev_common *c = data;

	const struct fr_ev_common *written = ring_sink_record(&d->sink, data, size);
	if (!written)
		return 0;
	if (d->on_commit)
		d->on_commit(d->on_commit_ctx, written);
	if (c->h.type == FR_EV_PROC_FORK) {
		const struct fr_ev_proc *p = data;
		d->parents[c->pid & 1023] = (struct pid_parent){c->pid, p->ppid};
	}
	bool rdma_ops = c->h.type == FR_EV_RDMA_CTRL &&
			((const struct fr_ev_rdma_ctrl *)data)->func == FR_RDMA_OPS;
	if (rdma_ops && d->rdma_dp && on_rdma_ops(d, data))
		rdma_ops = false;
	if (d->on_proc && ((c->h.type >= FR_EV_PROC_FORK && c->h.type <= FR_EV_PROC_EXIT) ||
			   rdma_ops))
		d->on_proc(d->on_proc_ctx, c);
	return 0;
}

static void maybe_flush(struct drain *d)
{
	uint64_t now = mono_ns();
	if (now - d->last_flush_ns >= d->flush_period_ns) {
		frec_builder_flush(d->builder);
		d->last_flush_ns = now;
	}
}

static void *drain_main(void *arg)
{
	struct drain *d = arg;
	/* A busy job can keep every CPU full: at plain priority this thread
	 * would wait whole timeslices, while the ring fills and a data path
	 * waits to be attached.  It uses little CPU, so ahead of the job. */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), -10);
	struct timespec nap = {0, (long)d->period_us * 1000};

	/* Events never wake us (a wakeup per event triples its cost to the
	 * traced thread); the few that must be handled at once (an RDMA ops
	 * table) force one, so wait in poll rather than sleep. */
	(void)nap;
	while (!atomic_load(&d->stop)) {
		/* A program may post its first work request a millisecond after
		 * opening its device: once verbs are in use, drain every 1 ms so
		 * the data path is attached in time.  Otherwise every 5 ms: each
		 * wakeup costs a timer interrupt (~14 us on this kind of VM). */
		bool rdma_live = d->rdma_ctrl && d->rdma_ctrl->functions_attached;
		ring_buffer__poll(d->rb, rdma_live ? 1 : (int)(d->period_us / 1000));
		ring_buffer__consume(d->rb);
		if (d->n_ops_retry || d->n_releases)
			retry_rdma_ops(d);
		unsigned req = atomic_load(&d->flush_req);
		if (req != atomic_load(&d->flush_done)) {
			ring_buffer__consume(d->rb);
			frec_builder_flush(d->builder);
			d->last_flush_ns = mono_ns();
			atomic_store(&d->flush_done, req);
		}
		maybe_flush(d);
	}
	ring_buffer__consume(d->rb);
	frec_builder_flush(d->builder);
	return NULL;
}

int drain_flush_sync(struct drain *d, uint64_t timeout_ns)
{
	unsigned req = atomic_fetch_add(&d->flush_req, 1) + 1;
	uint64_t give_up = mono_ns() + timeout_ns;
	struct timespec nap = {0, 1000000};
	while (atomic_load(&d->flush_done) != req) {
		if (mono_ns() >= give_up)
			return -1;
		nanosleep(&nap, NULL);
	}
	return 0;
}

const struct ring_sink *drain_counts(const struct drain *d)
{
	return &d->sink;
}

int drain_start(const struct drain_config *cfg, struct drain **out, struct frec_error *err)
{
	struct drain *d = calloc(1, sizeof(*d));
	*out = NULL;
	if (!d) {
		frec_error_set(err, "drain", -1, ENOMEM, "out of memory");
		return -ENOMEM;
	}
	d->on_commit = cfg->on_commit;
	d->on_commit_ctx = cfg->on_commit_ctx;
	d->sink.sparse = cfg->sparse;
	d->python = cfg->python;
	d->rdma_dp = cfg->rdma_dp;
	d->rdma_ctrl = cfg->rdma_ctrl;
	d->dsos = cfg->dsos;
	d->quiet = cfg->quiet;
	d->syms = cfg->syms;
	d->sink.stacks = cfg->stacks;
	d->sink.new_stack = sink_new_stack;
	d->sink.py_code = sink_py_code;
	d->sink.kernel_ips = sink_kernel_ips;
	d->sink.ctx = d;
	d->tops_fd = cfg->ustack_tops_fd;
	if (cfg->sparse && cfg->ustack_tops_fd >= 0)
		d->sink.stack_top = sink_stack_top;
	if (cfg->sparse) {
		int ferr = ring_fill_open(&d->fill, cfg->ring_fd);
		if (!ferr) {
			d->behind_bytes = d->fill.size / DRAIN_BEHIND_FRACTION;
			d->sink.behind = sink_behind;
		} else {
			fprintf(stderr, "flightrec: cannot map the ring buffer's positions (%s): "
				"sparse stacks are planned even when the drain is behind\n",
				strerror(-ferr));
		}
	}
	d->on_proc = cfg->on_proc;
	d->on_proc_ctx = cfg->on_proc_ctx;
	d->period_us = 5000;
	d->flush_period_ns = 1000000000ull;
	d->last_flush_ns = mono_ns();
	attach_hold_init(&d->hold);
	d->builder = frec_builder_new(cfg->writer, FR_CHUNK_EVENTS);
	if (!d->builder) {
		frec_error_set(err, "drain", -1, ENOMEM, "out of memory");
		drain_free(d);
		return -ENOMEM;
	}
	d->sink.builder = d->builder;
	d->rb = ring_buffer__new(cfg->ring_fd, on_event, d, NULL);
	if (!d->rb) {
		int e = errno ? errno : EINVAL;
		frec_error_set(err, "drain", -1, e, "cannot read the ring buffer: %s", strerror(e));
		drain_free(d);
		return -e;
	}
	if (cfg->rdma_dp && cfg->rdma_ctrl) {
		char why[200];
		if (attach_hold_start(&d->hold, cfg->rdma_ctrl->exit_prog, "fr_rdma", why, sizeof(why)))
			fprintf(stderr, "flightrec: rdma: %s: processes are not held while their "
				"data path is attached; QPs created before it are counted as "
				"not_attached\n", why);
	}
	int e = pthread_create(&d->thread, NULL, drain_main, d);
	if (e) {
		frec_error_set(err, "drain", -1, e, "cannot start the drain thread: %s", strerror(e));
		drain_free(d);
		return -e;
	}
	d->running = true;
	*out = d;
	return 0;
}

void drain_stop(struct drain *d)
{
	if (!d)
		return;
	if (d->running) {
		atomic_store(&d->stop, 1);
		pthread_join(d->thread, NULL);
		d->running = false;
	}
	/* the recording ends: every held process goes on */
	attach_hold_stop(&d->hold);
	if (d->rb)
		ring_buffer__free(d->rb);
	d->rb = NULL;
	frec_builder_free(d->builder);
	d->builder = NULL;
	d->sink.builder = NULL;
	free(d->kips);
	d->kips = NULL;
	ring_fill_close(&d->fill);
}

void drain_free(struct drain *d)
{
	drain_stop(d);
	free(d);
}
