/* GPU kernel times (probe family gpu: libflightrec_cupti.so's records):
 * each kernel joined to its launch (the FR_EV_GPU_LAUNCH with the same
 * CUPTI correlation id in the same process, which carries the launching
 * thread's stack) and through it to the CUDA API call around that launch
 * (cudaLaunchKernel, cuLaunchKernel, a graph launch: the FR_EV_CUDA of the
 * same thread whose span holds it).  Kernels by name (count, total, p50,
 * p99), by device and stream (busy time), each process's GPU busy time
 * (the union of its kernels' spans over all its devices, for findings) and
 * the GPU time flame graph ("gpu_time": kernel time by launch stack, the
 * kernel as the leaf).  Not for host-side launch costs (model_cuda.c) nor
 * for output (cmd_cuda.c, out_flame.c, out_timeline.c). */
#ifndef FLIGHTREC_MODEL_GPU_H
#define FLIGHTREC_MODEL_GPU_H

#include <stddef.h>
#include <stdint.h>
#include "model.h"
#include "model_call_time.h"

extern const struct model_ops model_gpu_ops;

struct gpu_kernel_row {
	const char *name;     /* demangled where it can be; owned by the model */
	uint64_t count, total_ns, min_ns, max_ns;
	uint64_t p50_ns, p99_ns; /* log-linear histogram: within 0.4% (exact < 128 ns) */
};

struct gpu_stream_row {
	uint32_t file, pid, device, stream;
	uint64_t kernels, busy_ns;   /* busy: the union of its kernels' spans */
	uint64_t first_ns, last_ns;  /* first start, last end (the file's clock) */
};

/* One process's GPU work: the union of its kernels' spans, merged, in time
 * order (all its devices together: what findings compares with its idle
 * intervals). */
struct gpu_span {
	uint64_t start_ns, end_ns;
};
struct gpu_proc {
	uint32_t file, pid;
	uint64_t kernels, busy_ns;
	struct gpu_span *busy;       /* merged spans, by start */
	size_t n_busy;
};

struct gpu_result {
	uint64_t kernels;            /* kernel records kept (after the pid filter) */
	uint64_t launches;           /* launch records kept */
	uint64_t joined;             /* kernels whose launch is in the trace */
	uint64_t in_api_call;        /* of those, launches inside a recorded CUDA launch call */
	uint64_t launches_without_kernel;
	uint64_t dropped;            /* kernel records the library said it lost */
	uint64_t bad_times;          /* records whose end precedes their start (counted as 0 ns) */
	uint64_t total_ns;           /* sum of kernel durations */
	struct gpu_kernel_row *rows; /* by total time, descending */
	size_t n_rows;
	struct gpu_stream_row *streams; /* by (file, pid, device, stream) */
	size_t n_streams;
	struct gpu_proc *procs;      /* by (file, pid) */
	size_t n_procs;
	/* "gpu_time": value = kernel nanoseconds, count = kernels; kernels
	 * without their launch count under [no launch] */
	struct call_time_result flame;
};

const struct gpu_result *model_gpu_result(const void *state);
/* A kernel record's name as every output shows it: demangled when it is a
 * whole C++ name, bytes that are not printable ASCII (and quotes and
 * backslashes) as '?', "[unnamed kernel]" when empty.  The name in buf
 * (cap >= FR_GPU_KERNEL_NAME + 1), or a malloc'd demangled one the caller
 * frees (*to_free set); NULL when memory runs out. */
const char *gpu_kernel_name(const char *raw, char *buf, char **to_free);
/* The process's merged busy spans, or NULL when it ran no kernel the trace
 * recorded. */
const struct gpu_proc *model_gpu_proc(const struct gpu_result *r, uint32_t file, uint32_t pid);
/* The index of p's first merged span ending after a (n_busy: none). */
size_t gpu_first_span_after(const struct gpu_proc *p, uint64_t a);
/* The work a call over [t0, t1) waited for on process p's GPU: from t0 to
 * the end of the last kernel that started before t1 (at most t1); 0 when
 * the GPU was idle at t0 and stayed so. */
uint64_t gpu_work_left(const struct gpu_proc *p, uint64_t t0, uint64_t t1);
/* Nanoseconds of [a, b) in which process p's GPU ran a kernel. */
uint64_t gpu_busy_within(const struct gpu_proc *p, uint64_t a, uint64_t b);

#endif
