/* Events kept per process (see proc_lists.h). */
#include "proc_lists.h"
#include "grow.h"

#include <stdlib.h>
#include <string.h>

void proc_lists_init(struct proc_lists *pl, size_t elem)
{
	memset(pl, 0, sizeof(*pl));
	pl->elem = elem;
	hmap_init(&pl->index);
}

void proc_lists_free(struct proc_lists *pl)
{
	for (size_t i = 0; i < pl->n; i++)
		free(pl->lists[i].items);
	free(pl->lists);
	hmap_free(&pl->index);
	pl->lists = NULL;
	pl->n = pl->cap = 0;
}

void *proc_lists_append(struct proc_lists *pl, uint32_t file_index, uint32_t pid)
{
	int created;
	uint64_t *slot = hmap_slot(&pl->index, file_index, pid, &created);
	if (!slot)
		return NULL;
	if (created) {
		if (grow_array((void **)&pl->lists, &pl->cap, pl->n + 1, sizeof(*pl->lists), 16)) {
			*slot = 0; /* an empty list nobody can reach: harmless */
			return NULL;
		}
		pl->lists[pl->n] = (struct proc_list){ .file_index = file_index, .pid = pid };
		*slot = ++pl->n;
	}
	if (!*slot)
		return NULL;
	struct proc_list *l = &pl->lists[*slot - 1];
	if (grow_array(&l->items, &l->cap, l->n + 1, pl->elem, 64))
		return NULL;
	return (char *)l->items + pl->elem * l->n++;
}

static int cmp_list(const void *a, const void *b)
{
	const struct proc_list *x = a, *y = b;
	if (x->file_index != y->file_index)
		return x->file_index < y->file_index ? -1 : 1;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

void proc_lists_sort(struct proc_lists *pl)
{
	if (pl->n)
		qsort(pl->lists, pl->n, sizeof(*pl->lists), cmp_list);
	for (size_t i = 0; i < pl->n; i++) {
		uint64_t *slot = hmap_slot(&pl->index, pl->lists[i].file_index, pl->lists[i].pid, NULL);
		if (slot) /* present: never a new insertion */
			*slot = i + 1;
	}
}

struct proc_list *proc_lists_find(const struct proc_lists *pl, uint32_t file_index, uint32_t pid)
{
	uint64_t v;
	if (!hmap_get(&pl->index, file_index, pid, &v) || !v || v > pl->n)
		return NULL;
	return &pl->lists[v - 1];
}

void proc_list_release(struct proc_list *l)
{
	free(l->items);
	l->items = NULL;
	l->cap = 0;
}
