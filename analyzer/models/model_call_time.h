/* Time spent in calls, by the caller's stack: "cuda_time" (CUDA API
 * calls; the call made is the leaf frame) and "syscall_time" (system
 * calls; "[syscall] NAME" is the leaf).  A flame tree (value: nanoseconds)
 * and, with model_opts.profile, a stack profile (calls and nanoseconds per
 * thread).
 *
 * CUDA: a runtime call calls the driver (cudaMemcpy -> cuMemcpy), and
 * both are probed; each call counts its own time, without the calls
 * nested in it on the same thread, so the total is the time threads spent
 * in the API, counted once.  Kernel launches are many, and the recorder
 * takes the stack of one launch in --launch-stack-every (64 by default):
 * the others count under "[no stack]".
 *
 * System calls: the recorder keeps those of at least --syscall-min-us;
 * in dwarf stack mode a call takes a stack when it lasts 1 ms or more and
 * one call in 64 otherwise; calls without one count under "[no stack]".
 *
 * Off-CPU ("offcpu_time", the sched family): the time a thread spent
 * blocked in each system call of at least --sched-min-us off CPU, by the
 * call's stack, "[off-cpu] NAME" as the leaf; every such call has a stack. */
#ifndef FLIGHTREC_MODEL_CALL_TIME_H
#define FLIGHTREC_MODEL_CALL_TIME_H

#include <stdint.h>
#include "model.h"
#include "flame_tree.h"
#include "stack_profile.h"

extern const struct model_ops model_cuda_time_ops;
extern const struct model_ops model_syscall_time_ops;
extern const struct model_ops model_offcpu_time_ops;

struct call_time_result {
	struct flame_tree *tree;        /* owned by the model; NULL before finish */
	struct stack_profile *profile;  /* model_opts.profile, else NULL */
	uint64_t calls;                 /* kept (after the pid filter) */
	uint64_t calls_no_stack;        /* of them, without a stack */
	uint64_t total_ns;              /* the tree's total */
	uint64_t nested;                /* CUDA calls inside another on their thread */
	uint64_t launches, launches_with_stack;
	unsigned launch_stack_every;    /* the first file's recorder option (default 64) */
};

const struct call_time_result *model_call_time_result(const void *state);

#endif
