/* Ring-buffer drain (see drain.h). */
#include "drain.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <string.h>
#include <time.h>

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

static int on_event(void *ctx, void *data, size_t size)
{
	struct drain *d = ctx;
	const struct fr_ev_common *c = data;
	uint32_t fixed;

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
	}
	void *out = frec_builder_reserve(d->builder, fixed);
	if (!out)
		return 0;
	memcpy(out, data, fixed);
	struct fr_ev_common *oc = out;
	oc->h.size = fixed;
	oc->h.flags = 0;
	if (c->h.flags & FR_RECF_RAW_STACK)
		memcpy((char *)out + FR_EV_STACK_ID_OFFSET, &stack_id, sizeof(stack_id));
	frec_builder_commit(d->builder, c->ts_ns);
	atomic_fetch_add_explicit(&d->events[probe_of(c->h.type)], 1, memory_order_relaxed);
	if (d->on_proc && ((c->h.type >= FR_EV_PROC_FORK && c->h.type <= FR_EV_PROC_EXIT) ||
			   (c->h.type == FR_EV_RDMA_CTRL &&
			    ((const struct fr_ev_rdma_ctrl *)data)->func == FR_RDMA_OPS)))
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
	struct timespec nap = {0, (long)d->period_us * 1000};

	while (!atomic_load(&d->stop)) {
		ring_buffer__consume(d->rb);
		maybe_flush(d);
		nanosleep(&nap, NULL);
	}
	ring_buffer__consume(d->rb);
	frec_builder_flush(d->builder);
	return NULL;
}

int drain_start(struct drain *d, int ring_fd, struct frec_writer *w,
		struct stack_table *stacks, struct sym_collector *syms,
		drain_proc_cb on_proc, void *ctx)
{
	memset(d, 0, sizeof(*d));
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
}
