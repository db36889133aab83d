/* Payload decoding for the trace reader (format/SPEC.md section 4.2): zstd
 * and zlib, each checked to produce exactly raw_len bytes, no more and no
 * fewer, with nothing left over after the frame or stream.  The output
 * buffer grows only as the decompressor proves the data is really there, so
 * a hostile raw_len of 256 MiB over a few stored bytes costs a first guess
 * (1 MiB, or 16 times the stored size), not 256 MiB.  This file does not
 * read the file or record damage: it fills why and reader.c decides. */
#include "reader_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#define RAW_INITIAL_MAX (1u << 20) /* first guess before output proves more */

/* Make room for produced output, growing only as the decompressor proves
 * the data is really there; limit is raw_len + 1 so overlong output shows. */
static size_t raw_room(struct frec_reader *r, size_t produced, size_t limit,
		       size_t stored_len)
{
	size_t have = r->raw_cap < limit ? r->raw_cap : limit;
	if (produced < have)
		return have;
	if (have == limit)
		return have; /* full: caller sees overflow */
	size_t want = r->raw_cap * 2;
	size_t guess = stored_len * 16 > RAW_INITIAL_MAX ? stored_len * 16
							  : RAW_INITIAL_MAX;
	if (want < guess)
		want = guess;
	if (want > limit)
		want = limit;
	if (grow(&r->raw, &r->raw_cap, want) < 0)
		return have;
	return want;
}

static int decode_zstd(struct frec_reader *r, const struct fr_chunk_hdr *h,
		       char *why, size_t wlen)
{
	unsigned long long fcs = ZSTD_getFrameContentSize(r->stored, h->stored_len);
	if (fcs == ZSTD_CONTENTSIZE_ERROR) {
		snprintf(why, wlen, "zstd: not a zstd frame (chunk seq %" PRIu64 ")",
			 h->seq);
		return -1;
	}
	if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != h->raw_len) {
		snprintf(why, wlen, "zstd: frame holds %llu bytes, raw_len is %u "
			 "(chunk seq %" PRIu64 ")", fcs, h->raw_len, h->seq);
		return -1;
	}
	if (!r->zd && !(r->zd = ZSTD_createDCtx())) {
		snprintf(why, wlen, "zstd: out of memory");
		return -1;
	}
	/* Bound zstd's own window buffer by what this chunk may hold. */
	int wlog = 23;
	while (wlog < 28 && (1ull << wlog) < h->raw_len)
		wlog++;
	ZSTD_DCtx_reset(r->zd, ZSTD_reset_session_and_parameters);
	ZSTD_DCtx_setParameter(r->zd, ZSTD_d_windowLogMax, wlog);

	size_t limit = (size_t)h->raw_len + 1, produced = 0;
	ZSTD_inBuffer in = { r->stored, h->stored_len, 0 };
	for (;;) {
		size_t room = raw_room(r, produced, limit, h->stored_len);
		if (produced == room) {
			snprintf(why, wlen, produced == limit ?
				 "zstd: output exceeds raw_len %u (chunk seq %" PRIu64 ")" :
				 "zstd: out of memory for raw_len %u (chunk seq %" PRIu64 ")",
				 h->raw_len, h->seq);
			return -1;
		}
		ZSTD_outBuffer ob = { r->raw, room, produced };
		size_t in_before = in.pos;
		size_t ret = ZSTD_decompressStream(r->zd, &ob, &in);
		if (ZSTD_isError(ret)) {
			snprintf(why, wlen, "zstd: %s (chunk seq %" PRIu64 ")",
				 ZSTD_getErrorName(ret), h->seq);
			return -1;
		}
		int progressed = ob.pos != produced || in.pos != in_before;
		produced = ob.pos;
		if (ret == 0)
			break; /* frame complete */
		if (!progressed || (in.pos == in.size && ob.pos < ob.size)) {
			snprintf(why, wlen, "zstd: truncated frame (chunk seq %" PRIu64 ")",
				 h->seq);
			return -1;
		}
	}
	if (in.pos != in.size) {
		snprintf(why, wlen, "zstd: %zu bytes after the frame (chunk seq %"
			 PRIu64 ")", in.size - in.pos, h->seq);
		return -1;
	}
	if (produced != h->raw_len) {
		snprintf(why, wlen, "zstd: decompressed %zu bytes, raw_len is %u "
			 "(chunk seq %" PRIu64 ")", produced, h->raw_len, h->seq);
		return -1;
	}
	return 0;
}

static int decode_zlib(struct frec_reader *r, const struct fr_chunk_hdr *h,
		       char *why, size_t wlen)
{
	z_stream z;
	memset(&z, 0, sizeof(z));
	if (inflateInit(&z) != Z_OK) {
		snprintf(why, wlen, "zlib: cannot initialise");
		return -1;
	}
	size_t limit = (size_t)h->raw_len + 1, produced = 0;
	z.next_in = r->stored;
	z.avail_in = h->stored_len;
	int rc = -1;
	for (;;) {
		size_t room = raw_room(r, produced, limit, h->stored_len);
		if (produced == room) {
			snprintf(why, wlen, produced == limit ?
				 "zlib: output exceeds raw_len %u (chunk seq %" PRIu64 ")" :
				 "zlib: out of memory for raw_len %u (chunk seq %" PRIu64 ")",
				 h->raw_len, h->seq);
			break;
		}
		z.next_out = r->raw + produced;
		z.avail_out = (uInt)(room - produced);
		int zr = inflate(&z, Z_NO_FLUSH);
		produced = room - z.avail_out;
		if (zr == Z_STREAM_END) {
			if (z.avail_in)
				snprintf(why, wlen, "zlib: %u bytes after the stream "
					 "(chunk seq %" PRIu64 ")", z.avail_in, h->seq);
			else if (produced != h->raw_len)
				snprintf(why, wlen, "zlib: decompressed %zu bytes, raw_len "
					 "is %u (chunk seq %" PRIu64 ")", produced,
					 h->raw_len, h->seq);
			else
				rc = 0;
			break;
		}
		if (zr == Z_BUF_ERROR && z.avail_out)
			zr = Z_DATA_ERROR; /* no progress with room left: input ended */
		if (zr != Z_OK && zr != Z_BUF_ERROR) {
			snprintf(why, wlen, "zlib: %s (chunk seq %" PRIu64 ")",
				 zr == Z_DATA_ERROR && !z.avail_in ? "truncated stream"
				 : z.msg ? z.msg : "corrupt stream", h->seq);
			break;
		}
	}
	inflateEnd(&z);
	return rc;
}

const uint8_t *rd_decode_payload(struct frec_reader *r, const struct fr_chunk_hdr *h,
				 char *why, size_t wlen)
{
	if (h->codec == FR_CODEC_NONE)
		return r->stored;
	if (h->codec == FR_CODEC_ZSTD)
		return decode_zstd(r, h, why, wlen) == 0 ? r->raw : NULL;
	if (h->codec == FR_CODEC_ZLIB)
		return decode_zlib(r, h, why, wlen) == 0 ? r->raw : NULL;
	snprintf(why, wlen, "unknown codec %u (chunk seq %" PRIu64 ")", h->codec,
		 h->seq);
	return NULL;
}
