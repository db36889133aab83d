/* Stack interning for the drain thread: an open-addressing hash over stack
 * contents plus an append-only arena of ips.  Cost per lookup is one hash of
 * the ips and (on a hit) one memcmp; nothing is freed until the end. */
#include "symbols/stack_table.h"

#include <stdlib.h>
#include <string.h>

struct stack_rec {
	uint64_t hash;
	size_t ips_off; /* into arena, in u64 units */
	uint32_t pid;
	uint16_t n_kernel;
	uint16_t n_user;
};

struct stack_table {
	struct stack_rec *recs; /* index id-1 */
	size_t n_recs, cap_recs;
	uint32_t *slots;        /* 0 empty, else id */
	size_t n_slots;         /* power of two */
	uint64_t *arena;
	size_t arena_len, arena_cap;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static uint64_t stack_hash(uint32_t pid, const uint64_t *k, uint16_t nk,
			   const uint64_t *u, uint16_t nu)
{
	uint64_t h = mix(0xcbf29ce484222325ull, ((uint64_t)pid << 32) | ((uint32_t)nk << 16) | nu);
	for (uint16_t i = 0; i < nk; i++)
		h = mix(h, k[i]);
	for (uint16_t i = 0; i < nu; i++)
		h = mix(h, u[i]);
	return h ? h : 1;
}

struct stack_table *stack_table_new(void)
{
	struct stack_table *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->n_slots = 4096;
	t->slots = calloc(t->n_slots, sizeof(*t->slots));
	if (!t->slots) {
		free(t);
		return NULL;
	}
	return t;
}

void stack_table_free(struct stack_table *t)
{
	if (!t)
		return;
	free(t->recs);
	free(t->slots);
	free(t->arena);
	free(t);
}

static bool same_stack(const struct stack_table *t, const struct stack_rec *r,
		       uint32_t pid, const uint64_t *k, uint16_t nk,
		       const uint64_t *u, uint16_t nu)
{
	const uint64_t *ips = t->arena + r->ips_off;
	return r->pid == pid && r->n_kernel == nk && r->n_user == nu &&
	       memcmp(ips, k, nk * sizeof(uint64_t)) == 0 &&
	       memcmp(ips + nk, u, nu * sizeof(uint64_t)) == 0;
}

static int grow_slots(struct stack_table *t)
{
	size_t n = t->n_slots * 2;
	uint32_t *slots = calloc(n, sizeof(*slots));
	if (!slots)
		return -1;
	for (size_t i = 0; i < t->n_recs; i++) {
		size_t s = t->recs[i].hash & (n - 1);
		while (slots[s])
			s = (s + 1) & (n - 1);
		slots[s] = (uint32_t)(i + 1);
	}
	free(t->slots);
	t->slots = slots;
	t->n_slots = n;
	return 0;
}

uint32_t stack_table_intern(struct stack_table *t, uint32_t pid,
			    const uint64_t *k, uint16_t nk,
			    const uint64_t *u, uint16_t nu, bool *is_new)
{
	uint64_t h = stack_hash(pid, k, nk, u, nu);
	size_t s = h & (t->n_slots - 1);

	*is_new = false;
	while (t->slots[s]) {
		struct stack_rec *r = &t->recs[t->slots[s] - 1];
		if (r->hash == h && same_stack(t, r, pid, k, nk, u, nu))
			return t->slots[s];
		s = (s + 1) & (t->n_slots - 1);
	}
	if (t->n_recs == t->cap_recs) {
		size_t cap = t->cap_recs ? t->cap_recs * 2 : 1024;
		struct stack_rec *recs = realloc(t->recs, cap * sizeof(*recs));
		if (!recs)
			return 0;
		t->recs = recs;
		t->cap_recs = cap;
	}
	if (t->arena_len + nk + nu > t->arena_cap) {
		size_t cap = t->arena_cap ? t->arena_cap : 16384;
		while (cap < t->arena_len + nk + nu)
			cap *= 2;
		uint64_t *arena = realloc(t->arena, cap * sizeof(*arena));
		if (!arena)
			return 0;
		t->arena = arena;
		t->arena_cap = cap;
	}
	struct stack_rec *r = &t->recs[t->n_recs++];
	r->hash = h;
	r->pid = pid;
	r->n_kernel = nk;
	r->n_user = nu;
	r->ips_off = t->arena_len;
	memcpy(t->arena + t->arena_len, k, nk * sizeof(uint64_t));
	memcpy(t->arena + t->arena_len + nk, u, nu * sizeof(uint64_t));
	t->arena_len += nk + nu;
	t->slots[s] = (uint32_t)t->n_recs;
	*is_new = true;
	if (t->n_recs * 2 > t->n_slots)
		grow_slots(t); /* on failure the table just gets denser */
	return (uint32_t)t->n_recs;
}

size_t stack_table_count(const struct stack_table *t)
{
	return t->n_recs;
}

bool stack_table_get(const struct stack_table *t, uint32_t id, struct stack_entry *out)
{
	if (id == 0 || id > t->n_recs)
		return false;
	const struct stack_rec *r = &t->recs[id - 1];
	out->pid = r->pid;
	out->n_kernel = r->n_kernel;
	out->n_user = r->n_user;
	out->ips = t->arena + r->ips_off;
	return true;
}
