/* Ring records into file records (see ring_record.h). */
#include "drain/ring_record.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "fr_family.h"

/* What ring_sink_record needs of an event type, from the family
 * descriptors (fr_family.h).  Looking a type up in the descriptors walks
 * every family's records; this runs once per event, so the answers are
 * laid out once, indexed by type (event types are below 0x100, events.h). */
struct event_type {
	uint32_t size;  /* 0: not an event type */
	uint8_t probe;  /* enum fr_probe_id; FR_PROBE_PROC for the rest */
	bool stack;     /* has a stack_id at FR_EV_STACK_ID_OFFSET */
};

#define EVENT_TYPES 0x100
static struct event_type event_types[EVENT_TYPES];
static pthread_once_t event_types_once = PTHREAD_ONCE_INIT;
static atomic_bool event_types_built; /* the per-event check, cheaper than pthread_once */

static void build_event_types(void)
{
	size_t n;
	const struct fr_family *const *fams = fr_families(&n);
	for (unsigned t = 0; t < EVENT_TYPES; t++)
		event_types[t].probe = FR_PROBE_PROC;
	for (size_t i = 0; i < n; i++)
		for (size_t r = 0; r < fams[i]->n_records; r++) {
			const struct fr_family_record *rec = &fams[i]->records[r];
			if (rec->type < EVENT_TYPES)
				event_types[rec->type] = (struct event_type){ rec->size,
									      (uint8_t)fams[i]->id,
									      rec->stack };
		}
	atomic_store_explicit(&event_types_built, true, memory_order_release);
}

static const struct event_type *event_type_of(uint16_t type)
{
	static const struct event_type unknown = { 0, FR_PROBE_PROC, false };
	if (!atomic_load_explicit(&event_types_built, memory_order_acquire))
		pthread_once(&event_types_once, build_event_types);
	return type < EVENT_TYPES ? &event_types[type] : &unknown;
}

uint32_t ring_fixed_size(uint16_t type)
{
	return event_type_of(type)->size;
}

int ring_probe_of(uint16_t type)
{
	return event_type_of(type)->probe;
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

/* Interns a frame-pointer stack (nk kernel ips, then nu user ips); writes
 * its FR_REC_STACK record the first time.  FR_STACK_NONE for an empty
 * stack; UINT32_MAX when out of memory. */
static uint32_t intern_stack(struct ring_sink *s, uint32_t pid, const uint64_t *ips,
			     uint16_t nk, uint16_t nu)
{
	bool is_new;
	uint32_t id;

	if (!nk && !nu)
		return FR_STACK_NONE;
	id = stack_table_intern(s->stacks, nu ? pid : 0, ips, nk, ips + nk, nu, &is_new);
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
		memcpy(r + 1, ips, 8u * (nk + nu));
		frec_builder_commit(s->builder, 0);
		if (s->new_stack)
			s->new_stack(s->ctx, nu ? pid : 0, ips, nk, ips + nk, nu);
	}
	return id;
}

/* The fr_ring_ustack trailer of an event: checked against the record's
 * size and the event's own thread.  NULL when malformed. */
static const uint8_t *ustack_trailer(const void *data, size_t size, uint32_t fixed,
				     struct fr_ring_ustack *h)
{
	const struct fr_ev_common *c = data;
	if (size < (size_t)fixed + sizeof(*h))
		return NULL;
	const uint8_t *t = (const uint8_t *)data + fixed;
	memcpy(h, t, sizeof(*h));
	if (h->h.type != FR_RING_USTACK || h->n_kernel > FR_MAX_KERNEL_FRAMES ||
	    h->n_py > FR_MAX_PY_FRAMES ||
	    (uint64_t)h->stack_len + sizeof(*h) + 8u * h->n_kernel + 16u * h->n_py >
		    size - fixed ||
	    h->pid != c->pid || h->tid != c->tid)
		return NULL;
	return t;
}

/* Writes the trailer as the FR_REC_USTACK with this id; -1 out of memory. */
static int write_ustack(struct ring_sink *s, const uint8_t *t, const struct fr_ring_ustack *h,
			uint32_t id)
{
	uint32_t kernel_bytes = 8u * h->n_kernel, py_bytes = 16u * h->n_py;
	const uint8_t *py = t + sizeof(*h) + kernel_bytes;
	const uint8_t *stack = py + py_bytes;
	uint32_t stack_len = h->stack_len, regs_used = 0;
	const uint8_t *keep = NULL;
	uint64_t regs[FR_USTACK_REGS];
	memcpy(regs, h->regs, sizeof(regs));
	bool plan = s->sparse != NULL;
	if (plan && s->behind && s->behind(s->ctx)) {
		plan = false;
		atomic_fetch_add_explicit(&s->whole_behind, 1, memory_order_relaxed);
	}
	uint64_t top = 0;
	bool bounded = h->flags & FR_USTACK_BOUNDED, ran_off = false;
	if (bounded)
		atomic_fetch_add_explicit(&s->bounded, 1, memory_order_relaxed);
	if (plan && ustack_sparse_plan(s->sparse, h->pid, h->tid, regs, stack, h->stack_len,
				       &stack_len, &keep, &regs_used, &top, &ran_off)) {
		for (int i = 0; i < FR_USTACK_REGS; i++)
			if (!(regs_used & 1u << i))
				regs[i] = 0;
	}
	if (plan && s->stack_top) {
		/* a copy cut at its thread's top whose unwind needed more: the top
		 * was wrong (one that stops for want of unwind data, in the vdso
		 * say, tells nothing about it) */
		bool cut_short = bounded && !top && ran_off;
		if (cut_short)
			atomic_fetch_add_explicit(&s->bounded_short, 1, memory_order_relaxed);
		if (top || cut_short)
			s->stack_top(s->ctx, h->pid, h->tid, top, cut_short);
	}
	uint32_t body = (uint32_t)sizeof(struct fr_rec_ustack) + kernel_bytes + py_bytes + stack_len;
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
	r.stack_len = stack_len;
	r.flags = h->flags | (keep ? FR_USTACK_SPARSE : 0);
	r.py_version = h->py_version;
	memcpy(r.regs, regs, sizeof(r.regs));
	memcpy(out, &r, sizeof(r));
	memcpy(out + sizeof(r), t + sizeof(*h), kernel_bytes);
	memcpy(out + sizeof(r) + kernel_bytes, py, py_bytes);
	uint8_t *out_stack = out + sizeof(r) + kernel_bytes + py_bytes;
	if (keep) {
		/* keep[] is 0 or 1: a mask of 0 or 0xff, without a branch a byte */
		for (uint32_t i = 0; i < stack_len; i++)
			out_stack[i] = stack[i] & (uint8_t)-keep[i];
	} else {
		memcpy(out_stack, stack, stack_len);
	}
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
	const struct event_type *et = event_type_of(c.h.type);
	int probe = et->probe;
	fixed = et->size;
	/* a stack sent with an event that has no field to name it is damage */
	if (!fixed || size < fixed ||
	    ((c.h.flags & (FR_RECF_RAW_STACK | FR_RECF_USTACK)) && !et->stack)) {
		count_loss(s, probe, FR_DROP_MALFORMED);
		return NULL;
	}
	uint32_t stack_id = FR_STACK_NONE;
	if (c.h.flags & FR_RECF_RAW_STACK) {
		struct fr_raw_stack st;
		uint64_t ips[FR_MAX_KERNEL_FRAMES + FR_MAX_USER_FRAMES];
		if (size < fixed + sizeof(st)) {
			count_loss(s, probe, FR_DROP_MALFORMED);
			return NULL;
		}
		memcpy(&st, (const uint8_t *)data + fixed, sizeof(st));
		if (st.n_kernel > FR_MAX_KERNEL_FRAMES || st.n_user > FR_MAX_USER_FRAMES ||
		    size < fixed + sizeof(st) + 8u * (st.n_kernel + st.n_user)) {
			count_loss(s, probe, FR_DROP_MALFORMED);
			return NULL;
		}
		memcpy(ips, (const uint8_t *)data + fixed + sizeof(st),
		       8u * (st.n_kernel + st.n_user));
		stack_id = intern_stack(s, c.pid, ips, st.n_kernel, st.n_user);
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
		stack_id = FR_STACK_ID_RAW(s->ustacks + 1);
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
