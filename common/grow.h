/* The one growing array of flightrec (format, ledger, recorder and
 * analyzer): an array of elem-byte elements whose capacity doubles (from
 * first_cap) until it holds need, with the sizes checked so a hostile count
 * fails the allocation instead of wrapping.  Not for hash tables (hmap.c, mem_live.c size their own) nor
 * for the string pool (strpool.c). */
#ifndef FLIGHTREC_GROW_H
#define FLIGHTREC_GROW_H

#include <stddef.h>
#include <stdint.h>

/* Makes *p hold at least need elements of elem bytes: nothing when *cap >=
 * need, else realloc to the first capacity of first_cap, 2 * first_cap, ...
 * (or *cap doubled) that is >= need, and *cap set to it.  0, or -1 with *p
 * and *cap unchanged (out of memory, or need * elem beyond SIZE_MAX). */
int grow_array(void **p, size_t *cap, size_t need, size_t elem, size_t first_cap);

/* A byte buffer: grow_array of 1-byte elements from 4 KiB. */
static inline int grow_bytes(uint8_t **buf, size_t *cap, size_t need)
{
	void *p = *buf;
	int rc = grow_array(&p, cap, need, 1, 4096);
	*buf = p;
	return rc;
}

#endif
