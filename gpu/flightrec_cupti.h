/* libflightrec_cupti.so: what it hands out, for the recorder's uprobes
 * and for tests.  Loaded by the CUDA driver through CUDA_INJECTION64_PATH.
 *
 * Two exported probe functions, each called from the library only, whose
 * arguments are the data (System V: rdi, rsi, rdx):
 *   flightrec_cupti_launch(correlation_id): on the application thread, at
 *     the entry of every kernel or graph launch, so a uprobe there takes the
 *     launch's stack.
 *   flightrec_cupti_kernels(k, n, dropped): n finished kernels in
 *     flightrec's own layout (below), independent of the CUPTI version;
 *     dropped counts kernel records lost (no free buffer, CUPTI's own
 *     drops) since the previous call. */
#ifndef FLIGHTREC_CUPTI_H
#define FLIGHTREC_CUPTI_H

#include <stdint.h>

#define FR_GPU_KERNEL_NAME_MAX 124 /* NUL-terminated, truncated */
#define FR_GPU_KERNEL_BATCH 32     /* records per flightrec_cupti_kernels call, at most */

/* One kernel execution; times are CLOCK_MONOTONIC ns (bpf_ktime_get_ns). */
struct fr_gpu_kernel {
	uint64_t start_ns;
	uint64_t end_ns;
	uint64_t correlation_id; /* the flightrec_cupti_launch that queued it */
	uint32_t device;
	uint32_t context;
	uint32_t stream;
	uint32_t grid[3];
	uint32_t block[3];
	uint32_t shared_bytes;   /* static + dynamic */
	uint32_t registers;      /* per thread */
	char name[FR_GPU_KERNEL_NAME_MAX];
};
_Static_assert(sizeof(struct fr_gpu_kernel) == 192, "fr_gpu_kernel is a wire layout");

int InitializeInjection(void);
void flightrec_cupti_launch(uint64_t correlation_id);
void flightrec_cupti_kernels(const struct fr_gpu_kernel *k, uint32_t n, uint64_t dropped);

#endif
