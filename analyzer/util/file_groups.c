/* Items grouped by trace file; see file_groups.h. */
#include "file_groups.h"

#include <stdlib.h>
#include <string.h>

int file_groups_build(struct file_groups *g, const void *items, size_t n_items, size_t n_files,
		      uint32_t (*file_of)(const void *items, size_t i))
{
	memset(g, 0, sizeof(*g));
	g->order = malloc((n_items ? n_items : 1) * sizeof(*g->order));
	g->file_at = calloc(n_files + 1, sizeof(*g->file_at));
	if (!g->order || !g->file_at) {
		file_groups_free(g);
		return -1;
	}
	g->n_files = n_files;
	for (size_t i = 0; i < n_items; i++) {
		uint32_t f = file_of(items, i);
		if (f < n_files)
			g->file_at[f + 1]++;
	}
	for (size_t f = 0; f < n_files; f++)
		g->file_at[f + 1] += g->file_at[f];
	for (size_t i = 0; i < n_items; i++) { /* file_at[f] moves to file f + 1's start */
		uint32_t f = file_of(items, i);
		if (f < n_files)
			g->order[g->file_at[f]++] = i;
	}
	for (size_t f = n_files; f > 0; f--) /* back to each file's first item */
		g->file_at[f] = g->file_at[f - 1];
	g->file_at[0] = 0;
	return 0;
}

void file_groups_free(struct file_groups *g)
{
	free(g->order);
	free(g->file_at);
	memset(g, 0, sizeof(*g));
}
