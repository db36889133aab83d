/* The trace reader's own view of itself, shared by its parts and nothing
 * else: reader.c (open and close, the file header, the scan with its
 * resync, chunk reading, record iteration), reader_codec.c (zstd and zlib
 * payloads, output grown only as the data proves itself) and reader_end.c
 * (INDEX and END, and what they say).  Everything else goes through
 * frec_reader.h.
 *
 * Input is hostile by default (bug-report attachments): every part checks
 * a length against what remains before it reads or allocates. */
#ifndef FLIGHTREC_READER_IMPL_H
#define FLIGHTREC_READER_IMPL_H

#include "frec_reader.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <zstd.h>

#define CHUNK_HDR ((uint64_t)sizeof(struct fr_chunk_hdr))
#define SCAN_BLOCK (64u << 10)

/* A chunk the scan returned: where it starts and the seq it carried (an
 * INDEX entry matches it on both). */
struct intact {
	uint64_t offset, seq;
};

struct frec_reader {
	int fd;
	char *path;
	uint64_t size;
	struct fr_file_hdr hdr;
	char *cmdline;
	uint64_t pos;

	uint8_t *stored; /* one chunk's payload as stored */
	size_t stored_cap;
	uint8_t *raw;    /* ... and decompressed */
	size_t raw_cap;
	ZSTD_DCtx *zd;

	struct frec_damage *dmg;
	size_t dmg_n, dmg_cap;
	uint64_t dmg_more; /* regions folded into the last entry */
	int damage_since_intact;

	int have_prev_seq;
	uint64_t prev_seq, seq_gaps;
	uint64_t chunks_read;
	struct intact *intact; /* offsets ascending: the scan only moves forward */
	size_t intact_n, intact_cap;
	uint64_t missing;

	int has_end;
	struct fr_end end;
	struct fr_probe_stats *probes;
	struct fr_drop_count *drops;
	struct fr_end_stop stop;   /* magic 0: not stopped early */

	/* frec_chunk_next_record's count check */
	uint64_t it_offset, it_seen;
	int it_counting, it_done;

	/* frec_defer_payloads: chunks of this type are returned without their
	 * payload during the scan (0: none), read later by frec_read_chunk_at */
	uint16_t defer_type;
	/* the last INDEX's entries, so that a deferred chunk found damaged
	 * later can still count as missing */
	struct intact *index;
	size_t index_n;
};

/* Bytes a chunk occupies in the file: header, payload, padding to 8. */
static inline uint64_t chunk_span(const struct fr_chunk_hdr *h)
{
	return CHUNK_HDR + FR_ALIGN8((uint64_t)h->stored_len);
}

/* Makes *buf hold at least need bytes; -1 (buffer untouched) out of memory. */
static inline int grow(uint8_t **buf, size_t *cap, size_t need)
{
	if (*cap >= need)
		return 0;
	uint8_t *p = realloc(*buf, need);
	if (!p)
		return -1;
	*buf = p;
	*cap = need;
	return 0;
}

/* reader.c: records a damaged region (offset, length, what was wrong);
 * past a few thousand regions the last entry sums up the rest. */
__attribute__((format(printf, 4, 5)))
void rd_add_damage(struct frec_reader *r, uint64_t offset, uint64_t length,
		   const char *fmt, ...);

/* reader_codec.c: the raw payload of the chunk whose stored bytes (CRC
 * checked) are in r->stored: r->stored itself for codec none, r->raw after
 * decompression.  NULL with why filled when it does not decode to exactly
 * raw_len bytes or the codec is unknown. */
const uint8_t *rd_decode_payload(struct frec_reader *r, const struct fr_chunk_hdr *h,
				 char *why, size_t wlen);

/* reader_end.c: called for each intact INDEX / END chunk in file order; the
 * last valid one of each describes the file.  A payload that does not hold
 * what its header says is recorded as damage. */
void rd_parse_index(struct frec_reader *r, const struct frec_chunk *c);
void rd_parse_end(struct frec_reader *r, const struct frec_chunk *c);
/* reader_end.c: counts again the last INDEX's entries the scan did not
 * yield, after a deferred chunk turned out damaged. */
void rd_recount_missing(struct frec_reader *r);

#endif
