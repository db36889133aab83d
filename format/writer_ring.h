/* The flight-recorder ring's own state, shared by writer_ring.c (keeping
 * chunks, evicting, snapshots) and writer_ring_meta.c (retiring the
 * metadata of processes whose events have all left the ring).  Nothing
 * outside the writer sees it. */
#ifndef FLIGHTREC_WRITER_RING_H
#define FLIGHTREC_WRITER_RING_H

#include "writer_impl.h"

/* One chunk as it would be written: compressed payload and header fields. */
struct ring_chunk {
	struct ring_chunk *next;
	uint16_t type;
	uint8_t codec;
	uint32_t count;
	uint32_t processes;  /* FR_REC_PROCESS records in it (META) */
	size_t raw_len, stored_len;
	uint64_t first_ts, last_ts;
	uint64_t seq;        /* order of arrival: a retirement names its place */
	uint8_t data[];
};

/* A process that exited (frec_writer_ring_retire): its metadata records in
 * chunks that arrived before seq are its, and go once its exit has left
 * the ring. */
struct ring_retire {
	uint32_t pid;
	uint64_t exit_ns;
	uint64_t seq;
};

struct wr_ring {
	size_t cap;
	size_t max_exited; /* frec_ring_opts.max_exited, the default applied */
	uint64_t hold_since; /* under the writer's mu: frec_writer_ring_hold */
	frec_evict_fn evicted;
	void *ctx;
	struct ring_chunk *ev_head, *ev_tail, *meta_head, *meta_tail;
	/* Under the writer's mu (frec_writer_ring_stats reads them): */
	struct frec_ring_stats st;
	/* Metadata records kept from evicted chunks, not yet a META chunk. */
	uint8_t *rescue;
	size_t rescue_len, rescue_cap;
	uint32_t rescue_count;
	/* A USTACK that ended the latest evicted chunk (its event opens the
	 * oldest chunk held). */
	uint8_t *held;
	size_t held_len, held_cap;
	ZSTD_DCtx *dc;
	uint8_t *raw;
	size_t raw_cap;
	/* Writer thread: */
	uint64_t meta_seq;          /* the next chunk's seq */
	struct ring_retire *retire; /* in seq order */
	size_t n_retire, cap_retire;
	uint64_t compacted_bytes;   /* META bytes after the last compaction */
};

/* A retirement request in the writer's queue (struct sealed.retire). */
struct wr_retire_req {
	size_t n;
	struct frec_retired v[];
};

/* writer_ring.c */
struct ring_chunk *wr_ring_keep(struct frec_writer *w, uint16_t type, const uint8_t *raw,
				size_t raw_len, uint32_t count, uint64_t first, uint64_t last);
void wr_ring_append_meta(struct frec_writer *w, struct ring_chunk *k);
/* k's raw payload in r->raw (valid until the next call), or NULL. */
const uint8_t *wr_ring_unpack(struct wr_ring *r, const struct ring_chunk *k);

/* writer_ring_meta.c */
uint32_t wr_ring_count_processes(const uint8_t *raw, size_t len);
/* Drops the metadata of every retired process whose exit has left the ring,
 * and the clock, counter and stats records older than the window but the
 * latest of each.  force: even when the metadata has not doubled since the
 * last time.  Writer thread. */
void wr_ring_compact(struct frec_writer *w, int force);

#endif
