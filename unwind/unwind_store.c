/* The records of one trace file the unwinder needs: unwind images by
 * dso_id (FR_REC_UNWIND; the same file under several dso ids shares one
 * copy of its bytes), and, for callers that keep them, raw stacks
 * (FR_REC_USTACK) deduplicated by content, with their Python frames and
 * copied stack bytes each packed in one growing array.
 *
 * Not for unwinding (unwind.c) nor for which process maps which image
 * (unwind_trace.c); the decode pass keeps no raw stacks and unwinds each
 * record as it reads it.  Images are checked (unwind_image.c) before they
 * are kept; stack lengths are checked by the caller. */
#include "unwind_private.h"
#include "grow.h"

#include <stdlib.h>
#include <string.h>

struct uw_store {
	struct uw_image *images;
	size_t n_images;
	struct hmap image_by_dso;   /* dso_id -> index */
	struct uw_raw *raws;
	size_t n_raws, cap_raws;
	struct hmap raw_by_hash;    /* (hash, pid) -> index */
	struct fr_py_frame *py;
	size_t n_py, cap_py;
	uint8_t *stack;
	size_t n_stack, cap_stack;
};

struct uw_store *uw_store_new(void)
{
	struct uw_store *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	hmap_init(&s->image_by_dso);
	hmap_init(&s->raw_by_hash);
	return s;
}

void uw_store_free(struct uw_store *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_images; i++)
		if (s->images[i].owner)
			free(s->images[i].bytes);
	free(s->images);
	hmap_free(&s->image_by_dso);
	free(s->raws);
	hmap_free(&s->raw_by_hash);
	free(s->py);
	free(s->stack);
	free(s);
}

int uw_store_add_image(struct uw_store *s, uint32_t dso_id, const uint8_t *build_id,
		       size_t build_id_len, const uint8_t *image, size_t len, char *why,
		       size_t why_len)
{
	struct uw_layout lay;
	if (uw_read_layout(image, len, &lay, why, why_len))
		return 1;
	if (build_id_len > 20)
		build_id_len = 20;
	struct uw_image img = { .dso_id = dso_id, .build_id_len = (uint8_t)build_id_len, .len = len };
	memcpy(img.build_id, build_id, build_id_len);
	/* the same file under another dso id (another mount, another pid's
	 * view): share the bytes */
	for (size_t i = 0; build_id_len && i < s->n_images; i++)
		if (s->images[i].build_id_len == build_id_len && s->images[i].len == len &&
		    !memcmp(s->images[i].build_id, build_id, build_id_len) &&
		    !memcmp(s->images[i].bytes, image, len))
			img.bytes = s->images[i].bytes;
	if (!img.bytes) {
		if (!(img.bytes = malloc(len)))
			return -1;
		memcpy(img.bytes, image, len);
		img.owner = 1;
	}
	struct uw_image *grown = realloc(s->images, (s->n_images + 1) * sizeof(*grown));
	if (!grown || hmap_put(&s->image_by_dso, dso_id, 0, s->n_images)) {
		if (grown)
			s->images = grown;
		if (img.owner)
			free(img.bytes);
		return -1;
	}
	s->images = grown;
	s->images[s->n_images++] = img; /* a replaced image stays owned here */
	return 0;
}

const struct uw_image *uw_store_image(const struct uw_store *s, uint32_t dso_id)
{
	uint64_t i;
	if (!s || !hmap_get(&s->image_by_dso, dso_id, 0, &i) || i >= s->n_images)
		return NULL;
	return &s->images[i];
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v;
	h *= 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

/* Four independent multiply lanes over 32-byte blocks: the stack copy is
 * most of a record, and this runs once per record. */
static uint64_t content_hash(uint32_t pid, uint16_t flags, uint16_t py_version,
			     const uint64_t regs[UW_NREGS], const uint8_t *py, size_t py_bytes,
			     const uint8_t *stack, size_t stack_len)
{
	const uint64_t k = 0x9e3779b97f4a7c15ull;
	uint64_t h = mix(0x243f6a8885a308d3ull, (uint64_t)pid << 32 | (uint64_t)flags << 16 | py_version);
	for (int i = 0; i < UW_NREGS; i++)
		h = mix(h, regs[i]);
	h = mix(h, py_bytes);
	for (size_t i = 0; i + 8 <= py_bytes; i += 8) {
		uint64_t v;
		memcpy(&v, py + i, 8);
		h = mix(h, v);
	}
	uint64_t lane[4] = { h, h ^ 1, h ^ 2, h ^ 3 };
	size_t i = 0;
	for (; i + 32 <= stack_len; i += 32) {
		uint64_t v[4];
		memcpy(v, stack + i, 32);
		for (int l = 0; l < 4; l++)
			lane[l] = (lane[l] ^ v[l]) * k + (lane[l] >> 31);
	}
	for (int l = 0; l < 4; l++)
		h = mix(h, lane[l]);
	h = mix(h, stack_len);
	for (; i < stack_len; i++)
		h = mix(h, stack[i]);
	return h;
}

static int same_content(const struct uw_store *s, const struct uw_raw *r, uint32_t pid,
			uint16_t flags, uint16_t py_version, const uint64_t regs[UW_NREGS],
			const uint8_t *py, uint16_t n_py, const uint8_t *stack, uint32_t stack_len)
{
	return r->pid == pid && r->flags == flags && r->py_version == py_version &&
	       r->n_py == n_py && r->stack_len == stack_len &&
	       !memcmp(r->regs, regs, sizeof(r->regs)) &&
	       (!n_py || !memcmp(s->py + r->py_at, py, (size_t)n_py * sizeof(struct fr_py_frame))) &&
	       s->stack && (!stack_len || !memcmp(s->stack + r->stack_at, stack, stack_len));
}

int64_t uw_store_add_stack(struct uw_store *s, uint32_t pid, uint32_t tid, uint16_t flags,
			   uint16_t py_version, uint64_t seq, const uint64_t regs[UW_NREGS],
			   const uint8_t *py, uint16_t n_py, const uint8_t *stack,
			   uint32_t stack_len)
{
	size_t py_bytes = (size_t)n_py * sizeof(struct fr_py_frame);
	uint64_t hash = content_hash(pid, flags, py_version, regs, py, py_bytes, stack, stack_len);
	/* probe (hash + k, pid) until the same content or a free key */
	for (uint64_t k = 0;; k++) {
		uint64_t at;
		if (!hmap_get(&s->raw_by_hash, hash + k, pid, &at))
			break;
		if (at < s->n_raws && same_content(s, &s->raws[at], pid, flags, py_version, regs, py,
						    n_py, stack, stack_len))
			return (int64_t)at;
		if (k > 64)
			break; /* hostile: stop probing, store a copy */
	}
	if (grow_array((void **)&s->raws, &s->cap_raws, s->n_raws + 1, sizeof(*s->raws), 16) ||
	    grow_array((void **)&s->py, &s->cap_py, s->n_py + n_py + 1, sizeof(*s->py), 16) ||
	    grow_array((void **)&s->stack, &s->cap_stack, s->n_stack + stack_len + 1, 1, 16))
		return -1;
	struct uw_raw *r = &s->raws[s->n_raws];
	memset(r, 0, sizeof(*r));
	r->pid = pid;
	r->tid = tid;
	r->flags = flags;
	r->py_version = py_version;
	r->n_py = n_py;
	r->stack_len = stack_len;
	r->seq = seq;
	r->hash = hash;
	memcpy(r->regs, regs, sizeof(r->regs));
	r->py_at = s->n_py;
	if (py_bytes)
		memcpy(s->py + s->n_py, py, py_bytes);
	s->n_py += n_py;
	r->stack_at = s->n_stack;
	if (stack_len)
		memcpy(s->stack + s->n_stack, stack, stack_len);
	s->n_stack += stack_len;
	for (uint64_t k = 0; k <= 65; k++) {
		int created;
		uint64_t *slot = hmap_slot(&s->raw_by_hash, hash + k, pid, &created);
		if (!slot)
			return -1;
		if (created) {
			*slot = s->n_raws;
			break;
		}
	}
	return (int64_t)s->n_raws++;
}

size_t uw_store_count(const struct uw_store *s)
{
	return s ? s->n_raws : 0;
}

struct uw_raw *uw_store_raw(struct uw_store *s, size_t i)
{
	return s && i < s->n_raws ? &s->raws[i] : NULL;
}

struct fr_py_frame uw_store_py(const struct uw_store *s, const struct uw_raw *r, size_t k)
{
	struct fr_py_frame f = { 0 };
	if (k < r->n_py)
		f = s->py[r->py_at + k];
	return f;
}

const uint8_t *uw_store_stack(const struct uw_store *s, const struct uw_raw *r)
{
	return s->stack ? s->stack + r->stack_at : NULL;
}

void uw_store_drop_stacks(struct uw_store *s)
{
	free(s->stack);
	s->stack = NULL;
	s->n_stack = s->cap_stack = 0;
}

size_t uw_store_stack_bytes(const struct uw_store *s)
{
	return s ? s->cap_stack : 0;
}
