/* Trace writer: builders collect records into chunks; a compressor thread of
 * the writer's own compresses and writes sealed chunks, so a thread that
 * appends (the ring-buffer drain) never waits for compression or disk.
 *
 * Threading: each builder belongs to one thread.  frec_writer_close() must be
 * called after every builder has been flushed and freed.
 */
#ifndef FLIGHTREC_WRITER_H
#define FLIGHTREC_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include "frec_error.h"
#include "frec_format.h"
#include "frec_records.h"
#include "frec_schema.h"

struct frec_writer;
struct frec_builder;

struct frec_writer_opts {
	int codec;               /* enum fr_codec, default FR_CODEC_ZSTD */
	int level;               /* codec level, default 1 (zstd) / 1 (zlib) */
	size_t chunk_bytes;      /* seal a chunk at this raw size; default 4 MiB */
	size_t max_queue_bytes;  /* sealed-but-unwritten limit; default 256 MiB.
				    Past it a sealed chunk is dropped and counted,
				    never waited for. */
	int set_owner;           /* give the file to owner_uid:owner_gid (a
				    recorder run through sudo writes the user's
				    file, not root's) */
	unsigned owner_uid, owner_gid;
	/* the record types written into the SCHEMA chunk (the recorder's:
	 * fr_schema_table() of bpf/families/); none by default */
	const struct frec_schema_entry *schema;
	size_t n_schema;
};

struct frec_file_info {
	const char *host;       /* NULL: uname nodename */
	const char *const *argv; /* recorded command line (may be NULL) */
	int argc;
	uint64_t start_mono_ns; /* 0: read now */
	uint64_t start_real_ns;
	uint32_t flags;         /* the header's FR_FILE_* flags (frec_format.h) */
	/* A rewritten copy of a trace (a redacted archive member): the
	 * recorder pid, CPU count, kernel release and flags of this header,
	 * not this machine's.  NULL for a recording. */
	const struct fr_file_hdr *like;
};

/* Fills every field with its default (zstd level 1, 4 MiB chunks, 256 MiB
 * queue).  Passing opts == NULL to frec_writer_open means the same.  With
 * explicit opts, a 0 in level, chunk_bytes or max_queue_bytes picks that
 * field's default, but codec 0 is FR_CODEC_NONE: start from this function.
 * chunk_bytes is clamped to [4 KiB, FR_MAX_CHUNK_RAW]. */
void frec_writer_opts_default(struct frec_writer_opts *opts);

/* Creates (truncates) path, writes the file header and the SCHEMA chunk
 * (seq 0) before returning, and starts the writer thread. */
int frec_writer_open(const char *path, const struct frec_file_info *info,
		     const struct frec_writer_opts *opts,
		     struct frec_writer **out, struct frec_error *err);
/* The same on an open, empty, writable file (an anonymous one: O_TMPFILE,
 * memfd), which the writer owns from here and closes (on failure too: dup
 * it to read the trace afterwards); name is what errors call it.  Its mode
 * and owner are the caller's. */
int frec_writer_open_fd(int fd, const char *name, const struct frec_file_info *info,
			const struct frec_writer_opts *opts, struct frec_writer **out,
			struct frec_error *err);

/* A builder for chunks of one type (FR_CHUNK_EVENTS or FR_CHUNK_META). */
struct frec_builder *frec_builder_new(struct frec_writer *w, uint16_t chunk_type);

/* Reserve `size` bytes (multiple of 8, >= 8) for one record in the current
 * chunk and return where to write it; the caller fills the record including
 * its fr_rec_hdr, then calls frec_builder_commit with the record's timestamp
 * (0 when it has none).  A record larger than chunk_bytes gets a chunk of its
 * own.  Returns NULL only on allocation failure (or a size that is not a
 * multiple of 8, below 8, or above FR_MAX_CHUNK_RAW).  A reservation not
 * committed is abandoned by the next reserve.  frec_builder_new returns NULL
 * for FR_CHUNK_INDEX/FR_CHUNK_END (the writer writes those) and on ENOMEM. */
void *frec_builder_reserve(struct frec_builder *b, uint32_t size);
void frec_builder_commit(struct frec_builder *b, uint64_t ts_ns);

/* Convenience: reserve + memcpy + commit. */
int frec_builder_append(struct frec_builder *b, const void *rec, uint32_t size,
			uint64_t ts_ns);

/* Seal the current chunk (if it holds records) and hand it to the writer
 * thread.  Called on a timer so that a killed recorder loses little. */
void frec_builder_flush(struct frec_builder *b);
/* Bytes committed to the chunk being built (not sealed yet). */
size_t frec_builder_bytes(const struct frec_builder *b);
void frec_builder_free(struct frec_builder *b); /* flushes first */

/* Counters for the end-of-run summary. */
struct frec_writer_stats {
	uint64_t chunks_written;
	uint64_t chunks_dropped;   /* queue over max_queue_bytes */
	uint64_t records_dropped;  /* records inside dropped chunks */
	uint64_t records_written;
	uint64_t bytes_raw;
	uint64_t bytes_written;    /* file size so far */
	int stop_error;            /* nonzero: writing stopped at stop_mono_ns with
				      this errno (disk full ...); later chunks are
				      dropped and close seals the file as it was */
	uint64_t stop_mono_ns;
	uint64_t queue_bytes_peak;
	uint64_t queue_bytes;      /* sealed, not yet written (or kept) now */
};
void frec_writer_stats(struct frec_writer *w, struct frec_writer_stats *out);

/* Write every queued chunk, then the INDEX and END chunks, fsync, close.
 * end->index_offset/total_* are filled by the writer; the caller provides
 * times, cpu and probe stats.  Frees w.
 * end may be NULL; end_mono_ns/end_real_ns of 0 are read at close.  Unless
 * probes already hold one named "writer", the writer appends a probe entry
 * "writer" (events = records written, drops = records in dropped chunks), so
 * END's n_probes may be n_probes + 1; total_drops sums every entry's drops.
 * When writing stopped during the run (see stop_error: the failed chunk was
 * cut away, the file kept as a valid prefix), close writes an END without
 * INDEX that says so (struct fr_end_stop) in the room the writer kept for
 * it, and returns 0 when that worked.  Returns 0, or -1 with err filled when
 * the file could not be sealed. */
int frec_writer_close(struct frec_writer *w, const struct fr_end *end,
		      const struct fr_probe_stats *probes, uint32_t n_probes,
		      struct frec_error *err);

/* Writes every queued chunk and stops the writer's thread, so the stats
 * are final (whether writing stopped early, say) before frec_writer_close;
 * every builder must be flushed and freed first. */
void frec_writer_drain(struct frec_writer *w);

/* A copy of a recording that stopped early (disk full ...): close writes
 * its END as the recorder's writer left it — no INDEX, the stop trailer
 * with error and the time — and later chunks are still written.  Call
 * before frec_writer_close. */
void frec_writer_set_stopped(struct frec_writer *w, int error, uint64_t at_mono_ns);

/* Loss counters per (probe, reason) for the END chunk, copied; call before
 * frec_writer_close.  Returns 0, or -1 out of memory. */
int frec_writer_set_drops(struct frec_writer *w, const struct fr_drop_count *drops, uint32_t n);

/* Crash path: stop the thread without writing INDEX/END (tests use it).
 * Chunks already queued are still written first, so tests are deterministic;
 * no fsync.  Frees w. */
void frec_writer_abandon(struct frec_writer *w);

/* ---- flight-recorder ring (flightrec record --ring) -------------------------
 *
 * A writer without a file: sealed chunks are compressed as usual and kept in
 * memory.  EVENTS chunks form a ring of at most `bytes` compressed bytes, the
 * oldest leaving first; META chunks are all kept.  A chunk that leaves the
 * ring is decompressed once on the writer thread: its metadata records
 * (types 0x100 and up other than USTACK: stacks, symbols ... that events
 * still held may name) are kept, a USTACK that ends it is kept for the event
 * that opens the next chunk, and the caller's evicted() sees its raw payload
 * (to keep the state that the evicted events leave behind, such as the live
 * allocations).  frec_writer_snapshot writes what the ring holds as a
 * complete trace. */
typedef void (*frec_evict_fn)(void *ctx, const uint8_t *raw, size_t len);

struct frec_ring_opts {
	size_t bytes;          /* compressed EVENTS bytes kept (at least one chunk) */
	/* Exited processes whose metadata may wait for their exits to leave
	 * the window (0: FREC_RING_EXITED_DEFAULT(bytes)); past it the oldest
	 * events leave sooner (format/SPEC.md section 8.1). */
	size_t max_exited;
	frec_evict_fn evicted; /* on the writer thread; may be NULL */
	void *ctx;
};

/* An exited process's metadata is about 4 KiB compressed (process,
 * threads, environment, mappings; measured under churn): the default lets
 * the waiting ones weigh about as much as the events, and never fewer than
 * 1,024. */
#define FREC_RING_EXITED_DEFAULT(bytes) ((bytes) / 4096 > 1024 ? (bytes) / 4096 : 1024)

int frec_writer_open_ring(const struct frec_writer_opts *opts,
			  const struct frec_ring_opts *ring, struct frec_writer **out,
			  struct frec_error *err);

/* Records the caller carries into a snapshot ahead of the window's events:
 * the state at the window's start (records of allocations still live).
 * Filled on the writer thread by frec_snapshot.carry; raw points at
 * len bytes of whole records the caller owns until the next call. */
struct frec_carried {
	const uint8_t *raw;
	size_t len;
	uint32_t count;
	uint32_t allocs;       /* for the snapshot record */
	uint64_t alloc_bytes;
	uint64_t first_ts_ns;  /* earliest record time (0: none) */
};

struct frec_snapshot {
	int fd;                /* an empty file the writer owns from here (closes it) */
	const char *name;      /* what errors and messages call it */
	const struct frec_file_info *info; /* the recording's: argv, host and start
					      anchors, which move to the window */
	int (*carry)(void *ctx, struct frec_carried *out); /* may be NULL */
	void *carry_ctx;
	/* the snapshot record: the caller fills trigger, trigger_ns, number,
	 * oom_retry, suppressed and pid; the writer the window, evicted and
	 * carried counts */
	struct fr_rec_snapshot rec;
	const char *detail;
	/* more META records of the caller's (in-flight calls ...); may be NULL */
	const uint8_t *meta;
	size_t meta_len;
	uint32_t meta_count;
	/* END: counters of the whole run so far */
	const struct fr_end *end;
	const struct fr_probe_stats *probes;
	uint32_t n_probes;
	const struct fr_drop_count *drops;
	uint32_t n_drops;
};

struct frec_snapshot_result {
	uint64_t window_first_ns, window_last_ns;
	uint64_t bytes;          /* file size */
	uint64_t event_chunks;   /* EVENTS chunks of the window */
};

/* Writes the snapshot after every chunk sealed before this call has reached
 * the ring, on the writer thread (the ring does not move meanwhile), and
 * waits for it.  The file holds: header, SCHEMA, every META chunk, the
 * metadata kept from evicted chunks, the carried records, the ring's EVENTS
 * chunks in order, the snapshot record and the caller's META records, INDEX,
 * END.  Returns 0, or -1 with err filled (the file is then incomplete). */
int frec_writer_snapshot(struct frec_writer *w, const struct frec_snapshot *s,
			 struct frec_snapshot_result *res, struct frec_error *err);

/* Keeps every EVENTS chunk whose events reach since_ns or later, and
 * does not count them against the ring's size, until released (since_ns
 * 0): a trigger's own event and its aftermath stay for its snapshot, with
 * the ring's size of history before them.  Any thread. */
void frec_writer_ring_hold(struct frec_writer *w, uint64_t since_ns);

/* A process that has exited, for frec_writer_ring_retire. */
struct frec_retired {
	uint32_t pid;
	uint64_t exit_ns;  /* its exit event's time */
};

/* The caller has sealed every metadata record it wrote about these
 * processes (records after this call with the same pid are of a new
 * process that reuses it).  Once a process's exit has left the ring, no
 * event held needs its metadata: its FR_REC_PROCESS, THREAD, PROC_ENV,
 * MAPPING, PYTHON, ATTACH, PYCODE and STACK records are dropped from what
 * is kept, so the metadata the ring keeps is that of the processes alive
 * or still in the window, and of the files (DSO, UNWIND) they map.  Queued
 * behind the chunks sealed before; any thread.  0, or -1 out of memory (it
 * is then kept). */
int frec_writer_ring_retire(struct frec_writer *w, const struct frec_retired *v, size_t n);

/* After frec_writer_drain (the writer thread stopped): the compaction that
 * retirement runs from time to time, now, so the counts below are the
 * floor.  Ring mode only. */
void frec_writer_ring_compact(struct frec_writer *w);

struct frec_ring_stats {
	uint64_t event_bytes, meta_bytes; /* compressed, held now */
	uint64_t event_chunks, meta_chunks;
	uint64_t chunks_evicted, records_evicted;
	uint64_t window_first_ns;         /* first event still held */
	uint64_t meta_records;            /* metadata records kept (META chunks, rescued) */
	uint64_t meta_processes;          /* FR_REC_PROCESS records among them */
	uint64_t retire_waiting;          /* exited processes whose exit is still in the window */
	uint64_t pids_retired, records_retired, compactions;
	uint64_t chunks_evicted_exited;   /* of chunks_evicted: early, for max_exited */
};
void frec_writer_ring_stats(struct frec_writer *w, struct frec_ring_stats *out);

/* For tests: hold != 0 keeps the writer thread from taking the next queued
 * chunk (so the queue fills and overflows deterministically); 0 releases it.
 * close and abandon release it too. */
void frec_writer_hold(struct frec_writer *w, int hold);

#endif
