/* The live allocations of the GPU memory ledger: (owner, address) ->
 * bytes, stack and who allocated when; the analyzer's memory model and the
 * recorder's ring (the allocations live at its window's start) both keep
 * one.  The owner key is mem_ledger_owner(); the table only compares it.
 * Load stays at or under 1/2: the caller grows the table first
 * (mem_live_grow).  Not for counting (the analyzer's model_mem.c does). */
#ifndef FLIGHTREC_MEM_LIVE_H
#define FLIGHTREC_MEM_LIVE_H

#include <stddef.h>
#include <stdint.h>

#define MEM_LIVE_USED 1 /* flags bit of a slot in use; the others are the caller's */

struct mem_live_slot {
	uint64_t owner;
	uint64_t ptr;
	uint64_t bytes;
	uint32_t stack;    /* the caller's stack index */
	uint32_t used;     /* MEM_LIVE_USED | the caller's flags; 0: empty */
	uint64_t alloc_ns; /* when it was allocated, and by which call and thread */
	uint32_t tid;
	uint16_t func;
	uint16_t _pad;
};

struct mem_live_table {
	struct mem_live_slot *slots;
	size_t cap, count, max_count;
};

/* The slot holding (owner, ptr), or the empty slot where it would go (the
 * table must have room: cap > count). */
struct mem_live_slot *mem_live_find(struct mem_live_table *t, uint64_t owner, uint64_t ptr);
/* Doubles the capacity (1024 at first); -1 when memory runs out. */
int mem_live_grow(struct mem_live_table *t);
/* Empties slot s (count - 1), moving later slots of its probe chain back. */
void mem_live_delete(struct mem_live_table *t, struct mem_live_slot *s);

#endif
