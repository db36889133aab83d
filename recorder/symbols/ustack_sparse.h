/* --stack dwarf: the part of a raw user stack the analyzer will use.  The
 * recorder unwinds each copy as the analyzer will (the analyzer's own
 * unwinder, unwind/unwind.c, over the unwind images written to
 * the trace and the process's mappings seen so far) and keeps what that
 * unwind reads: the bytes of the copy that its CFI steps load (return
 * addresses, saved registers), the copy cut after the last of them, and
 * the registers it used; every other byte and register is written as zero
 * (FR_USTACK_SPARSE, format/SPEC.md).  The rest of a copy - locals and
 * spilled values that change from sample to sample - is most of what a
 * raw stack costs after compression, and no reader looks at it.
 *
 * An unwind that is not complete (struct uw_use: it neither reached the
 * outermost frame nor ran off the end of the copy; a file whose image is
 * not known yet, a pc without CFI) leaves the copy whole: the analyzer then
 * unwinds it as it always did.  Python frames and kernel ips are not
 * touched.  A process's unwinder is made from the mappings seen so far and
 * made again when the process has a new mapping, or when a copy does not
 * unwind and new images have come.  A mapping the tracking thread has not
 * seen yet when a copy is drained is not known: a copy taken in a library
 * mapped at an unmapped one's address, drained before its mapping is seen,
 * could be planned with the old library's tables (the analyzer takes the
 * later mapping).
 *
 * Threads: images are added by the tracking thread; stacks are planned on
 * the drain thread, the one caller of ustack_sparse_plan, and only while it
 * keeps up: a drain that is behind writes copies whole without asking
 * (drain/drain.h). */
#ifndef FLIGHTREC_USTACK_SPARSE_H
#define FLIGHTREC_USTACK_SPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols/dso_table.h"
#include "events.h"

struct ustack_sparse;

struct ustack_sparse_stats {
	uint64_t sparse;       /* copies made sparse */
	uint64_t whole;        /* copies left whole (unwind did not finish) */
	uint64_t bytes_in;     /* stack bytes of the copies planned */
	uint64_t bytes_kept;   /* stack bytes written for them */
	uint64_t rebuilds;     /* a process's unwinder made again (new mappings) */
};

/* Reads mappings from dsos (under its lock).  NULL when out of memory. */
struct ustack_sparse *ustack_sparse_new(struct dso_table *dsos);
void ustack_sparse_free(struct ustack_sparse *s);

/* The reduced unwind image of dso_id (the bytes its FR_REC_UNWIND
 * carries, malloc'd), owned by s from now on, even on failure (-1). */
int ustack_sparse_add_image(struct ustack_sparse *s, uint32_t dso_id, uint8_t *image,
			    size_t len);

/* Plans one copy: true when it can be made sparse, with *keep_len the bytes
 * to write (the copy cut after the last byte read), *keep (keep_len bytes,
 * valid until the next call) 1 for each byte to write as copied and 0 for
 * each to zero, and *regs_used bit r set for each register to keep.  *top:
 * when the unwind reached the frame its CFI calls outermost inside the copy, the
 * address past the last byte it read (and a margin): every later stack of
 * the thread unwinds from the bytes below it (fr_ustack_tops,
 * bpf/ustack.bpf.h); else 0.  *ran_off: the unwind stopped for a byte
 * past the copy's end (a copy cut at a top that was wrong does). */
bool ustack_sparse_plan(struct ustack_sparse *s, uint32_t pid, uint32_t tid,
			const uint64_t regs[FR_USTACK_REGS], const uint8_t *stack,
			uint32_t stack_len, uint32_t *keep_len, const uint8_t **keep,
			uint32_t *regs_used, uint64_t *top, bool *ran_off);

struct ustack_sparse_stats ustack_sparse_stats(const struct ustack_sparse *s);

#endif
