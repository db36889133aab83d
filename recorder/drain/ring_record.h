/* One BPF ring record into trace-file records: the event's fixed part, and
 * its stack — frame-pointer ips interned into the stack table (an
 * FR_REC_STACK the first time), or the raw user stack of --stack dwarf
 * written as an FR_REC_USTACK, sparse when the sink has a planner and the
 * drain is not behind (drain.h) — with the event's stack_id naming it.  An
 * event and its stack always travel in one ring record, so nothing is
 * paired here.  Every record that cannot be turned into an event is counted
 * with its probe and reason.  Each type's size, family and whether it
 * carries a stack come from the family descriptors (fr_family.h).  No
 * libbpf: the unit tests feed it records. */
#ifndef FLIGHTREC_RING_RECORD_H
#define FLIGHTREC_RING_RECORD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events.h"
#include "frec_writer.h"
#include "symbols/stack_table.h"
#include "symbols/ustack_sparse.h"

struct ring_sink {
	struct frec_builder *builder;
	struct stack_table *stacks;
	/* told about each new frame-pointer stack (its symbols are wanted) */
	void (*new_stack)(void *ctx, uint32_t pid, const uint64_t *kernel_ips, uint16_t n_kernel,
			  const uint64_t *user_ips, uint16_t n_user);
	/* told about the kernel ips of each raw stack (CPU samples), whose
	 * symbols are wanted as a frame-pointer stack's are */
	void (*kernel_ips)(void *ctx, const uint64_t *ips, uint16_t n);
	/* told about each Python code object a raw stack names */
	void (*py_code)(void *ctx, uint32_t pid, uint64_t code, uint16_t fingerprint);
	void *ctx;
	/* dwarf mode: raw stacks are written sparse where it can plan them
	 * (ustack_sparse.h); NULL: every copy whole */
	struct ustack_sparse *sparse;
	/* asked before a raw stack is planned: true when the drain is behind
	 * (its ring filling), and the copy is then written whole, unplanned,
	 * at the whole-copy path's cost; NULL: never behind */
	bool (*behind)(void *ctx);
	/* raw stacks written whole because the drain was behind */
	atomic_uint_fast64_t whole_behind;
	/* told, for each planned copy that reached its thread's outermost
	 * frame, the top it found, and of each copy cut at its thread's top
	 * whose unwind needed bytes past it (top 0, cut_short);
	 * drain/stack_tops.h decides what the kernel is told.  NULL: copies
	 * are never bounded (bpf/ustack.bpf.h: fr_ustack_tops) */
	void (*stack_top)(void *ctx, uint32_t pid, uint32_t tid, uint64_t top, int cut_short);
	/* raw stacks the kernel cut at their thread's top (FR_USTACK_BOUNDED),
	 * and of them the ones whose unwind then needed bytes past the cut */
	atomic_uint_fast64_t bounded, bounded_short;
	uint32_t ustacks; /* FR_REC_USTACK records written (their ids count up) */
	atomic_uint_fast64_t events[FR_PROBE_MAX]; /* delivered, per probe */
	/* losses here, per probe and reason (FR_DROP_MALFORMED, FR_DROP_NO_MEMORY) */
	struct ring_loss {
		atomic_uint_fast64_t count, first_ns, last_ns;
	} lost[FR_PROBE_MAX][FR_DROP_REASON_MAX];
};

/* The probe family an event type belongs to (FR_PROBE_PROC for the rest). */
int ring_probe_of(uint16_t type);
/* Size of the fixed part of a kernel event type; 0 when not one. */
uint32_t ring_fixed_size(uint16_t type);

/* Writes the event of one ring record (and its stack) to the sink's
 * builder.  Returns the
 * event as written, valid until the next builder call, or NULL when the
 * record was dropped (counted). */
const struct fr_ev_common *ring_sink_record(struct ring_sink *s, const void *data, size_t size);

#endif
