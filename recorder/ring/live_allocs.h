/* The allocations live at the start of the flight-recorder ring's window
 * (flightrec record --ring): as event chunks leave the ring, their CUDA
 * allocations and frees are applied here, with the ledger's own rules and
 * table (ledger/), so a snapshot can carry the records of every allocation
 * still live — its event and, in dwarf mode, its stack — and `memory` on
 * the snapshot counts exactly what was in use.  Runs on the writer thread
 * only (the ring's evicted and carry callbacks): no lock. */
#ifndef FLIGHTREC_LIVE_ALLOCS_H
#define FLIGHTREC_LIVE_ALLOCS_H

#include <stddef.h>
#include <stdint.h>

#include "frec_writer.h"
#include "mem_live.h"

struct live_alloc_rec; /* one allocation's records (live_allocs.c) */

struct live_allocs {
	struct mem_live_table table;
	struct live_alloc_rec **recs; /* by the slot's stack field */
	uint32_t n_recs, cap_recs;
	uint32_t *free_ids;           /* recs[] entries to reuse */
	uint32_t n_free, cap_free;
	/* a USTACK that ended the previous evicted chunk (its event opens
	 * the next one) */
	uint8_t *held;
	size_t held_len, held_cap;
	uint8_t *out;                 /* what carry returned */
	size_t out_cap;
	uint64_t bytes_held;          /* record bytes kept, for the memory line */
	uint64_t lost;                /* allocations not kept: out of memory */
};

/* frec_ring_opts.evicted: applies one evicted chunk's raw records. */
void live_allocs_evicted(void *ctx, const uint8_t *raw, size_t len);
/* frec_snapshot.carry: every live allocation's records, oldest first. */
int live_allocs_carry(void *ctx, struct frec_carried *out);
void live_allocs_free(struct live_allocs *l);

#endif
