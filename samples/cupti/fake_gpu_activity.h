/* The private seam between the stand-in CUDA runtime (samples/cudart/) and
 * the stand-in libcupti.so.13 (samples/cupti/): in NVIDIA's stack the
 * driver and CUPTI share internal state; here the runtime looks these up in
 * an already loaded libcupti.so.13 (dlopen RTLD_NOLOAD) after the injection
 * library has run.  Plain C types only: the runtime does not include
 * NVIDIA's CUPTI headers. */
#ifndef FAKE_GPU_ACTIVITY_H
#define FAKE_GPU_ACTIVITY_H

#include <stdint.h>

/* One kernel the fake GPU ran; times are CLOCK_MONOTONIC ns. */
struct fake_gpu_kernel {
	uint64_t start_ns, end_ns;
	uint32_t device, context, stream, correlation_id;
	int32_t grid[3], block[3];
	int32_t dynamic_shared_bytes;
	const char *name; /* valid for the call only */
};

/* Runtime API entry: allocates the call's correlation id and fires the
 * subscriber's ENTER callback; returns the id (never 0). */
typedef uint32_t (*fake_gpu_api_enter_fn)(uint32_t cbid, const char *function);
/* Runtime API exit: the EXIT callback with the same correlation id. */
typedef void (*fake_gpu_api_exit_fn)(uint32_t cbid, const char *function, uint32_t correlation_id);
/* A kernel record into the activity buffers (when kernel activity is on). */
typedef void (*fake_gpu_kernel_fn)(const struct fake_gpu_kernel *k);

#define FAKE_GPU_API_ENTER "fake_gpu_api_enter"
#define FAKE_GPU_API_EXIT "fake_gpu_api_exit"
#define FAKE_GPU_KERNEL "fake_gpu_kernel"

#endif
