/* The calls-per-stack model: CPU samples, CUDA calls and system calls
 * counted per (file, pid, stack, function), for the questions asked after
 * the pass about one function or one stack (explain: which CUDA calls ran
 * under a function; diff: which stacks' CUDA time changed).  The cpu, cuda
 * and syscalls models answer per stack or per function, never both; this
 * one keeps the cross product, bounded by distinct (stack, function) pairs,
 * never by the number of calls.  Counts are the other models' counts:
 * every CUDA call (nested ones too, as `cuda` counts them), errors as a
 * result != 0; every system call, failures as ret < 0.  Not for output. */
#ifndef FLIGHTREC_MODEL_STACK_CALLS_H
#define FLIGHTREC_MODEL_STACK_CALLS_H

#include <stddef.h>
#include <stdint.h>
#include "model.h"

extern const struct model_ops model_stack_calls_ops;

enum sc_kind { SC_CPU, SC_CUDA, SC_SYSCALL };

struct sc_row {
	uint32_t file, pid, stack_id; /* stack_id canonical; 0: no stack */
	enum sc_kind kind;
	uint32_t func;                /* SC_CUDA: func * 2 + ptsz (CUDA_FUNC_LIMIT * 2: unknown);
					 SC_SYSCALL: nr (capped as the syscalls model caps it);
					 SC_CPU: 0 */
	uint64_t count, total_ns, errors;
};

struct stack_calls_result {
	struct sc_row *rows;          /* by file, pid, stack, kind, func */
	size_t n_rows;
	/* The sampling rate the trace does not record, estimated from the
	 * gaps between consecutive CPU samples of one thread under a second:
	 * a thread on CPU is sampled once a period, one that sleeps between
	 * samples only lengthens its gap, so the short end (the 10th
	 * percentile) is the period.  0 when no thread has two samples. */
	uint64_t sample_gap_ns;
	double sample_hz;             /* 1e9 / sample_gap_ns, or 0 */
};

const struct stack_calls_result *model_stack_calls_result(const void *state);

/* The name of a row's function as `cuda` and `syscalls` print it:
 * "cudaMemcpyAsync_ptsz", "[unknown function]", "read", "syscall_999";
 * buf for the ones that need formatting. */
const char *sc_func_name(const struct sc_row *r, char *buf, size_t len);

#endif
