/* The trace writer's own view of itself, shared by its parts and nothing
 * else: writer.c (open, the file header and SCHEMA chunk, compressing and
 * writing a chunk, the writer thread, stopping after a failed write),
 * writer_builder.c (the builders the appending threads fill, and sealing)
 * and writer_end.c (INDEX, END, drain, close, abandon).  Everything else
 * goes through frec_writer.h.
 *
 * The appending thread is the ring-buffer drain: nothing it calls may wait
 * for compression or disk (wr_push_sealed takes the mutex for a pointer
 * push, or drops and counts). */
#ifndef FLIGHTREC_WRITER_IMPL_H
#define FLIGHTREC_WRITER_IMPL_H

#include "frec_writer.h"
#include "clock.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <zstd.h>

struct wr_snap_req;
struct wr_retire_req;
struct wr_ring;

/* A chunk's raw payload on its way from a builder to the file.  Or, with
 * snap set and no payload, a snapshot request (writer_ring.c) queued behind
 * the chunks sealed before it; its caller owns and waits for it. */
struct sealed {
	struct sealed *next;
	struct wr_snap_req *snap;
	struct wr_retire_req *retire; /* ring mode: processes that exited (owned) */
	uint8_t *buf;
	size_t len, cap;
	uint16_t chunk_type;
	uint32_t record_count;
	uint64_t first_ts_ns, last_ts_ns;
};

struct frec_writer {
	int fd;
	char *path;
	int codec, level;
	size_t chunk_bytes, max_queue_bytes;
	const struct frec_schema_entry *schema; /* the caller's, for the SCHEMA chunk */
	int no_fallocate;          /* the filesystem cannot reserve room (writer.c) */
	int copy_stopped;          /* frec_writer_set_stopped: a copy's stop, not a
				      failure here; chunks are still written */
	size_t n_schema;
	struct wr_ring *ring;      /* ring mode: no file (writer_ring.c) */

	pthread_t thread;
	int thread_started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* Under mu: */
	struct sealed *head, *tail;
	size_t queued_bytes; /* raw bytes queued or being written */
	int stopping, hold;
	struct sealed *pool;
	unsigned pool_n;
	struct frec_writer_stats st;
	int io_failed;
	struct frec_error io_err;
	int stop_error;            /* a chunk write failed: the file ends before it */
	uint64_t stop_mono_ns;

	/* Owned by the writer thread while it runs, by open/close otherwise. */
	ZSTD_CCtx *zc;
	uint8_t *out;
	size_t out_cap;
	uint64_t next_seq, file_off;
	struct fr_index_entry *index;
	size_t index_n, index_cap;
	struct fr_drop_count *drops; /* for END (frec_writer_set_drops) */
	uint32_t n_drops;
	int index_broken; /* an entry could not be stored: write no INDEX */
};

struct frec_builder {
	struct frec_writer *w;
	uint16_t chunk_type;
	struct sealed *cur; /* NULL until the next reserve */
	uint32_t pending;   /* reserved, not yet committed */
};

/* The clock id (CLOCK_MONOTONIC, CLOCK_REALTIME) now, in ns: the anchors
 * of the file header and END, and when writing stopped. */
/* Frees a chunk buffer that neither the queue nor the pool holds (NULL
 * is fine). */
static inline void free_sealed(struct sealed *c)
{
	if (c) {
		free(c->buf);
		free(c);
	}
}

/* writer.c: compress, checksum and append one chunk on the writer thread
 * (or at open and close, when it does not run); assigns its seq and lists
 * it for the INDEX.  Returns 0, or -1: writing stopped (an event chunk) or
 * w->io_err filled (INDEX, END). */
int wr_write_chunk(struct frec_writer *w, uint16_t type, int codec,
		   const uint8_t *raw, size_t raw_len, uint32_t count,
		   uint64_t first_ts, uint64_t last_ts);

/* writer.c: the same for a payload compressed already (stored_codec over
 * raw_len bytes): a chunk kept by the ring goes to a snapshot as it is. */
int wr_write_stored(struct frec_writer *w, uint16_t type, uint8_t stored_codec,
		    const uint8_t *stored, size_t stored_len, size_t raw_len,
		    uint32_t count, uint64_t first_ts, uint64_t last_ts);

/* writer.c: compress raw into w->out when that makes it smaller; returns
 * the codec used and where the stored bytes are. */
uint8_t wr_compress(struct frec_writer *w, int codec, const uint8_t *raw, size_t raw_len,
		    const uint8_t **stored, size_t *stored_len);

/* writer.c: a writer on path (fd < 0: created) or on fd, with its file
 * header and SCHEMA chunk written; its thread started when start_thread. */
int wr_open(const char *path, int fd, const struct frec_file_info *info,
	    const struct frec_writer_opts *opts, int start_thread,
	    struct frec_writer **out, struct frec_error *err);

/* writer.c: a writer's fields from opts (defaults, clamping) and its zstd
 * context; no file.  NULL with err filled. */
struct frec_writer *wr_new(const char *name, const struct frec_writer_opts *opts,
			   struct frec_error *err);

/* writer.c: starts the writer thread with every signal blocked. */
int wr_start_thread(struct frec_writer *w, struct frec_error *err);

/* writer_ring.c, on the writer thread: keep one sealed chunk in the ring
 * (evicting what no longer fits); run one snapshot request; free the ring. */
int wr_ring_add(struct frec_writer *w, const struct sealed *c);
void wr_ring_snapshot(struct frec_writer *w, struct wr_snap_req *rq);
void wr_ring_free(struct wr_ring *r);
void wr_ring_retire(struct frec_writer *w, struct wr_retire_req *rq);

/* writer.c: the file cannot be sealed; the first failure is the one kept
 * in w->io_err for close to report. */
void wr_fail_io(struct frec_writer *w, const char *what, int code);

/* writer.c: hand a sealed chunk to the writer thread, or drop and count it
 * when the queue is full.  Returns 1 when taken; on drop the caller keeps
 * c.  *next receives a pooled buffer for the builder's next chunk (or
 * NULL). */
int wr_push_sealed(struct frec_writer *w, struct sealed *c, struct sealed **next);

/* writer.c: frees w and everything it holds, closing the file if still
 * open; the thread must not run. */
void wr_free_writer(struct frec_writer *w);

#endif
