/* One function's whole story, asked of the models after the pass: its
 * self and total CPU samples with its callers and callees (the cpu
 * model's flame tree, so the numbers are `flame`'s), the CUDA calls and
 * system calls made under it and the processes that ran it (the
 * stack_calls model's rows whose stack holds it), the GPU memory allocated
 * and in use at the peak under it (the mem model's alloc and in-use
 * trees: `flame --kind mem-alloc|mem-inuse`), the findings whose `where`
 * holds it, and where its code is (module and offset from the trace's
 * mappings and symbols; file and line for a Python frame).
 *
 * A frame is the function when its name equals it, or is it followed by
 * " (" (a Python frame, "forward (model.py:12)": every line of it).  A
 * sample is under the function when any frame of its stack is; recursion
 * counts a sample once in total (nodes under an outer match are skipped),
 * while callees are summed over every match.  Callers and callees skip
 * interpreter internals and unnamed offsets (frame_pick.h), so a Python
 * function's neighbours are Python functions and the native code it
 * reaches.  Not for output
 * (out_explain.c). */
#ifndef FLIGHTREC_FUNC_STORY_H
#define FLIGHTREC_FUNC_STORY_H

#include <stddef.h>
#include <stdint.h>
#include "frec_error.h"
#include "model_stack_calls.h"

struct trace_set;
struct model_cpu_result;
struct mem_result;
struct findings_result;

/* Does frame name `frame` stand for function `fn` (the rule above)? */
int func_frame_matches(const char *frame, const char *fn);

struct story_edge {
	const char *name;   /* interned by the tree */
	uint64_t samples;
};

struct story_call {
	char name[48];
	uint64_t count, total_ns, errors;
};

struct story_proc {
	uint32_t file, pid;
	int32_t rank;          /* -1 unknown */
	const char *comm;      /* the trace's, "" when unknown */
	uint64_t samples, cuda_calls, cuda_ns, syscalls;
};

struct story_input {
	const struct model_cpu_result *cpu;
	const struct mem_result *mem;           /* may be NULL */
	const struct findings_result *findings; /* may be NULL */
	const struct stack_calls_result *calls;
};

struct func_story {
	const char *function;        /* as asked */
	int found;                   /* some frame of the trace matched */
	uint64_t samples;            /* CPU samples kept (the tree's total) */
	uint64_t self, total;        /* CPU samples ending in it / under it */
	struct story_edge *callers, *callees; /* by samples, then name */
	size_t n_callers, n_callees;
	struct story_edge *frames;   /* the distinct matching frame names, by samples */
	size_t n_frames;
	struct story_call *cuda, *syscalls; /* by total time, then name */
	size_t n_cuda, n_syscalls;
	uint64_t cuda_calls, cuda_ns, cuda_errors, syscall_calls, syscall_ns, syscall_errors;
	int has_mem;                 /* the mem model saw device allocations */
	uint64_t mem_alloc_bytes, mem_alloc_total;   /* under it / all */
	uint64_t mem_inuse_bytes, mem_inuse_total;   /* at each file's peak */
	size_t *findings;            /* indices into findings_result.findings */
	size_t n_findings;
	struct story_proc *procs;    /* by file, pid */
	size_t n_procs;
	const char *module;          /* mapping path; NULL when unknown */
	int has_offset;
	uint64_t offset;             /* the symbol's start, a file offset in module */
	char source[256];            /* "model.py" for a Python frame; "" unknown */
	int line;                    /* its heaviest line; 0 unknown */
	/* not found: the frames whose names hold it, by CPU samples */
	struct story_edge *candidates;
	size_t n_candidates;
};

#define STORY_MAX_CANDIDATES 10
/* The callee standing for samples that end in interpreter internals or
 * unnamed offsets under the function. */
#define STORY_COLLAPSED "[interpreter or unnamed frames]"

/* Builds the story of fn over in (after trace_set_run); 0, or -1 when
 * memory runs out (err set).  Free with func_story_free. */
int func_story_build(struct trace_set *ts, const struct story_input *in, const char *fn,
		     struct func_story *out, struct frec_error *err);
void func_story_free(struct func_story *s);

#endif
