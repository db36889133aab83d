/* The hang trigger of ring mode (--trigger nccl-error, --hang-timeout):
 * the main thread looks every quarter second for a call that has blocked
 * its thread longer than the timeout — an NCCL collective that never
 * returns, a synchronize waiting for one (inflight.h) — and for the
 * asynchronous case, where a watchdog polls cudaEventQuery on an event that
 * stays "not ready" (hang_watch.h, fed by the drain through triggers.c).
 * One trigger per stuck call: the same call still stuck a second later is
 * not a second hang.  It also gives snapshots their FR_REC_INFLIGHT record,
 * the calls in flight when the snapshot was taken. */
#ifndef FLIGHTREC_HANG_POLL_H
#define FLIGHTREC_HANG_POLL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ring/hang_watch.h"
#include "drain/inflight.h"
#include "ring/triggers.h"

struct bpf_probes;

struct hang_poll {
	struct bpf_probes *probes;
	struct hang_watch watch;      /* fed on the drain thread */
	uint64_t timeout_ns;
	uint64_t last_tick_ns;
	uint64_t fired_blocking_ns;   /* entry time of the call last reported */
	uint64_t fired_async_ns;      /* not-ready-since of the event last reported */
	struct fr_inflight_call *calls; /* INFLIGHT_MAX, scratch of the main thread */
};

/* 0, or -1 out of memory. */
int hang_poll_init(struct hang_poll *h, struct bpf_probes *probes, uint64_t timeout_ns);
void hang_poll_destroy(struct hang_poll *h);

/* Main thread, often: raises FR_TRIGGER_HANG on t when a call is stuck. */
void hang_poll_tick(struct hang_poll *h, struct triggers *t, uint64_t now_ns);

/* struct snapshots.extra_meta: one FR_REC_INFLIGHT record of the calls in
 * flight now (written with none too: this node was waiting for nothing).
 * *out is malloc'd, the caller frees it; returns its length. */
size_t hang_poll_inflight_meta(void *ctx, uint8_t **out, uint32_t *count);

#endif
