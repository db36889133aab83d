/* The allocations live at the ring window's start (see live_allocs.h). */
#include "ring/live_allocs.h"
#include "grow.h"

#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "mem_ledger.h"

struct live_alloc_rec {
	uint64_t ts_ns;
	uint64_t bytes;     /* of the allocation */
	uint32_t len;       /* record bytes below: [USTACK] event */
	uint16_t n_records;
	uint8_t host;       /* pinned host memory, not the device's */
	uint8_t data[];
};

static void drop_rec(struct live_allocs *l, uint32_t id)
{
	struct live_alloc_rec *r = l->recs[id];
	if (!r)
		return;
	l->bytes_held -= sizeof(*r) + r->len;
	free(r);
	l->recs[id] = NULL;
	if (l->n_free == l->cap_free) {
		uint32_t cap = l->cap_free ? 2 * l->cap_free : 64;
		uint32_t *p = realloc(l->free_ids, cap * sizeof(*p));
		if (!p)
			return; /* the entry is not reused: a few bytes */
		l->free_ids = p;
		l->cap_free = cap;
	}
	l->free_ids[l->n_free++] = id;
}

/* An id for a new record; UINT32_MAX out of memory. */
static uint32_t new_id(struct live_allocs *l)
{
	if (l->n_free)
		return l->free_ids[--l->n_free];
	if (l->n_recs == l->cap_recs) {
		uint32_t cap = l->cap_recs ? 2 * l->cap_recs : 256;
		struct live_alloc_rec **p = realloc(l->recs, cap * sizeof(*p));
		if (!p)
			return UINT32_MAX;
		l->recs = p;
		l->cap_recs = cap;
	}
	l->recs[l->n_recs] = NULL;
	return l->n_recs++;
}

/* One CUDA event of an evicted chunk; ustack: the USTACK record before it
 * (NULL when none), which names the event's stack when the ids agree. */
static void apply(struct live_allocs *l, const uint8_t *rec, uint32_t size,
		  const uint8_t *ustack, uint32_t ustack_len)
{
	struct fr_ev_cuda ev;
	if (size < sizeof(ev))
		return;
	memcpy(&ev, rec, sizeof(ev));
	enum mem_class cls = mem_func_class(ev.func);
	if (cls == MEM_NONE)
		return;
	enum mem_kind kind = mem_class_kind(cls);
	uint64_t owner = mem_ledger_owner(0, kind, ev.c.pid);
	if (!mem_class_is_alloc(cls)) {
		if (ev.result != 0 || !ev.ptr || !l->table.cap)
			return;
		struct mem_live_slot *s = mem_live_find(&l->table, owner, ev.ptr);
		if (!s->used)
			return;
		drop_rec(l, s->stack);
		mem_live_delete(&l->table, s);
		return;
	}
	if (ev.result != 0 || !mem_alloc_holds(ev.ptr, ev.bytes))
		return;
	if (ustack) {
		struct fr_rec_ustack u;
		memcpy(&u, ustack, sizeof(u));
		if (!FR_STACK_ID_IS_RAW(ev.stack_id) || u.stack_id != ev.stack_id)
			ustack = NULL;
	}
	uint32_t extra = ustack ? ustack_len : 0;
	struct live_alloc_rec *r = malloc(sizeof(*r) + extra + size);
	if (!r || ((l->table.count + 1) * 2 > l->table.cap && mem_live_grow(&l->table))) {
		free(r);
		l->lost++;
		return;
	}
	r->ts_ns = ev.c.ts_ns;
	r->bytes = ev.bytes;
	r->len = extra + size;
	r->n_records = ustack ? 2 : 1;
	r->host = kind == MEM_KIND_HOST;
	if (ustack)
		memcpy(r->data, ustack, extra);
	memcpy(r->data + extra, rec, size);
	struct mem_live_slot *s = mem_live_find(&l->table, owner, ev.ptr);
	if (s->used) {
		/* the outer call of a runtime-around-driver pair (or a free that
		 * was not recorded): the later record stands for the address, in
		 * the same entry */
		struct live_alloc_rec *old = l->recs[s->stack];
		if (old) {
			l->bytes_held -= sizeof(*old) + old->len;
			free(old);
		}
	} else {
		uint32_t id = new_id(l);
		if (id == UINT32_MAX) {
			free(r);
			l->lost++;
			return;
		}
		s->used = MEM_LIVE_USED;
		s->owner = owner;
		s->ptr = ev.ptr;
		s->stack = id;
		l->table.count++;
	}
	s->bytes = ev.bytes;
	s->alloc_ns = ev.c.ts_ns;
	l->recs[s->stack] = r;
	l->bytes_held += sizeof(*r) + r->len;
}

void live_allocs_evicted(void *ctx, const uint8_t *raw, size_t len)
{
	struct live_allocs *l = ctx;
	const uint8_t *ustack = l->held_len ? l->held : NULL;
	uint32_t ustack_len = (uint32_t)l->held_len;
	int last_was_ustack = 0;
	for (size_t off = 0; off + sizeof(struct fr_rec_hdr) <= len;) {
		struct fr_rec_hdr h;
		memcpy(&h, raw + off, sizeof(h));
		if (h.size < sizeof(h) || h.size % 8 || h.size > len - off)
			break;
		last_was_ustack = h.type == FR_REC_USTACK && h.size >= sizeof(struct fr_rec_ustack);
		if (last_was_ustack) {
			ustack = raw + off;
			ustack_len = h.size;
		} else if (h.type == FR_EV_CUDA) {
			apply(l, raw + off, h.size, ustack, ustack_len);
			ustack = NULL;
		} else if (h.type < 0x100) {
			ustack = NULL; /* a stack names the event right after it */
		}
		off += h.size;
	}
	l->held_len = 0;
	if (last_was_ustack && ustack && grow_bytes(&l->held, &l->held_cap, ustack_len) == 0) {
		memmove(l->held, ustack, ustack_len);
		l->held_len = ustack_len;
	}
}

static int by_time(const void *a, const void *b)
{
	const struct live_alloc_rec *x = *(struct live_alloc_rec *const *)a;
	const struct live_alloc_rec *y = *(struct live_alloc_rec *const *)b;
	return x->ts_ns < y->ts_ns ? -1 : x->ts_ns > y->ts_ns;
}

int live_allocs_carry(void *ctx, struct frec_carried *out)
{
	struct live_allocs *l = ctx;
	memset(out, 0, sizeof(*out));
	if (!l->table.count)
		return 0;
	struct live_alloc_rec **list = malloc(l->table.count * sizeof(*list));
	if (!list)
		return -1;
	size_t n = 0, bytes = 0;
	for (size_t i = 0; i < l->table.cap && n < l->table.count; i++) {
		const struct mem_live_slot *s = &l->table.slots[i];
		if (s->used && l->recs[s->stack]) {
			list[n++] = l->recs[s->stack];
			bytes += l->recs[s->stack]->len;
		}
	}
	qsort(list, n, sizeof(*list), by_time);
	if (grow_bytes(&l->out, &l->out_cap, bytes ? bytes : 1)) {
		free(list);
		return -1;
	}
	size_t at = 0;
	for (size_t i = 0; i < n; i++) {
		memcpy(l->out + at, list[i]->data, list[i]->len);
		at += list[i]->len;
		out->count += list[i]->n_records;
		out->allocs++;
		if (!list[i]->host)
			out->alloc_bytes += list[i]->bytes;
	}
	out->raw = l->out;
	out->len = at;
	out->first_ts_ns = n ? list[0]->ts_ns : 0;
	free(list);
	return 0;
}

void live_allocs_free(struct live_allocs *l)
{
	for (uint32_t i = 0; i < l->n_recs; i++)
		free(l->recs[i]);
	free(l->recs);
	free(l->free_ids);
	free(l->table.slots);
	free(l->held);
	free(l->out);
	memset(l, 0, sizeof(*l));
}
