/* Ring-buffer drain (see drain.h). */
#include "drain.h"
#include "rdma_datapath.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t fixed_size(uint16_t type)
{
	switch (type) {
	case FR_EV_CPU_SAMPLE:
		return sizeof(struct fr_ev_cpu_sample);
	case FR_EV_SYSCALL:
		return sizeof(struct fr_ev_syscall);
	case FR_EV_PROC_FORK:
	case FR_EV_PROC_EXEC:
	case FR_EV_PROC_EXIT:
		return sizeof(struct fr_ev_proc);
	case FR_EV_CUDA:
		return sizeof(struct fr_ev_cuda);
	case FR_EV_NCCL:
		return sizeof(struct fr_ev_nccl);
	case FR_EV_RDMA_CTRL:
		return sizeof(struct fr_ev_rdma_ctrl);
	case FR_EV_RDMA_POST:
		return sizeof(struct fr_ev_rdma_post);
	case FR_EV_RDMA_CQE:
		return sizeof(struct fr_ev_rdma_cqe);
	case FR_EV_STEP:
		return sizeof(struct fr_ev_step);
	default:
		return 0;
	}
}

static int probe_of(uint16_t type)
{
	switch (type) {
	case FR_EV_CPU_SAMPLE:
		return FR_PROBE_CPU;
	case FR_EV_SYSCALL:
		return FR_PROBE_SYSCALLS;
	case FR_EV_CUDA:
		return FR_PROBE_CUDA;
	case FR_EV_NCCL:
		return FR_PROBE_NCCL;
	case FR_EV_RDMA_CTRL:
	case FR_EV_RDMA_POST:
	case FR_EV_RDMA_CQE:
		return FR_PROBE_RDMA;
	case FR_EV_STEP:
		return FR_PROBE_STEP;
	default:
		return FR_PROBE_PROC;
	}
}

/* Interns a raw stack; writes its FR_REC_STACK record the first time. */
static uint32_t intern_stack(struct drain *d, uint32_t pid, const struct fr_raw_stack *st)
{
	uint16_t nk = st->n_kernel > FR_MAX_KERNEL_FRAMES ? FR_MAX_KERNEL_FRAMES : st->n_kernel;
	uint16_t nu = st->n_user > FR_MAX_USER_FRAMES ? FR_MAX_USER_FRAMES : st->n_user;
	bool is_new;
	uint32_t id;

	if (!nk && !nu)
		return FR_STACK_NONE;
	id = stack_table_intern(d->stacks, nu ? pid : 0, st->kernel_ips, nk,
				st->user_ips, nu, &is_new);
	if (id && is_new) {
		uint32_t size = sizeof(struct fr_rec_stack) + 8u * (nk + nu);
		struct fr_rec_stack *r = frec_builder_reserve(d->builder, size);
		if (r) {
			memset(r, 0, sizeof(*r));
			r->h.size = size;
			r->h.type = FR_REC_STACK;
			r->stack_id = id;
			r->pid = nu ? pid : 0;
			r->n_kernel = nk;
			r->n_user = nu;
			uint64_t *ips = (uint64_t *)(r + 1);
			memcpy(ips, st->kernel_ips, 8u * nk);
			memcpy(ips + nk, st->user_ips, 8u * nu);
			frec_builder_commit(d->builder, 0);
		}
		sym_collector_push(d->syms, nu ? pid : 0, st->kernel_ips, nk, st->user_ips, nu);
	}
	return id;
}

/* Keeps a thread's raw user stack until the event it belongs to arrives
 * (the BPF side sends it just before the event, from the same thread). */
static void hold_ustack(struct drain *d, const void *data, size_t size)
{
	struct fr_ring_ustack h;
	if (size < FR_RING_USTACK_STACK_OFFSET)
		return;
	memcpy(&h, data, sizeof(h));
	if (h.stack_len > size - FR_RING_USTACK_STACK_OFFSET || h.n_kernel > FR_MAX_KERNEL_FRAMES ||
	    h.n_py > FR_MAX_PY_FRAMES)
		return;
	struct pending_ustack *p = &d->ustacks[h.tid & 255];
	size_t need = FR_RING_USTACK_STACK_OFFSET + h.stack_len;
	if (need > p->cap) {
		uint8_t *buf = realloc(p->buf, need);
		if (!buf)
			return;
		p->buf = buf;
		p->cap = need;
	}
	memcpy(p->buf, data, need);
	p->tid = h.tid;
	p->tag = h.tag;
	p->len = (uint32_t)need;
}

/* Writes the FR_REC_USTACK of the event's thread; returns its stack id. */
static uint32_t take_ustack(struct drain *d, uint32_t tid, uint32_t tag)
{
	struct pending_ustack *p = &d->ustacks[tid & 255];
	struct fr_ring_ustack h;

	if (!p->len || p->tid != tid || p->tag != tag) {
		atomic_fetch_add_explicit(&d->ustacks_unpaired, 1, memory_order_relaxed);
		return FR_STACK_NONE;
	}
	memcpy(&h, p->buf, sizeof(h));
	p->len = 0;
	uint32_t kernel_bytes = 8u * h.n_kernel, py_bytes = 16u * h.n_py;
	uint32_t size = FR_ALIGN8(sizeof(struct fr_rec_ustack) + kernel_bytes + py_bytes + h.stack_len);
	uint8_t *out = frec_builder_reserve(d->builder, size);
	if (!out)
		return FR_STACK_NONE;
	/* ids with the top bit set: raw stacks never collide with fp stack ids */
	uint32_t id = 0x80000000u | ++d->next_ustack_id;
	struct fr_rec_ustack r;
	memset(&r, 0, sizeof(r));
	r.h.size = size;
	r.h.type = FR_REC_USTACK;
	r.stack_id = id;
	r.pid = h.pid;
	r.tid = h.tid;
	r.n_kernel = h.n_kernel;
	r.n_py = h.n_py;
	r.stack_len = h.stack_len;
	r.flags = h.flags;
	r.py_version = h.py_version;
	memcpy(r.regs, h.regs, sizeof(r.regs));
	memcpy(out, &r, sizeof(r));
	memcpy(out + sizeof(r), p->buf + sizeof(h), kernel_bytes);
	memcpy(out + sizeof(r) + kernel_bytes, p->buf + sizeof(h) + 8u * FR_MAX_KERNEL_FRAMES, py_bytes);
	memcpy(out + sizeof(r) + kernel_bytes + py_bytes, p->buf + FR_RING_USTACK_STACK_OFFSET,
	       h.stack_len);
	memset(out + sizeof(r) + kernel_bytes + py_bytes + h.stack_len, 0,
	       size - (sizeof(r) + kernel_bytes + py_bytes + h.stack_len));
	frec_builder_commit(d->builder, 0);
	if (d->python) {
		const uint8_t *py = p->buf + sizeof(h) + 8u * FR_MAX_KERNEL_FRAMES;
		for (uint16_t i = 0; i < h.n_py; i++) {
			struct fr_py_frame f;
			memcpy(&f, py + 16u * i, sizeof(f));
			if (!(f.flags & FR_PYF_SHIM))
				python_note_code(d->python, h.pid, f.code, f.fingerprint);
		}
	}
	return id;
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

static bool try_rdma_ops(struct drain *d, const struct fr_ev_rdma_ctrl *r, bool last_try)
{
	uint64_t addrs[3] = {r->addr, r->length, r->obj};
	uint32_t lineage[4];
	int n = lineage_of(d, r->c.pid, lineage);
	return rdma_datapath_attach_lineage(d->rdma_dp, d->dsos, d->builder, lineage, n, addrs,
					    d->quiet, last_try);
}

static void retry_rdma_ops(struct drain *d)
{
	uint64_t now = mono_ns();
	int w = 0;
	for (int i = 0; i < d->n_ops_retry; i++) {
		struct pending_ops *p = &d->ops_retry[i];
		bool last = now >= p->give_up_ns;
		if (!try_rdma_ops(d, &p->ev, last) && !last)
			d->ops_retry[w++] = *p;
	}
	d->n_ops_retry = w;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct drain *d = ctx;
	const struct fr_ev_common *c = data;
	uint32_t fixed;

	if (size >= sizeof(struct fr_rec_hdr) && c->h.type == FR_RING_USTACK) {
		hold_ustack(d, data, size);
		return 0;
	}

	if (size < sizeof(*c) || !(fixed = fixed_size(c->h.type)) || size < fixed) {
		atomic_fetch_add_explicit(&d->malformed, 1, memory_order_relaxed);
		return 0;
	}
	uint32_t stack_id = FR_STACK_NONE;
	if (c->h.flags & FR_RECF_RAW_STACK) {
		if (size < fixed + sizeof(struct fr_raw_stack)) {
			atomic_fetch_add_explicit(&d->malformed, 1, memory_order_relaxed);
			return 0;
		}
		stack_id = intern_stack(d, c->pid, (const void *)((const char *)data + fixed));
	} else if (c->h.flags & FR_RECF_USTACK) {
		uint32_t tag;
		memcpy(&tag, (const char *)data + FR_EV_STACK_ID_OFFSET, sizeof(tag));
		stack_id = take_ustack(d, c->tid, tag);
	}
	void *out = frec_builder_reserve(d->builder, fixed);
	if (!out)
		return 0;
	memcpy(out, data, fixed);
	struct fr_ev_common *oc = out;
	oc->h.size = fixed;
	oc->h.flags = 0;
	if (c->h.flags & (FR_RECF_RAW_STACK | FR_RECF_USTACK))
		memcpy((char *)out + FR_EV_STACK_ID_OFFSET, &stack_id, sizeof(stack_id));
	frec_builder_commit(d->builder, c->ts_ns);
	atomic_fetch_add_explicit(&d->events[probe_of(c->h.type)], 1, memory_order_relaxed);
	if (c->h.type == FR_EV_PROC_FORK) {
		const struct fr_ev_proc *p = data;
		d->parents[c->pid & 1023] = (struct pid_parent){c->pid, p->ppid};
	}
	bool rdma_ops = c->h.type == FR_EV_RDMA_CTRL &&
			((const struct fr_ev_rdma_ctrl *)data)->func == FR_RDMA_OPS;
	if (rdma_ops && d->rdma_dp) {
		/* now, on this thread: the tracking thread would be milliseconds
		 * later, and a program may post a millisecond after opening */
		if (try_rdma_ops(d, data, false))
			rdma_ops = false;
		else if (d->n_ops_retry < 16) {
			d->ops_retry[d->n_ops_retry].ev = *(const struct fr_ev_rdma_ctrl *)data;
			d->ops_retry[d->n_ops_retry++].give_up_ns = mono_ns() + 1000000000ull;
			rdma_ops = false;
		}
	}
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
		if (d->n_ops_retry)
			retry_rdma_ops(d);
		maybe_flush(d);
	}
	ring_buffer__consume(d->rb);
	frec_builder_flush(d->builder);
	return NULL;
}

int drain_start(struct drain *d, int ring_fd, struct frec_writer *w,
		struct stack_table *stacks, struct sym_collector *syms,
		struct python_state *python, struct uprobe_family *rdma_dp,
		const struct uprobe_family *rdma_ctrl, struct dso_table *dsos, bool quiet,
		drain_proc_cb on_proc, void *ctx)
{
	memset(d, 0, sizeof(*d));
	d->python = python;
	d->rdma_dp = rdma_dp;
	d->rdma_ctrl = rdma_ctrl;
	d->dsos = dsos;
	d->quiet = quiet;
	d->stacks = stacks;
	d->syms = syms;
	d->on_proc = on_proc;
	d->on_proc_ctx = ctx;
	d->period_us = 5000;
	d->flush_period_ns = 1000000000ull;
	d->last_flush_ns = mono_ns();
	d->builder = frec_builder_new(w, FR_CHUNK_EVENTS);
	if (!d->builder)
		return -ENOMEM;
	d->rb = ring_buffer__new(ring_fd, on_event, d, NULL);
	if (!d->rb) {
		int err = -errno;
		frec_builder_free(d->builder);
		return err ? err : -EINVAL;
	}
	int err = pthread_create(&d->thread, NULL, drain_main, d);
	if (err) {
		ring_buffer__free(d->rb);
		frec_builder_free(d->builder);
		return -err;
	}
	return 0;
}

void drain_stop(struct drain *d)
{
	atomic_store(&d->stop, 1);
	pthread_join(d->thread, NULL);
	ring_buffer__free(d->rb);
	frec_builder_free(d->builder);
	d->builder = NULL;
	for (int i = 0; i < 256; i++)
		free(d->ustacks[i].buf);
}
