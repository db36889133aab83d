/* Strings numbered in the order first seen, by content: the string table
 * of pprof and the frame table of speedscope.  The strings are not
 * copied: each must outlive the index. */
#ifndef FLIGHTREC_NAME_INDEX_H
#define FLIGHTREC_NAME_INDEX_H

#include <stddef.h>
#include <stdint.h>
#include "hmap.h"

struct name_index {
	const char **names;
	size_t n, cap;
	struct hmap by_hash; /* (hash, length | probe << 32) -> index */
};

void name_index_init(struct name_index *x);
void name_index_free(struct name_index *x);
/* s's number, s added when new; -1 when memory runs out. */
int64_t name_index_of(struct name_index *x, const char *s);
/* s's number, or -1 when it is not in the index. */
int64_t name_index_find(const struct name_index *x, const char *s);

#endif
