/* Rows of a stack profile; see stack_profile.h. */
#include "stack_profile.h"
#include "grow.h"

#include <stdlib.h>
#include <string.h>

void stack_profile_init(struct stack_profile *p)
{
	memset(p, 0, sizeof(*p));
	hmap_init(&p->index);
}

void stack_profile_free(struct stack_profile *p)
{
	if (!p)
		return;
	free(p->rows);
	hmap_free(&p->index);
	p->rows = NULL;
	p->n_rows = p->cap_rows = 0;
}

int stack_profile_add(struct stack_profile *p, uint32_t file, uint32_t pid, uint32_t tid,
		      uint32_t stack_id, uint32_t leaf, uint64_t count, uint64_t value)
{
	uint64_t a = (uint64_t)file << 32 | pid, b = (uint64_t)stack_id << 32 | tid;
	uint64_t *first = hmap_slot(&p->index, a, b, NULL);
	if (!first)
		return -1;
	uint64_t last = 0; /* the chain's last row + 1 */
	for (uint64_t at = *first; at; at = p->rows[at - 1].next) {
		struct stack_row *r = &p->rows[at - 1];
		if (r->leaf == leaf) {
			r->count += count;
			r->value += value;
			return 0;
		}
		last = at;
	}
	if (p->n_rows >= UINT32_MAX - 1)
		return -1;
	void *rows = p->rows;
	if (grow_array(&rows, &p->cap_rows, p->n_rows + 1, sizeof(*p->rows), 256))
		return -1;
	p->rows = rows;
	p->rows[p->n_rows] = (struct stack_row){ .file = file, .pid = pid, .tid = tid,
		.stack_id = stack_id, .leaf = leaf, .count = count, .value = value };
	uint32_t id = (uint32_t)++p->n_rows;
	if (last)
		p->rows[last - 1].next = id;
	else
		*hmap_slot(&p->index, a, b, NULL) = id; /* present: no insertion, no failure */
	return 0;
}

static int row_order(const void *x, const void *y)
{
	const struct stack_row *a = x, *b = y;
	if (a->file != b->file)
		return a->file < b->file ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->stack_id != b->stack_id)
		return a->stack_id < b->stack_id ? -1 : 1;
	return a->leaf < b->leaf ? -1 : a->leaf > b->leaf;
}

void stack_profile_sort(struct stack_profile *p)
{
	hmap_free(&p->index);
	hmap_init(&p->index);
	if (p->n_rows > 1)
		qsort(p->rows, p->n_rows, sizeof(*p->rows), row_order);
	for (size_t i = 0; i < p->n_rows; i++)
		p->rows[i].next = 0;
}

uint64_t stack_profile_total(const struct stack_profile *p)
{
	uint64_t t = 0;
	for (size_t i = 0; i < p->n_rows; i++)
		t += p->rows[i].value;
	return t;
}

const char *stack_profile_leaf(const struct stack_profile *p, const struct stack_row *r)
{
	if (r->leaf == STACK_LEAF_NONE)
		return NULL;
	const char *name = r->leaf < p->n_leaf_names ? p->leaf_names[r->leaf] : NULL;
	return name ? name : "[unknown]";
}
