/* Builders for the trace writer (format/SPEC.md sections 4 and 5): each
 * appending thread fills records into a chunk of its own, with no lock, and
 * seals the chunk when it is full or flushed, handing it to the writer
 * thread.  The appending thread is the ring-buffer drain, so sealing never
 * waits: a chunk the queue has no room for is dropped and counted
 * (wr_push_sealed), and a chunk-sized buffer reused.  A record larger than
 * chunk_bytes gets a chunk of its own.  This file does not compress or
 * write: writer.c does, on the writer thread. */
#include "writer_impl.h"

#include <string.h>

struct frec_builder *frec_builder_new(struct frec_writer *w, uint16_t chunk_type)
{
	if (!w || chunk_type == FR_CHUNK_INDEX || chunk_type == FR_CHUNK_END)
		return NULL;
	struct frec_builder *b = calloc(1, sizeof(*b));
	if (b) {
		b->w = w;
		b->chunk_type = chunk_type;
	}
	return b;
}

static struct sealed *new_sealed(size_t cap)
{
	struct sealed *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->buf = malloc(cap);
	if (!c->buf) {
		free(c);
		return NULL;
	}
	c->cap = cap;
	return c;
}

static void reset_sealed(struct sealed *c, uint16_t type)
{
	c->len = 0;
	c->record_count = 0;
	c->first_ts_ns = c->last_ts_ns = 0;
	c->chunk_type = type;
}

static void builder_seal(struct frec_builder *b)
{
	struct sealed *c = b->cur;
	b->pending = 0;
	if (!c || c->len == 0)
		return;
	struct sealed *next;
	if (wr_push_sealed(b->w, c, &next)) {
		b->cur = next;
		if (next)
			reset_sealed(next, b->chunk_type);
	} else if (c->cap != b->w->chunk_bytes) {
		free_sealed(c); /* a dropped oversized chunk */
		b->cur = NULL;
	} else {
		reset_sealed(c, b->chunk_type); /* dropped: reuse its buffer */
	}
}

void *frec_builder_reserve(struct frec_builder *b, uint32_t size)
{
	if (size < sizeof(struct fr_rec_hdr) || size % 8 || size > FR_MAX_CHUNK_RAW)
		return NULL;
	b->pending = 0;
	struct sealed *c = b->cur;
	if (c && c->len + size > c->cap) {
		if (c->len) {
			builder_seal(b);
		} else {
			free_sealed(c); /* empty and too small for this record */
			b->cur = NULL;
		}
		c = b->cur;
		if (c && c->len + size > c->cap) {
			free_sealed(c);
			b->cur = c = NULL;
		}
	}
	if (!c) {
		size_t cap = size > b->w->chunk_bytes ? size : b->w->chunk_bytes;
		c = new_sealed(cap);
		if (!c)
			return NULL;
		reset_sealed(c, b->chunk_type);
		b->cur = c;
	}
	b->pending = size;
	return c->buf + c->len;
}

void frec_builder_commit(struct frec_builder *b, uint64_t ts_ns)
{
	struct sealed *c = b->cur;
	if (!c || !b->pending)
		return;
	c->len += b->pending;
	b->pending = 0;
	c->record_count++;
	if (ts_ns) {
		if (!c->first_ts_ns || ts_ns < c->first_ts_ns)
			c->first_ts_ns = ts_ns;
		if (ts_ns > c->last_ts_ns)
			c->last_ts_ns = ts_ns;
	}
	if (c->cap - c->len < sizeof(struct fr_rec_hdr))
		builder_seal(b); /* full: send it now rather than at next reserve */
}

int frec_builder_append(struct frec_builder *b, const void *rec, uint32_t size,
			uint64_t ts_ns)
{
	void *p = frec_builder_reserve(b, size);
	if (!p)
		return -1;
	memcpy(p, rec, size);
	frec_builder_commit(b, ts_ns);
	return 0;
}

size_t frec_builder_bytes(const struct frec_builder *b)
{
	return b && b->cur ? b->cur->len : 0;
}

void frec_builder_flush(struct frec_builder *b)
{
	if (b)
		builder_seal(b);
}

void frec_builder_free(struct frec_builder *b)
{
	if (!b)
		return;
	builder_seal(b);
	free_sealed(b->cur);
	free(b);
}
