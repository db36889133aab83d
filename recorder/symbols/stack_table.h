/* Deduplicated stacks of one recording: (pid, kernel ips, user ips) -> id.
 * Owned by the drain thread while recording; read by the symbol writer after
 * the drain has stopped.  Ids start at 1 (0 is FR_STACK_NONE). */
#ifndef FLIGHTREC_STACK_TABLE_H
#define FLIGHTREC_STACK_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct stack_table;

struct stack_entry {
	uint32_t pid;
	uint16_t n_kernel;
	uint16_t n_user;
	const uint64_t *ips; /* n_kernel kernel ips (leaf first), then n_user */
};

struct stack_table *stack_table_new(void);
void stack_table_free(struct stack_table *t);

/* Returns the id of this stack; *is_new tells whether it was just added
 * (the caller then writes its FR_REC_STACK record).  0 on allocation
 * failure. */
uint32_t stack_table_intern(struct stack_table *t, uint32_t pid,
			    const uint64_t *kernel_ips, uint16_t n_kernel,
			    const uint64_t *user_ips, uint16_t n_user, bool *is_new);

size_t stack_table_count(const struct stack_table *t);
/* id in 1..count */
bool stack_table_get(const struct stack_table *t, uint32_t id, struct stack_entry *out);

#endif
