/* The syscalls model: count, total and maximum duration, failures per
 * system call number, per file. */
#ifndef FLIGHTREC_MODEL_SYSCALLS_H
#define FLIGHTREC_MODEL_SYSCALLS_H

#include <stdint.h>
#include "model.h"

extern const struct model_ops model_syscalls_ops;

/* Numbers at or above this share the last bucket (hostile or x32 numbers
 * must not make the table grow with the events). */
#define SYSCALLS_MAX_NR 1024u

struct syscall_stat {
	uint32_t nr;           /* SYSCALLS_MAX_NR: "any larger number" */
	uint64_t count;
	uint64_t total_ns;
	uint64_t max_ns;
	uint64_t failed;       /* ret < 0 */
};

/* Up to max_out stats of file_index with count > 0, most total time first;
 * returns how many were written. */
size_t model_syscalls_top(const void *state, uint32_t file_index,
			  struct syscall_stat *out, size_t max_out);

#endif
