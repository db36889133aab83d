/* The asynchronous hang: real NCCL returns from a collective once it is
 * enqueued, so a collective that never completes blocks no call of its own.
 * Its rank either blocks in a synchronize (found in flight: inflight.h) or,
 * like PyTorch's watchdog, polls cudaEventQuery on the collective's end
 * event and is told "not ready" (600) again and again.  This watches the
 * second case from the events the drain commits: per (process, CUDA event
 * handle), the first not-ready query since the event was last recorded.
 * An event that a query or a synchronize saw complete, or that is recorded
 * again, starts over.
 *
 * Pure logic, no I/O: hang_watch_event runs on the drain thread for every
 * event it commits (only cuda events and process exits/execs matter; the
 * others are ignored at the cost of a compare), hang_watch_stuck_since on
 * any other thread (a small mutex; queries are the only contended path).
 * Memory is fixed at init: the table never grows, and events it has no
 * room for are counted in `untracked`.
 *
 * Not for calls that block (inflight.h) nor for naming the collective (the
 * analyzer does that from the trace, models/nccl_hang.c). */
#ifndef FLIGHTREC_HANG_WATCH_H
#define FLIGHTREC_HANG_WATCH_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "events.h"

/* cudaErrorNotReady and CUDA_ERROR_NOT_READY */
#define HANG_WATCH_NOT_READY 600

struct hang_watch_entry {
	uint32_t pid;             /* 0: free slot */
	uint32_t tid;             /* the thread of the latest not-ready query */
	uint64_t event;           /* cudaEvent_t / CUevent */
	uint64_t stream;          /* of the latest record, 0 when none was seen */
	uint64_t recorded_ns;     /* latest record (entry time), 0 when none was seen */
	uint64_t not_ready_since; /* first not-ready query since that record; 0: none,
				     or the event was seen complete */
	uint64_t last_query_ns;   /* latest not-ready query */
};

struct hang_watch {
	pthread_mutex_t lock;
	struct hang_watch_entry *slots; /* open addressing, linear probing */
	size_t cap;               /* a power of two */
	size_t used;
	uint64_t untracked;       /* events not followed: the table was full */
};

/* What hang_watch_stuck_since found. */
struct hang_watch_stuck {
	uint32_t pid, tid;
	uint64_t event, stream;
	uint64_t since_ns;        /* first not-ready query since the record */
	uint64_t recorded_ns;     /* 0: the record was not seen */
	uint64_t last_query_ns;
};

/* Room for max_events (process, event) pairs.  0, or -1 out of memory. */
int hang_watch_init(struct hang_watch *hw, size_t max_events);
void hang_watch_destroy(struct hang_watch *hw);

/* One event as the drain commits it (a file record or a ring record: only
 * the fixed part is read, h.size says how much there is). */
void hang_watch_event(struct hang_watch *hw, const struct fr_ev_common *ev);

/* The oldest time from which an event has been queried not ready without
 * being seen complete or recorded again, among events queried not ready
 * within polled_within_ns before now_ns (0: no such limit; an event nobody
 * polls any more, say destroyed unfinished, is then no watchdog waiting).
 * 0 when none.  who, when not NULL, is filled with that event's state. */
uint64_t hang_watch_stuck_since(struct hang_watch *hw, uint64_t now_ns,
				uint64_t polled_within_ns, struct hang_watch_stuck *who);

#endif
