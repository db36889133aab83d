/* Open addressing with linear probing and a load factor under 1/2; see
 * hmap.h for what it is (and is not) for. */
#include "hmap.h"

#include <stdlib.h>

static uint64_t hmap_hash(uint64_t a, uint64_t b)
{
	/* splitmix64 finaliser over both words: ids and addresses are far from
	 * random in their low bits. */
	uint64_t x = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

void hmap_init(struct hmap *m)
{
	m->slots = NULL;
	m->cap = 0;
	m->count = 0;
}

void hmap_free(struct hmap *m)
{
	free(m->slots);
	hmap_init(m);
}

static struct hmap_slot *hmap_find(const struct hmap *m, uint64_t a, uint64_t b)
{
	if (!m->cap)
		return NULL;
	size_t mask = m->cap - 1;
	for (size_t i = hmap_hash(a, b) & mask;; i = (i + 1) & mask) {
		struct hmap_slot *s = &m->slots[i];
		if (!s->used || (s->key_a == a && s->key_b == b))
			return s;
	}
}

int hmap_get(const struct hmap *m, uint64_t a, uint64_t b, uint64_t *value)
{
	struct hmap_slot *s = hmap_find(m, a, b);
	if (!s || !s->used)
		return 0;
	*value = s->value;
	return 1;
}

static int hmap_grow(struct hmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	if (cap < m->cap || cap > SIZE_MAX / sizeof(struct hmap_slot))
		return -1;
	struct hmap_slot *slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -1;
	struct hmap old = *m;
	m->slots = slots;
	m->cap = cap;
	for (size_t i = 0; i < old.cap; i++) {
		if (!old.slots[i].used)
			continue;
		struct hmap_slot *s = hmap_find(m, old.slots[i].key_a, old.slots[i].key_b);
		*s = old.slots[i];
	}
	free(old.slots);
	return 0;
}

uint64_t *hmap_slot(struct hmap *m, uint64_t a, uint64_t b, int *created)
{
	if (created)
		*created = 0;
	struct hmap_slot *s = hmap_find(m, a, b);
	if (s && s->used)
		return &s->value;
	if ((m->count + 1) * 2 > m->cap) {
		if (hmap_grow(m))
			return NULL;
		s = hmap_find(m, a, b);
	}
	s->used = 1;
	s->key_a = a;
	s->key_b = b;
	s->value = 0;
	m->count++;
	if (created)
		*created = 1;
	return &s->value;
}

int hmap_put(struct hmap *m, uint64_t a, uint64_t b, uint64_t value)
{
	uint64_t *v = hmap_slot(m, a, b, NULL);
	if (!v)
		return -1;
	*v = value;
	return 0;
}
