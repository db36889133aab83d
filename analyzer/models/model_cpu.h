/* The CPU profile model: on-CPU samples per stack, as a flame tree. */
#ifndef FLIGHTREC_MODEL_CPU_H
#define FLIGHTREC_MODEL_CPU_H

#include <stdint.h>
#include "model.h"
#include "flame_tree.h"

extern const struct model_ops model_cpu_ops;

struct model_cpu_result {
	struct flame_tree *tree;        /* owned by the model; NULL before finish */
	uint64_t samples;               /* CPU samples in the trace(s) */
	uint64_t samples_kept;          /* after the pid filter: the tree's total */
	uint64_t samples_no_stack;      /* kept samples without frames ("[no stack]") */
	uint64_t samples_missing_stack; /* kept samples naming an undefined stack id */
	uint64_t distinct_stacks;       /* (file, pid, stack id) seen */
};

const struct model_cpu_result *model_cpu_result(const void *state);

#endif
