/* A protocol buffers writer for the few wire types profile.proto uses
 * (varints, length-delimited bytes, packed varints, nested messages), into
 * a growing buffer, and the buffer written gzip'd.  Hand-written, as Go's
 * runtime/pprof writes its own: no code generator, no libprotobuf.  Not a
 * reader, and no zigzag (profile.proto's int64 fields are plain varints). */
#ifndef FLIGHTREC_PB_WRITE_H
#define FLIGHTREC_PB_WRITE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct pb_buf {
	uint8_t *data;
	size_t len, cap;
	int failed; /* memory ran out: every later call does nothing */
};

void pb_free(struct pb_buf *b);
void pb_reset(struct pb_buf *b); /* empty, keeps the memory */

/* field as a varint; proto3 leaves zero out, so does this. */
void pb_uint(struct pb_buf *b, uint32_t field, uint64_t v);
/* int64 as a plain varint (negative: ten bytes) */
void pb_int(struct pb_buf *b, uint32_t field, int64_t v);
void pb_bool(struct pb_buf *b, uint32_t field, int v);
/* field as a varint even when zero: a proto2 optional field whose presence
 * says something (a counter that went to 0, an event at time 0) */
void pb_uint_set(struct pb_buf *b, uint32_t field, uint64_t v);
/* length-delimited: bytes, a string (empty strings kept: string_table[0]),
 * a nested message (sub's bytes), packed varints */
void pb_bytes(struct pb_buf *b, uint32_t field, const void *data, size_t len);
void pb_string(struct pb_buf *b, uint32_t field, const char *s);
void pb_msg(struct pb_buf *b, uint32_t field, const struct pb_buf *sub);
/* sub's bytes as they are (repeated fields written elsewhere) */
void pb_append(struct pb_buf *b, const struct pb_buf *sub);
void pb_packed(struct pb_buf *b, uint32_t field, const uint64_t *v, size_t n);

/* b's bytes through zlib's gzip framing to out.  0, -ENOMEM or -EIO. */
int pb_write_gzip(const struct pb_buf *b, FILE *out);

#endif
