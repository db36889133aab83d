/* Protocol buffers wire format (developers.google.com/protocol-buffers/
 * docs/encoding); see pb_write.h. */
#include "pb_write.h"
#include "grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

void pb_free(struct pb_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

void pb_reset(struct pb_buf *b)
{
	b->len = 0;
}

static uint8_t *room(struct pb_buf *b, size_t n)
{
	if (b->failed || n > SIZE_MAX - b->len || grow_bytes(&b->data, &b->cap, b->len + n)) {
		b->failed = 1;
		return NULL;
	}
	return b->data + b->len;
}

static void varint(struct pb_buf *b, uint64_t v)
{
	uint8_t *p = room(b, 10);
	if (!p)
		return;
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	b->len += n;
}

static void tag(struct pb_buf *b, uint32_t field, unsigned wire)
{
	varint(b, (uint64_t)field << 3 | wire);
}

void pb_uint(struct pb_buf *b, uint32_t field, uint64_t v)
{
	if (!v)
		return;
	tag(b, field, WIRE_VARINT);
	varint(b, v);
}

void pb_uint_set(struct pb_buf *b, uint32_t field, uint64_t v)
{
	tag(b, field, WIRE_VARINT);
	varint(b, v);
}

void pb_int(struct pb_buf *b, uint32_t field, int64_t v)
{
	pb_uint(b, field, (uint64_t)v);
}

void pb_bool(struct pb_buf *b, uint32_t field, int v)
{
	pb_uint(b, field, v ? 1 : 0);
}

void pb_bytes(struct pb_buf *b, uint32_t field, const void *data, size_t len)
{
	tag(b, field, WIRE_LEN);
	varint(b, len);
	uint8_t *p = room(b, len);
	if (!p)
		return;
	if (len)
		memcpy(p, data, len);
	b->len += len;
}

void pb_string(struct pb_buf *b, uint32_t field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

void pb_msg(struct pb_buf *b, uint32_t field, const struct pb_buf *sub)
{
	if (sub->failed) {
		b->failed = 1;
		return;
	}
	pb_bytes(b, field, sub->data, sub->len);
}

void pb_append(struct pb_buf *b, const struct pb_buf *sub)
{
	if (sub->failed) {
		b->failed = 1;
		return;
	}
	uint8_t *p = room(b, sub->len);
	if (!p || !sub->len)
		return;
	memcpy(p, sub->data, sub->len);
	b->len += sub->len;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

void pb_packed(struct pb_buf *b, uint32_t field, const uint64_t *v, size_t n)
{
	if (!n)
		return;
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += varint_len(v[i]);
	tag(b, field, WIRE_LEN);
	varint(b, len);
	for (size_t i = 0; i < n; i++)
		varint(b, v[i]);
}

int pb_write_gzip(const struct pb_buf *b, FILE *out)
{
	if (b->failed)
		return -ENOMEM;
	z_stream z;
	memset(&z, 0, sizeof(z));
	/* windowBits 15 + 16: gzip framing, as the pprof format asks */
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	uint8_t chunk[64 * 1024];
	size_t at = 0;
	int rc = 0, zrc;
	do {
		size_t in = b->len - at < (1u << 30) ? b->len - at : (1u << 30);
		z.next_in = b->data ? b->data + at : (Bytef *)chunk;
		z.avail_in = (uInt)in;
		int flush = at + in == b->len ? Z_FINISH : Z_NO_FLUSH;
		do {
			z.next_out = chunk;
			z.avail_out = sizeof(chunk);
			zrc = deflate(&z, flush);
			size_t have = sizeof(chunk) - z.avail_out;
			if (have && fwrite(chunk, 1, have, out) != have)
				rc = -EIO;
		} while (!rc && z.avail_out == 0);
		at += in;
	} while (!rc && zrc != Z_STREAM_END);
	deflateEnd(&z);
	return rc;
}
