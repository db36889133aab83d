/* See name_index.h.  Two strings of one hash and length take probes 0, 1,
 * ... of the key, so a collision costs a comparison, never a wrong name. */
#include "name_index.h"

#include <stdlib.h>
#include <string.h>

void name_index_init(struct name_index *x)
{
	memset(x, 0, sizeof(*x));
	hmap_init(&x->by_hash);
}

void name_index_free(struct name_index *x)
{
	free(x->names);
	hmap_free(&x->by_hash);
	memset(x, 0, sizeof(*x));
}

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
	return h;
}

int64_t name_index_find(const struct name_index *x, const char *s)
{
	size_t len = strlen(s);
	uint64_t h = fnv1a(s, len), at;
	for (uint64_t probe = 0;; probe++) {
		if (!hmap_get(&x->by_hash, h, (uint64_t)(uint32_t)len | probe << 32, &at))
			return -1;
		if (strcmp(x->names[at], s) == 0)
			return (int64_t)at;
	}
}

int64_t name_index_of(struct name_index *x, const char *s)
{
	size_t len = strlen(s);
	uint64_t h = fnv1a(s, len), at, probe = 0;
	for (;; probe++) {
		if (!hmap_get(&x->by_hash, h, (uint64_t)(uint32_t)len | probe << 32, &at))
			break;
		if (strcmp(x->names[at], s) == 0)
			return (int64_t)at;
	}
	if (x->n == x->cap) {
		size_t cap = x->cap ? 2 * x->cap : 1024;
		const char **grown = realloc(x->names, cap * sizeof(*grown));
		if (!grown)
			return -1;
		x->names = grown;
		x->cap = cap;
	}
	if (hmap_put(&x->by_hash, h, (uint64_t)(uint32_t)len | probe << 32, x->n))
		return -1;
	x->names[x->n] = s;
	return (int64_t)x->n++;
}
