/* String interning over an arena of blocks and an open-addressing set of
 * pointers; see strpool.h. */
#include "strpool.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define STRPOOL_BLOCK_BYTES (64u << 10)

struct strpool_block {
	struct strpool_block *next;
	size_t used;
	size_t cap;
	char data[];
};

struct strpool {
	struct strpool_block *blocks;
	const char **set; /* NULL: empty slot */
	size_t cap;
	size_t count;
};

static uint64_t strpool_hash(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

struct strpool *strpool_new(void)
{
	return calloc(1, sizeof(struct strpool));
}

void strpool_free(struct strpool *p)
{
	if (!p)
		return;
	for (struct strpool_block *b = p->blocks, *n; b; b = n) {
		n = b->next;
		free(b);
	}
	free(p->set);
	free(p);
}

static char *strpool_alloc(struct strpool *p, size_t n)
{
	struct strpool_block *b = p->blocks;
	if (!b || b->cap - b->used < n) {
		size_t cap = n > STRPOOL_BLOCK_BYTES ? n : STRPOOL_BLOCK_BYTES;
		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->used = 0;
		b->cap = cap;
		/* A big string gets its own block behind the current one so the
		 * current block's free space is not wasted. */
		if (p->blocks && cap > STRPOOL_BLOCK_BYTES) {
			b->next = p->blocks->next;
			p->blocks->next = b;
		} else {
			b->next = p->blocks;
			p->blocks = b;
		}
	}
	char *s = b->data + b->used;
	b->used += n;
	return s;
}

static const char **strpool_find(const struct strpool *p, const char *s, size_t len,
				 uint64_t h)
{
	size_t mask = p->cap - 1;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		const char *e = p->set[i];
		if (!e || (strncmp(e, s, len) == 0 && e[len] == '\0'))
			return &p->set[i];
	}
}

static int strpool_grow(struct strpool *p)
{
	size_t cap = p->cap ? p->cap * 2 : 256;
	const char **set = calloc(cap, sizeof(*set));
	if (!set)
		return -1;
	const char **old = p->set;
	size_t old_cap = p->cap;
	p->set = set;
	p->cap = cap;
	for (size_t i = 0; i < old_cap; i++) {
		if (old[i]) {
			size_t len = strlen(old[i]);
			*strpool_find(p, old[i], len, strpool_hash(old[i], len)) = old[i];
		}
	}
	free(old);
	return 0;
}

const char *strpool_intern(struct strpool *p, const char *s, size_t len)
{
	/* Embedded NULs would make two different byte strings compare equal. */
	const char *nul = memchr(s, '\0', len);
	if (nul)
		len = (size_t)(nul - s);
	if ((p->count + 1) * 2 > p->cap && strpool_grow(p))
		return NULL;
	uint64_t h = strpool_hash(s, len);
	const char **slot = strpool_find(p, s, len, h);
	if (*slot)
		return *slot;
	char *copy = strpool_alloc(p, len + 1);
	if (!copy)
		return NULL;
	memcpy(copy, s, len);
	copy[len] = '\0';
	*slot = copy;
	p->count++;
	return copy;
}

const char *strpool_intern_cstr(struct strpool *p, const char *s)
{
	return strpool_intern(p, s, strlen(s));
}
