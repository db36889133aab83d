/* Trace reader with recovery.  Reads the file chunk by chunk in file order;
 * a bad chunk header or payload is reported as a damaged region (file,
 * offset, what was wrong) and the reader resynchronises on the next valid
 * chunk header, so every intact chunk is returned.  Memory use is one chunk
 * at a time, not the file.
 */
#ifndef FLIGHTREC_READER_H
#define FLIGHTREC_READER_H

#include <stddef.h>
#include <stdint.h>
#include "frec_error.h"
#include "frec_format.h"
#include "frec_records.h"

struct frec_reader;

struct frec_damage {
	uint64_t offset; /* where the damaged region starts */
	uint64_t length; /* bytes skipped until the next valid chunk (or EOF) */
	char what[160];  /* e.g. "chunk payload CRC mismatch (seq 12)" */
};

/* One decoded chunk; valid until the next frec_next_chunk call. */
struct frec_chunk {
	struct fr_chunk_hdr hdr;
	uint64_t offset;        /* file offset of the chunk header */
	const uint8_t *data;    /* raw (decompressed) payload */
	size_t len;             /* raw_len */
};

/* Opens and validates the file header.  Errors: not a flightrec trace,
 * unsupported major version, header CRC mismatch (err names file+offset). */
int frec_open(const char *path, struct frec_reader **out, struct frec_error *err);
/* Same on an open descriptor (a memfd in the fuzz target): the reader dups
 * fd, so the caller still owns and closes it.  name is used in messages. */
int frec_open_fd(int fd, const char *name, struct frec_reader **out,
		 struct frec_error *err);
void frec_close(struct frec_reader *r);
/* Frees what reading chunks grew (the payload as stored and decompressed,
 * the zstd context); the next read grows them again.  Chunks read before
 * are no longer valid.  For a caller that keeps many readers open between
 * passes (one per node of a job), so memory follows the files being read,
 * not the files open. */
void frec_release_buffers(struct frec_reader *r);

const struct fr_file_hdr *frec_file_header(const struct frec_reader *r);
const char *frec_path(const struct frec_reader *r);
/* argv from the header as one string with spaces; never NULL. */
const char *frec_cmdline(const struct frec_reader *r);
uint64_t frec_file_size(const struct frec_reader *r);

/* Next intact chunk of any type (INDEX and END included; unknown chunk types
 * are returned too, callers skip them).  Returns 1 with *out filled, 0 at end
 * of file, -1 on an I/O error (err filled).  Damage is not an error. */
int frec_next_chunk(struct frec_reader *r, struct frec_chunk *out,
		    struct frec_error *err);

/* Two-pass reading without decompressing twice: after
 * frec_defer_payloads(r, type), frec_next_chunk returns chunks of that type
 * with their header only (data NULL, len 0; the header CRC and extent are
 * checked, the payload is neither read nor checked) and counts them intact
 * for now.  frec_read_chunk_at then reads one such chunk by its offset:
 * payload CRC, decompression, 1 with *out filled; 0 when the payload is
 * damaged, which is recorded as damage (kept in file order) and the chunk
 * no longer counts as read (chunks_read, seq_gaps and chunks_missing are
 * corrected); -1 on an I/O error.  *out is valid until the next read.  It
 * does not move the scan.  type 0: no deferral (the default). */
void frec_defer_payloads(struct frec_reader *r, uint16_t chunk_type);
int frec_read_chunk_at(struct frec_reader *r, uint64_t offset, struct frec_chunk *out,
		       struct frec_error *err);

/* Record iteration within a chunk, with every length checked against what
 * remains.  *cursor starts at 0.  Returns 1 and sets *rec, 0 at the end, -1
 * when the chunk's records are malformed (a damaged region is recorded and
 * the rest of the chunk is skipped). */
int frec_chunk_next_record(struct frec_reader *r, const struct frec_chunk *c,
			   size_t *cursor, const struct fr_rec_hdr **rec);

/* After the last chunk: what the scan found. */
size_t frec_damage_count(const struct frec_reader *r);
const struct frec_damage *frec_damage_at(const struct frec_reader *r, size_t i);
int frec_has_end(const struct frec_reader *r);        /* END chunk seen and valid */
const struct fr_end *frec_end(const struct frec_reader *r);   /* NULL if none */
const struct fr_probe_stats *frec_end_probes(const struct frec_reader *r,
					     uint32_t *n);
/* 1 when the END says the recording stopped early because the file could
 * not be written (*error: its errno, *at_mono_ns: when); 0 otherwise. */
int frec_end_stopped(const struct frec_reader *r, int *error, uint64_t *at_mono_ns);
/* END's loss counters per (probe, reason); NULL (n = 0) without END or in
 * files before format 1.1. */
const struct fr_drop_count *frec_end_drops(const struct frec_reader *r, uint32_t *n);
uint64_t frec_chunks_read(const struct frec_reader *r);  /* intact chunks */
/* Index cross-check: chunks listed in the INDEX that the scan did not yield. */
uint64_t frec_chunks_missing(const struct frec_reader *r);
/* Sequence numbers skipped between consecutive intact chunks (lost chunks). */
uint64_t frec_seq_gaps(const struct frec_reader *r);

/* Helpers for the schema table. */
const char *frec_chunk_type_name(uint16_t type);
const char *frec_codec_name(uint8_t codec);

#endif
