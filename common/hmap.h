/* An open-addressing hash map from a two-word key to a 64-bit value: the one
 * map the analyzer uses for stack ids, dso ids, sample counts and symbol
 * caches.  Not a general container: no deletion (nothing the analyzer builds
 * shrinks during a run), and iteration order is the slot order. */
#ifndef FLIGHTREC_HMAP_H
#define FLIGHTREC_HMAP_H

#include <stddef.h>
#include <stdint.h>

struct hmap_slot {
	uint64_t key_a;
	uint64_t key_b;
	uint64_t value;
	uint64_t used; /* 0: empty */
};

struct hmap {
	struct hmap_slot *slots;
	size_t cap;   /* power of two, or 0 */
	size_t count;
};

void hmap_init(struct hmap *m);
void hmap_free(struct hmap *m);

/* Returns 1 and sets *value when (a, b) is present, else 0. */
int hmap_get(const struct hmap *m, uint64_t a, uint64_t b, uint64_t *value);

/* The value slot of (a, b), inserted as 0 (and *created = 1) when absent.
 * NULL only when memory runs out.  The pointer is valid until the next
 * insertion. */
uint64_t *hmap_slot(struct hmap *m, uint64_t a, uint64_t b, int *created);

/* Sets (a, b) -> value; 0 or -1 when memory runs out. */
int hmap_put(struct hmap *m, uint64_t a, uint64_t b, uint64_t value);

#endif
