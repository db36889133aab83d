/* Events kept per process: one growing array per (file, pid), in the order
 * they were fed, for models that must keep a kind of event until finish
 * (the NCCL calls, the stragglers model's samples).  Kept per process so
 * that finish sorts and walks one process at a time (no sorted copy of
 * every event of every rank) and can free each list once it is used.  Not
 * for per-event state that can be summed as it streams. */
#ifndef FLIGHTREC_PROC_LISTS_H
#define FLIGHTREC_PROC_LISTS_H

#include <stddef.h>
#include <stdint.h>
#include "hmap.h"

struct proc_list {
	uint32_t file_index;
	uint32_t pid;
	void *items;              /* n elements of the lists' elem bytes */
	size_t n, cap;
};

struct proc_lists {
	size_t elem;
	struct proc_list *lists;  /* first-seen order until proc_lists_sort */
	size_t n, cap;
	struct hmap index;        /* (file, pid) -> index + 1 */
};

void proc_lists_init(struct proc_lists *pl, size_t elem);
void proc_lists_free(struct proc_lists *pl);

/* Room for one more element at the end of (file, pid)'s list; NULL when
 * memory runs out. */
void *proc_lists_append(struct proc_lists *pl, uint32_t file_index, uint32_t pid);

/* The lists in (file, pid) order; the index follows. */
void proc_lists_sort(struct proc_lists *pl);

/* (file, pid)'s list, or NULL. */
struct proc_list *proc_lists_find(const struct proc_lists *pl, uint32_t file_index, uint32_t pid);

/* Frees one list's elements (n stays, items NULL). */
void proc_list_release(struct proc_list *l);

#endif
