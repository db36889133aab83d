/* The hang trigger of ring mode (see hang_poll.h). */
#include "ring/hang_poll.h"
#include "clock.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fr_family.h"
#include "frec_records.h"

/* Enough (process, event) pairs for every rank's watchdog on a node. */
#define WATCHED_EVENTS 4096
#define TICK_NS 250000000ull

int hang_poll_init(struct hang_poll *h, struct bpf_probes *probes, uint64_t timeout_ns)
{
	memset(h, 0, sizeof(*h));
	h->probes = probes;
	h->timeout_ns = timeout_ns;
	h->calls = calloc(INFLIGHT_MAX, sizeof(*h->calls));
	if (!h->calls || hang_watch_init(&h->watch, WATCHED_EVENTS)) {
		free(h->calls);
		h->calls = NULL;
		return -1;
	}
	return 0;
}

void hang_poll_destroy(struct hang_poll *h)
{
	if (!h->calls)
		return;
	hang_watch_destroy(&h->watch);
	free(h->calls);
	h->calls = NULL;
}

static void blocking(struct hang_poll *h, struct triggers *t, uint64_t now)
{
	int n = inflight_scan(h->probes, h->calls, INFLIGHT_MAX);
	if (n <= 0)
		return;
	uint64_t oldest = inflight_oldest_blocking(h->calls, (size_t)n);
	if (!oldest || now < oldest || now - oldest < h->timeout_ns || oldest == h->fired_blocking_ns)
		return;
	h->fired_blocking_ns = oldest;
	const struct fr_inflight_call *c = NULL;
	for (int i = 0; i < n && !c; i++)
		if (h->calls[i].entry_ns == oldest)
			c = &h->calls[i];
	struct trigger_hit hit = { .kind = FR_TRIGGER_HANG, .at_ns = now, .due_ns = now };
	if (c) {
		const char *fn = fr_func_name(c->probe, c->func);
		hit.pid = c->pid;
		hit.tid = c->tid;
		if (c->probe == FR_PROBE_NCCL)
			snprintf(hit.detail, sizeof(hit.detail), "%s (communicator 0x%" PRIx64 ", call "
				 "%u) in pid %u, thread %u has not returned for %.1f s",
				 fn ? fn : "an NCCL call", (uint64_t)c->comm, c->seq, c->pid, c->tid,
				 (now - oldest) / 1e9);
		else
			snprintf(hit.detail, sizeof(hit.detail), "%s in pid %u, thread %u has not "
				 "returned for %.1f s", fn ? fn : "a synchronize", c->pid, c->tid,
				 (now - oldest) / 1e9);
	}
	triggers_raise(t, &hit);
}

/* A watchdog polling an event that never completes: it polled within the
 * last timeout (an event nobody asks about any more waits for no one). */
static void polled(struct hang_poll *h, struct triggers *t, uint64_t now)
{
	struct hang_watch_stuck who;
	uint64_t since = hang_watch_stuck_since(&h->watch, now, h->timeout_ns, &who);
	if (!since || now < since || now - since < h->timeout_ns || since == h->fired_async_ns)
		return;
	h->fired_async_ns = since;
	struct trigger_hit hit = { .kind = FR_TRIGGER_HANG, .at_ns = now, .due_ns = now,
				   .pid = who.pid, .tid = who.tid };
	snprintf(hit.detail, sizeof(hit.detail), "CUDA event 0x%" PRIx64 " (stream 0x%" PRIx64
		 ") polled not ready for %.1f s in pid %u, thread %u (a watchdog waiting for "
		 "work that never completes)", (uint64_t)who.event, (uint64_t)who.stream,
		 (now - since) / 1e9, who.pid, who.tid);
	triggers_raise(t, &hit);
}

void hang_poll_tick(struct hang_poll *h, struct triggers *t, uint64_t now_ns)
{
	if (!h->calls || now_ns - h->last_tick_ns < TICK_NS)
		return;
	h->last_tick_ns = now_ns;
	blocking(h, t, now_ns);
	polled(h, t, now_ns);
}

size_t hang_poll_inflight_meta(void *ctx, uint8_t **out, uint32_t *count)
{
	struct hang_poll *h = ctx;
	*out = NULL;
	*count = 0;
	if (!h || !h->calls)
		return 0;
	uint64_t seen = mono_ns();
	int n = inflight_scan(h->probes, h->calls, INFLIGHT_MAX);
	if (n < 0)
		n = 0;
	size_t len = sizeof(struct fr_rec_inflight) + (size_t)n * sizeof(struct fr_inflight_call);
	uint8_t *buf = calloc(1, len);
	if (!buf)
		return 0;
	struct fr_rec_inflight r = { .h = { (uint32_t)len, FR_REC_INFLIGHT, 0 }, .seen_ns = seen,
				     .n = (uint32_t)n };
	memcpy(buf, &r, sizeof(r));
	if (n)
		memcpy(buf + sizeof(r), h->calls, (size_t)n * sizeof(*h->calls));
	*out = buf;
	*count = 1;
	return len;
}
