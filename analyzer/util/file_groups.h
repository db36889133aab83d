/* Items of many trace files grouped by file, in their order within each: a
 * counting sort, since a file is an index below the set's count.  For the
 * passes that take the files one after the other (the clock alignment's
 * per-(instance, file) entries and its pairs of files, the findings'
 * second look at each file's processes).  Not a container: the items stay
 * where they are, and the groups name them by index. */
#ifndef FLIGHTREC_FILE_GROUPS_H
#define FLIGHTREC_FILE_GROUPS_H

#include <stddef.h>
#include <stdint.h>

struct file_groups {
	size_t *order;    /* item indices, file by file */
	size_t *file_at;  /* n_files + 1: file f's items are order[file_at[f] .. file_at[f + 1]) */
	size_t n_files;
};

/* Groups items 0 .. n_items - 1 by file_of(items, i); an item whose file is
 * n_files or more is left out.  0, or -1 when memory runs out (g empty). */
int file_groups_build(struct file_groups *g, const void *items, size_t n_items, size_t n_files,
		      uint32_t (*file_of)(const void *items, size_t i));
void file_groups_free(struct file_groups *g);

#endif
