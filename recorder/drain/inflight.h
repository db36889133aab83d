/* Calls entered and not returned: the NCCL collectives, send/recv, group
 * ends and communicator inits, and the CUDA synchronizes (the FR_FN_SYNC
 * class: stream, event and device synchronize) that the traced processes
 * are inside right now.  Such a call writes no event (events are written at
 * return), so a hung collective or a synchronize waiting for one is found
 * here, in the BPF per-call entry state (bpf/call_state.h) of the nccl and
 * cuda families, and written as an FR_REC_INFLIGHT record (format/SPEC.md)
 * at the end of a recording or in a snapshot.
 *
 * Not for deciding that something hangs (the analyzer's stragglers, the
 * ring mode's trigger with inflight_oldest_blocking and hang_watch.h) nor
 * for the asynchronous case where nothing blocks (a watchdog polling
 * cudaEventQuery: hang_watch.h). */
#ifndef FLIGHTREC_INFLIGHT_H
#define FLIGHTREC_INFLIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "events.h"

struct bpf_probes;
struct frec_builder;

/* Most calls one FR_REC_INFLIGHT record carries (64 KiB of calls). */
#define INFLIGHT_MAX 1024

/* Reads the entry state of the loaded nccl and cuda families and fills
 * out[0..max) with the calls of threads still alive that are inside a call
 * of the kinds above, oldest entry first.  Returns how many (0 when
 * neither family is loaded), or -errno when a map cannot be read.  Best
 * effort while the job runs: a call returning during the scan may or may
 * not be listed (the analyzer drops a listed call whose return event is in
 * the trace).  Any thread may call it; it only reads the maps. */
int inflight_scan(struct bpf_probes *p, struct fr_inflight_call *out, size_t max);

/* Writes one FR_REC_INFLIGHT record of c[0..n) (at most INFLIGHT_MAX are
 * kept, the oldest), seen_mono_ns being when the scan ran.  Write it with
 * n == 0 too: the analyzer learns that this node's ranks were in no call
 * at that time.  The builder must belong to the calling thread.  0, or -1
 * when the builder cannot allocate. */
int inflight_write(struct frec_builder *b, const struct fr_inflight_call *c, size_t n,
		   uint64_t seen_mono_ns);

/* Entry time of the oldest call in c[0..n) that blocks its thread until
 * other ranks or the device catch up: an NCCL collective, send/recv, group
 * end or communicator init, or a CUDA synchronize.  0 when none.  For a
 * hang trigger: now - this > --hang-timeout. */
uint64_t inflight_oldest_blocking(const struct fr_inflight_call *c, size_t n);

#endif
