/* Ring records into file records (see ring_record.h). */
#include "ring_record.h"

#include <string.h>
#include <time.h>

uint32_t ring_fixed_size(uint16_t type)
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

int ring_probe_of(uint16_t type)
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

static void count_loss(struct ring_sink *s, int probe, int reason)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t now_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	struct ring_loss *l = &s->lost[probe][reason];
	if (atomic_fetch_add_explicit(&l->count, 1, memory_order_relaxed) == 0)
		atomic_store_explicit(&l->first_ns, now_ns, memory_order_relaxed);
	atomic_store_explicit(&l->last_ns, now_ns, memory_order_relaxed);
}

/* Interns a frame-pointer stack; writes its FR_REC_STACK record the first
 * time.  FR_STACK_NONE for an empty stack; UINT32_MAX when out of memory. */
static uint32_t intern_stack(struct ring_sink *s, uint32_t pid, const struct fr_raw_stack *st)
{
	uint16_t nk = st->n_kernel > FR_MAX_KERNEL_FRAMES ? FR_MAX_KERNEL_FRAMES : st->n_kernel;
	uint16_t nu = st->n_user > FR_MAX_USER_FRAMES ? FR_MAX_USER_FRAMES : st->n_user;
	bool is_new;
	uint32_t id;

	if (!nk && !nu)
		return FR_STACK_NONE;
	id = stack_table_intern(s->stacks, nu ? pid : 0, st->kernel_ips, nk, st->user_ips, nu,
				&is_new);
	if (!id)
		return UINT32_MAX;
	if (is_new) {
		uint32_t size = sizeof(struct fr_rec_stack) + 8u * (nk + nu);
		struct fr_rec_stack *r = frec_builder_reserve(s->builder, size);
		if (!r)
			return UINT32_MAX;
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
		frec_builder_commit(s->builder, 0);
		if (s->new_stack)
			s->new_stack(s->ctx, nu ? pid : 0, st->kernel_ips, nk, st->user_ips, nu);
	}
	return id;
}

/* The fr_ring_ustack trailer of an event: checked against the record's
 * size and the event's own thread.  NULL when malformed. */
static const uint8_t *ustack_trailer(const void *data, size_t size, uint32_t fixed,
				     struct fr_ring_ustack *h)
{
	const struct fr_ev_common *c = data;
	if (size < (size_t)fixed + FR_RING_USTACK_STACK_OFFSET)
		return NULL;
	const uint8_t *t = (const uint8_t *)data + fixed;
	memcpy(h, t, sizeof(*h));
	if (h->h.type != FR_RING_USTACK || h->n_kernel > FR_MAX_KERNEL_FRAMES ||
	    h->n_py > FR_MAX_PY_FRAMES || h->stack_len > size - fixed - FR_RING_USTACK_STACK_OFFSET ||
	    h->pid != c->pid || h->tid != c->tid)
		return NULL;
	return t;
}

/* Writes the trailer as the FR_REC_USTACK with this id; -1 out of memory. */
static int write_ustack(struct ring_sink *s, const uint8_t *t, const struct fr_ring_ustack *h,
			uint32_t id)
{
	uint32_t kernel_bytes = 8u * h->n_kernel, py_bytes = 16u * h->n_py;
	uint32_t body = (uint32_t)sizeof(struct fr_rec_ustack) + kernel_bytes + py_bytes + h->stack_len;
	uint32_t size = FR_ALIGN8(body);
	uint8_t *out = frec_builder_reserve(s->builder, size);
	if (!out)
		return -1;
	struct fr_rec_ustack r;
	memset(&r, 0, sizeof(r));
	r.h.size = size;
	r.h.type = FR_REC_USTACK;
	r.stack_id = id;
	r.pid = h->pid;
	r.tid = h->tid;
	r.n_kernel = h->n_kernel;
	r.n_py = h->n_py;
	r.stack_len = h->stack_len;
	r.flags = h->flags;
	r.py_version = h->py_version;
	memcpy(r.regs, h->regs, sizeof(r.regs));
	const uint8_t *py = t + sizeof(*h) + 8u * FR_MAX_KERNEL_FRAMES;
	memcpy(out, &r, sizeof(r));
	memcpy(out + sizeof(r), t + sizeof(*h), kernel_bytes);
	memcpy(out + sizeof(r) + kernel_bytes, py, py_bytes);
	memcpy(out + sizeof(r) + kernel_bytes + py_bytes, t + FR_RING_USTACK_STACK_OFFSET,
	       h->stack_len);
	memset(out + body, 0, size - body);
	frec_builder_commit(s->builder, 0);
	if (s->kernel_ips && h->n_kernel) {
		uint64_t ips[FR_MAX_KERNEL_FRAMES];
		memcpy(ips, t + sizeof(*h), kernel_bytes);
		s->kernel_ips(s->ctx, ips, h->n_kernel);
	}
	if (s->py_code) {
		for (uint16_t i = 0; i < h->n_py; i++) {
			struct fr_py_frame f;
			memcpy(&f, py + 16u * i, sizeof(f));
			if (!(f.flags & FR_PYF_SHIM))
				s->py_code(s->ctx, h->pid, f.code, f.fingerprint);
		}
	}
	return 0;
}

const struct fr_ev_common *ring_sink_record(struct ring_sink *s, const void *data, size_t size)
{
	struct fr_ev_common c;
	uint32_t fixed;

	if (size < sizeof(c)) {
		count_loss(s, FR_PROBE_PROC, FR_DROP_MALFORMED);
		return NULL;
	}
	memcpy(&c, data, sizeof(c));
	int probe = ring_probe_of(c.h.type);
	if (!(fixed = ring_fixed_size(c.h.type)) || size < fixed) {
		count_loss(s, probe, FR_DROP_MALFORMED);
		return NULL;
	}
	uint32_t stack_id = FR_STACK_NONE;
	if (c.h.flags & FR_RECF_RAW_STACK) {
		struct fr_raw_stack st;
		if (size < fixed + sizeof(st)) {
			count_loss(s, probe, FR_DROP_MALFORMED);
			return NULL;
		}
		memcpy(&st, (const uint8_t *)data + fixed, sizeof(st));
		stack_id = intern_stack(s, c.pid, &st);
		if (stack_id == UINT32_MAX) {
			count_loss(s, probe, FR_DROP_NO_MEMORY);
			return NULL;
		}
	} else if (c.h.flags & FR_RECF_USTACK) {
		struct fr_ring_ustack h;
		const uint8_t *t = ustack_trailer(data, size, fixed, &h);
		if (!t) {
			count_loss(s, probe, FR_DROP_MALFORMED);
			return NULL;
		}
		/* ids with the top bit set: raw stacks never collide with fp stack ids */
		stack_id = 0x80000000u | (s->ustacks + 1);
		if (write_ustack(s, t, &h, stack_id)) {
			count_loss(s, probe, FR_DROP_NO_MEMORY);
			return NULL;
		}
		s->ustacks++;
	}
	uint8_t *out = frec_builder_reserve(s->builder, fixed);
	if (!out) {
		count_loss(s, probe, FR_DROP_NO_MEMORY);
		return NULL;
	}
	memcpy(out, data, fixed);
	struct fr_ev_common *oc = (struct fr_ev_common *)out;
	oc->h.size = fixed;
	oc->h.flags = 0;
	if (c.h.flags & (FR_RECF_RAW_STACK | FR_RECF_USTACK))
		memcpy(out + FR_EV_STACK_ID_OFFSET, &stack_id, sizeof(stack_id));
	frec_builder_commit(s->builder, c.ts_ns);
	atomic_fetch_add_explicit(&s->events[probe], 1, memory_order_relaxed);
	return oc;
}
