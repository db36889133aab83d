/* The CPU profile model: on-CPU samples per stack, as a flame tree, and
 * with model_opts.per_process one tree for each of the busiest processes. */
#ifndef FLIGHTREC_MODEL_CPU_H
#define FLIGHTREC_MODEL_CPU_H

#include <stdint.h>
#include "model.h"
#include "flame_tree.h"
#include "stack_profile.h"

extern const struct model_ops model_cpu_ops;

struct cpu_proc_tree {
	uint32_t file_index, pid;
	uint64_t samples;
	struct flame_tree *tree;        /* owned by the model */
};

struct model_cpu_result {
	struct flame_tree *tree;        /* owned by the model; NULL before finish */
	struct cpu_proc_tree *procs;    /* per_process busiest, most samples first */
	size_t n_procs;
	size_t procs_left_out;          /* processes with samples beyond per_process */
	uint64_t samples;               /* CPU samples in the trace(s) */
	uint64_t samples_kept;          /* after the pid filter: the tree's total */
	uint64_t samples_no_stack;      /* kept samples without frames ("[no stack]") */
	uint64_t samples_missing_stack; /* kept samples naming an undefined stack id */
	uint64_t distinct_stacks;       /* (file, pid, stack id) seen */
	/* model_opts.profile: samples and CPU time per (file, pid, tid, stack),
	 * the time as samples x the period of each file's --freq (its
	 * recorder's command line; 99 Hz when it gives none); else NULL */
	struct stack_profile *profile;
	uint64_t period_ns;             /* the first file's */
};

const struct model_cpu_result *model_cpu_result(const void *state);

#endif
