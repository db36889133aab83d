/* The CUDA API model: per function call counts, total and self time,
 * percentiles and errors; host-device copies by direction, pinned or
 * pageable host memory, and mode; async copies immediately followed by a
 * synchronize.  model_cuda.c explains the algorithms.  Not for memory
 * accounting (model_mem.c) nor for output (cmd_cuda.c). */
#ifndef FLIGHTREC_MODEL_CUDA_H
#define FLIGHTREC_MODEL_CUDA_H

#include <stddef.h>
#include <stdint.h>
#include "model.h"
#include "cuda_funcs.h"

extern const struct model_ops model_cuda_ops;

/* "cudaErrorMemoryAllocation" (runtime functions) or
 * "CUDA_ERROR_OUT_OF_MEMORY" (driver functions); NULL when unknown. */
const char *cuda_error_name(uint16_t func, int64_t code);
/* The suffix of func's per-thread-stream variant: "_ptsz" for calls that
 * take a stream, "_ptds" for the others. */
const char *cuda_variant_suffix(uint16_t func);

/* A gap under this between an async copy's return and the start of the
 * thread's next call, a synchronize, makes an "async then sync" finding. */
#define CUDA_SYNC_GAP_NS 50000ull

#define CUDA_MAX_ERROR_CODES 8

struct cuda_error_count {
	int64_t code;
	uint64_t count;
};

struct cuda_api_row {
	uint16_t func;        /* enum fr_cuda_func; 0 for "[unknown function]" */
	int ptsz;             /* the _ptsz/_ptds per-thread-stream variant */
	char name[48];        /* with the variant suffix */
	uint64_t count, total_ns, self_ns, max_ns, min_ns;
	uint64_t p50_ns, p99_ns;  /* log-linear histogram: within 0.4% (exact < 128 ns) */
	uint64_t errors;
	struct cuda_error_count codes[CUDA_MAX_ERROR_CODES]; /* most frequent first */
	size_t n_codes;
	uint64_t other_codes; /* errors whose codes did not fit */
};

enum cuda_dir { CUDA_DIR_H2D, CUDA_DIR_D2H, CUDA_DIR_D2D, CUDA_DIR_H2H, CUDA_DIR_UNKNOWN, CUDA_DIRS };
enum cuda_host { CUDA_HOST_PINNED, CUDA_HOST_PAGEABLE, CUDA_HOST_NA, CUDA_HOSTS };
enum cuda_mode { CUDA_MODE_SYNC, CUDA_MODE_ASYNC, CUDA_MODES };
const char *cuda_dir_name(enum cuda_dir d);
const char *cuda_host_name(enum cuda_host h);

struct cuda_copy_row {
	enum cuda_dir dir;
	enum cuda_host host;
	enum cuda_mode mode;
	uint64_t count, bytes, time_ns;
	uint64_t inferred;    /* direction inferred from the pointers (cudaMemcpyDefault) */
};

/* Copy calls by the cudaMemcpyKind the caller passed (enum
 * fr_cuda_copy_kind; index 5: a value out of range), every call counted
 * as made: failed ones and nested ones too. */
struct cuda_kind_count {
	uint64_t calls, bytes, total_ns;
};
#define CUDA_KINDS 6

struct cuda_sync_stack {
	uint32_t file, pid, stack_id; /* the copy's stack */
	uint64_t count, sync_ns, bytes;
};

struct cuda_result {
	uint64_t events;             /* CUDA events kept */
	struct cuda_api_row *rows;   /* by total time, descending */
	size_t n_rows;
	struct cuda_copy_row *copies; /* non-empty rows, by bytes descending */
	size_t n_copies;
	uint64_t nested_copies;      /* copies inside another copy call (counted once) */
	struct cuda_kind_count kinds[CUDA_KINDS];
	uint64_t async_then_sync, async_then_sync_ns;
	struct cuda_sync_stack *sync_stacks; /* by count, descending */
	size_t n_sync_stacks;
	size_t threads;              /* distinct (file, tid) */
	uint64_t nesting_overflow;   /* calls past the per-thread nesting window */
};

const struct cuda_result *model_cuda_result(const void *state);

/* One successful copy call as the model classifies it, during the pass
 * (nested copies too: a cudaMemcpy's cuMemcpy arrives first, inside it).
 * Models that need copies one by one (model_findings: pageable copies in
 * GPU-idle time) subscribe rather than keep pinned ranges of their own. */
struct cuda_copy_seen {
	uint32_t file, pid, tid, stack_id;
	uint16_t func;
	uint16_t flags;     /* the call's enum fr_cuda_flags (_ptsz variant) */
	int32_t device;     /* the thread's device, -1 unknown */
	enum cuda_dir dir;
	enum cuda_host host;
	enum cuda_mode mode;
	uint64_t start_ns, duration_ns, bytes;
	uint64_t stream;    /* the stream handle an async copy names (0 for the others) */
};
/* A nonzero return stops the pass as out of memory would. */
typedef int (*cuda_copy_fn)(void *ctx, const struct cuda_copy_seen *c);
void model_cuda_on_copy(void *state, cuda_copy_fn fn, void *ctx);

#endif
