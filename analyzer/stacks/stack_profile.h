/* A profile as stacks with values: one row per (file, pid, tid, stack id,
 * leaf), each with a count and a value (samples and CPU time, allocations
 * and bytes, calls and time).  What the profile formats (pprof, speedscope)
 * are written from: unlike a flame tree it keeps who (pid, thread) and
 * where (the stack id, so ips, mappings and build ids can be written).
 * Rows grow with distinct stacks per thread, never with events.  A model
 * fills one when model_opts.profile asks; it owns it. */
#ifndef FLIGHTREC_STACK_PROFILE_H
#define FLIGHTREC_STACK_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include "hmap.h"

#define STACK_LEAF_NONE UINT32_MAX

struct stack_row {
	uint32_t file, pid, tid; /* tid 0: the model does not know the thread */
	uint32_t stack_id;
	uint32_t leaf;           /* a frame after the stack (the call itself):
				    its index in leaf_names, or STACK_LEAF_NONE */
	uint32_t next;           /* the next row of the same key but another
				    leaf, + 1; 0: none */
	uint64_t count, value;
};

struct stack_profile {
	struct stack_row *rows;
	size_t n_rows, cap_rows;
	struct hmap index;       /* (file << 32 | pid, stack_id << 32 | tid) -> first row + 1 */
	/* What the numbers are, as pprof names them: count_type NULL when
	 * rows carry a value only ("inuse_space" at one instant). */
	const char *count_type, *count_unit; /* "samples", "count" */
	const char *value_type, *value_unit; /* "cpu", "nanoseconds" */
	uint64_t period;          /* value of one count, 0 when not fixed */
	const char *period_type, *period_unit;
	/* The leaf frames' names by code (owned by the model; an entry may be
	 * NULL: "[unknown]"). */
	const char *const *leaf_names;
	size_t n_leaf_names;
};

void stack_profile_init(struct stack_profile *p);
void stack_profile_free(struct stack_profile *p);
/* Adds count and value to the row of (file, pid, tid, stack_id, leaf).
 * 0, or -1 when memory runs out. */
int stack_profile_add(struct stack_profile *p, uint32_t file, uint32_t pid, uint32_t tid,
		      uint32_t stack_id, uint32_t leaf, uint64_t count, uint64_t value);
/* Sorts the rows by (file, pid, tid, stack id, leaf), so every output is
 * deterministic (the index is dropped: no add after it). */
void stack_profile_sort(struct stack_profile *p);
uint64_t stack_profile_total(const struct stack_profile *p); /* sum of values */
/* The name of row r's leaf frame, or NULL when it has none. */
const char *stack_profile_leaf(const struct stack_profile *p, const struct stack_row *r);

#endif
