/* The live-allocation table of the GPU memory ledger (see mem_live.h):
 * open addressing with linear probing and backward-shift deletion, so a
 * lookup never walks a tombstone and the table's size follows the live
 * allocations, not the events. */
#include "mem_live.h"

#include <stdbool.h>
#include <stdlib.h>

static inline size_t live_home(uint64_t owner, uint64_t ptr, size_t mask)
{
	uint64_t x = ptr ^ (owner * 0x9e3779b97f4a7c15ull);
	x ^= x >> 32;
	x *= 0xd6e8feb86659fd93ull;
	x ^= x >> 29;
	return (size_t)x & mask;
}

struct mem_live_slot *mem_live_find(struct mem_live_table *t, uint64_t owner, uint64_t ptr)
{
	size_t mask = t->cap - 1;
	for (size_t i = live_home(owner, ptr, mask);; i = (i + 1) & mask) {
		struct mem_live_slot *s = &t->slots[i];
		if (!s->used || (s->ptr == ptr && s->owner == owner))
			return s;
	}
}

int mem_live_grow(struct mem_live_table *t)
{
	size_t cap = t->cap ? t->cap * 2 : 1024;
	if (cap > SIZE_MAX / sizeof(struct mem_live_slot))
		return -1;
	struct mem_live_slot *slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -1;
	struct mem_live_table old = *t;
	t->slots = slots;
	t->cap = cap;
	for (size_t i = 0; i < old.cap; i++)
		if (old.slots[i].used)
			*mem_live_find(t, old.slots[i].owner, old.slots[i].ptr) = old.slots[i];
	free(old.slots);
	return 0;
}

void mem_live_delete(struct mem_live_table *t, struct mem_live_slot *s)
{
	size_t mask = t->cap - 1, i = (size_t)(s - t->slots), j = i;
	for (;;) {
		j = (j + 1) & mask;
		struct mem_live_slot *n = &t->slots[j];
		if (!n->used)
			break;
		size_t k = live_home(n->owner, n->ptr, mask);
		/* Move n back to the hole at i unless its home lies in (i, j]. */
		bool stays = i <= j ? (k > i && k <= j) : (k > i || k <= j);
		if (!stays) {
			t->slots[i] = *n;
			i = j;
		}
	}
	t->slots[i].used = 0;
	t->count--;
}

