/* The GPU memory model: a ledger of CUDA allocations per (file, pid,
 * device), and what it yields: in-use over time, peaks, bytes per stack at
 * the peak or at a chosen instant, bytes allocated per stack, leaks, failed
 * allocations with their top holders, frees of memory allocated before the
 * recording, and the caching-allocator label.  model_mem.c explains the
 * algorithms.  Not for output: cmd_memory.c and cmd_flame.c print results,
 * out_mem_stacks.c prints stacks. */
#ifndef FLIGHTREC_MODEL_MEM_H
#define FLIGHTREC_MODEL_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "model.h"
#include "cuda_funcs.h"
#include "flame_tree.h"
#include "mem_curve.h" /* struct mem_point */
#include "stack_profile.h"

extern const struct model_ops model_mem_ops;


/* Memory spaces a series counts. */
enum mem_space { MEM_SPACE_DEVICE = 0, MEM_SPACE_PINNED_HOST = 1 };

/* Per-file extras the command sets after asking for the model, before the
 * run: the instant for --at SECONDS (seconds from the file's start_mono_ns). */
struct trace_set;
int model_mem_set_at(void *state, struct trace_set *ts, uint64_t at_ns_from_start);

#define MEM_TOP 5

struct mem_stack_bytes {
	uint32_t stack_id; /* in file `file`; 0: no stack */
	uint64_t bytes;
	uint64_t count;    /* allocations (leaks: still live; alloc: made) */
};

/* One (file, pid, device, space) ledger. */
struct mem_series {
	uint32_t file, pid;
	int32_t device;           /* -1 unknown (and for pinned host memory) */
	enum mem_space space;
	uint64_t allocs, alloc_bytes;      /* successful allocations */
	uint64_t frees, freed_bytes;       /* frees of known allocations */
	uint64_t failed_allocs;            /* result != 0 */
	uint64_t before_frees;             /* frees of addresses never seen allocated:
					      allocated before the recording (bytes unknown) */
	uint64_t failed_frees;             /* free calls with result != 0 (not applied) */
	uint64_t replaced;                 /* an allocation returned a live address: its
					      free was missed (dropped event); old one released */
	uint64_t managed_bytes_peak;       /* cudaMallocManaged bytes live at most */
	uint64_t peak_bytes, peak_t_ns;    /* exact; t from the start of the recording */
	uint64_t end_bytes, end_count;     /* still live at the end: never freed by the
					      end of the recording */
	uint64_t first_t_ns, last_t_ns;
	struct mem_point *points;          /* bounded: see model_mem.c */
	size_t n_points;
	struct mem_stack_bytes top_at_peak[MEM_TOP]; /* by bytes at this series' peak */
	size_t n_top_at_peak;
	struct mem_stack_bytes top_leaks[MEM_TOP];   /* by bytes live at the end */
	size_t n_top_leaks;
};

/* One process (file, pid) over its device series. */
struct mem_process {
	uint32_t file, pid;
	uint64_t allocs, frees, end_count, seg_2mib; /* device memory */
	/* Caching-allocator label (see model_mem.c for the rule). */
	int caching_allocator;
	int pytorch_like;   /* >= 90% of allocation sizes are multiples of 2 MiB */
};

#define MEM_MAX_FAILURES 64

struct mem_failure {
	uint32_t file, pid, tid;
	int32_t device;
	uint16_t func;
	int64_t error;
	uint64_t t_ns;          /* from the start of the recording */
	uint64_t bytes;         /* requested */
	uint32_t stack_id;
	uint64_t inuse_bytes;   /* that process's bytes on that device then */
	struct mem_stack_bytes holders[MEM_TOP]; /* top stacks by live bytes then */
	size_t n_holders;
};

/* Per-file view. */
struct mem_file {
	uint64_t peak_bytes, peak_t_ns;   /* total device bytes (all kept pids) */
	uint64_t at_t_ns;                 /* --at: the instant; UINT64_MAX: none */
	int at_after_end;                 /* no event after --at: the state at the end */
	uint64_t at_bytes;                /* total at --at (or at the peak without --at) */
	uint64_t null_frees;              /* free(NULL): valid no-ops */
	uint64_t implausible;             /* successful allocation of > 2^48 bytes or ptr 0 */
	uint64_t nested_dups;             /* runtime calls around a driver call already
					     counted (cudaMalloc around cuMemAlloc_v2) */
};

struct mem_result {
	uint64_t cuda_events;       /* CUDA events seen (all funcs, all pids) */
	uint64_t mem_events;        /* memory events kept (after the pid filter) */
	uint64_t device_allocs;     /* successful + failed device allocations kept */
	struct mem_series *series;  /* sorted by file, pid, space, device */
	size_t n_series;
	struct mem_process *procs;
	size_t n_procs;
	struct mem_file *files;     /* indexed by file index */
	size_t n_files;
	struct mem_failure failures[MEM_MAX_FAILURES];
	size_t n_failures_kept;
	uint64_t n_failures;        /* may exceed the kept ones (first kept) */
	/* Device memory only; built at finish. */
	struct flame_tree *inuse;   /* bytes per stack at --at, else at each file's peak */
	struct flame_tree *alloc;   /* bytes allocated per stack over the run */
	/* model_opts.profile: the same as stack profiles (thread unknown: 0),
	 * else NULL; inuse_profile has a value only, no count */
	struct stack_profile *inuse_profile, *alloc_profile;
	uint64_t before_frees;      /* sum over series */
	size_t live_entries_max;    /* high-water mark of the live-allocation table */
	size_t stacks;              /* distinct (file, pid, device, space, stack) */
};

const struct mem_result *model_mem_result(const void *state);

/* One change of the ledger, as the model applies it.  Outputs that show
 * allocations one by one (SQLite's allocations and memory_inuse, the
 * timeline's memory counters) subscribe to these rather than keeping a
 * ledger of their own, so every output counts exactly what `memory` counts
 * (nested runtime/driver calls once, cuMemCreate/cuMemRelease, pinned host
 * memory apart, the same times). */
enum mem_change_kind {
	MEM_ALLOCATED,   /* a successful allocation, live from t_ns */
	MEM_FREED,       /* an allocation ended at t_ns: freed (end_tid) or its
			    address returned again by a later allocation (end_tid
			    0: the free was not recorded) */
	MEM_FAILED,      /* an allocation that returned an error: nothing held */
	MEM_LIVE_AT_END, /* at finish: never freed in the recording */
};

struct mem_change {
	enum mem_change_kind kind;
	uint32_t file, pid;
	int32_t device;          /* the series' device: -1 for pinned host memory */
	enum mem_space space;
	uint16_t func;           /* the allocating call */
	int managed;             /* cudaMallocManaged */
	uint32_t alloc_tid, end_tid;
	uint64_t ptr, bytes;     /* FAILED: ptr 0, bytes requested */
	uint32_t stack_id;       /* the allocating stack */
	int64_t error;           /* FAILED: the call's result */
	uint64_t alloc_ns, t_ns; /* the file's CLOCK_MONOTONIC; t_ns: of this change */
	uint64_t inuse_bytes;    /* the series' bytes in use after the change */
};

/* Called for every change, during the pass (MEM_LIVE_AT_END during finish);
 * a nonzero return stops the pass as out of memory would. */
typedef int (*mem_change_fn)(void *ctx, const struct mem_change *c);
void model_mem_on_change(void *state, mem_change_fn fn, void *ctx);

/* Frames of a stack, root first, as the flame graphs name them: *n set,
 * pointers valid until the set's symbolizer is freed.  Returns an array the
 * caller frees, or NULL (out of memory).  Stack 0 reads "[no stack]", an
 * undefined id "[missing stack]".  Printed by out_mem_stacks.h. */
const char **mem_stack_frames(struct trace_set *ts, uint32_t file, uint32_t stack_id,
			      size_t *n);

#endif
