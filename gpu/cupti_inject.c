/* libflightrec_cupti.so: GPU kernel times for flightrec, from CUPTI's
 * Activity API, without writing a file, opening a socket or starting a
 * thread.  The CUDA driver calls InitializeInjection at cuInit when
 * CUDA_INJECTION64_PATH names this library (flightrec record --gpu-kernels
 * sets it).  What leaves the process leaves through the two probe
 * functions of flightrec_cupti.h, read by flightrec's uprobes.
 *
 * Rules it keeps, being a guest in a training job:
 *   - never block or abort the application: a fixed pool of activity
 *     buffers, allocated once; when none is free CUPTI drops the records
 *     and the drop is counted, not waited for.
 *   - one line on stderr and nothing else when libcupti cannot be loaded or
 *     another profiler holds CUPTI's subscriber slot (CUPTI up to 13.2
 *     allows one); the application runs on untouched.
 *   - libcupti is dlopen'ed by soname, so the process's library search
 *     (LD_LIBRARY_PATH, ld.so.cache) picks the same copy its CUDA would;
 *     FLIGHTREC_CUPTI_LIB names one by path instead.
 */
#include "flightrec_cupti.h"

#include <cupti.h>

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))
#define N_BUFFERS 8
#define BUFFER_BYTES (256u << 10)
#define BUFFER_ALIGN 8

/* The CUPTI entry points used, resolved from the dlopen'ed library. */
struct cupti {
	CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
	CUptiResult (*enable_callback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
				       CUpti_CallbackId);
	CUptiResult (*activity_enable)(CUpti_ActivityKind);
	CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc,
					  CUpti_BuffersCallbackCompleteFunc);
	CUptiResult (*register_timestamp)(CUpti_TimestampCallbackFunc);
	CUptiResult (*flush_all)(uint32_t);
	CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
	CUptiResult (*dropped)(CUcontext, uint32_t, size_t *);
	CUptiResult (*result_string)(CUptiResult, const char **);
};

static struct cupti g_cupti;
static CUpti_SubscriberHandle g_subscriber;
static uint8_t *g_pool;                 /* N_BUFFERS x BUFFER_BYTES */
static atomic_uint g_pool_free = (1u << N_BUFFERS) - 1;
static atomic_ullong g_dropped;         /* records lost, not yet reported */
static _Thread_local uint32_t t_in_runtime_launch; /* nested driver calls share its id */

static const CUpti_CallbackId runtime_launches[] = {
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernelMultiDevice_v9000,
	CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
	CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
};
static const CUpti_CallbackId driver_launches[] = {
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
	CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
};

/* The probe functions: their own code (no inlining, no merging), their
 * arguments in registers when a uprobe fires at the first instruction.
 * That instruction must be one the kernel emulates: an empty function is a
 * lone `ret` (GCC drops even a forced frame pointer), which the kernel
 * single-steps, a trap costing ~20 us per launch in a VM.  Clobbering %rbx
 * gives the function a register to save, so it starts with a push, which
 * the kernel emulates. */
EXPORT __attribute__((noinline)) void flightrec_cupti_launch(uint64_t correlation_id)
{
	__asm__ volatile("" : : "r"(correlation_id) : "memory", "rbx");
}

EXPORT __attribute__((noinline)) void flightrec_cupti_kernels(const struct fr_gpu_kernel *k,
							      uint32_t n, uint64_t dropped)
{
	__asm__ volatile("" : : "r"(k), "r"(n), "r"(dropped) : "memory", "rbx");
}

static uint64_t CUPTIAPI monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void CUPTIAPI on_api(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			    const void *data)
{
	(void)userdata;
	(void)cbid;
	const CUpti_CallbackData *d = data;
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
		if (d->callbackSite == CUPTI_API_ENTER) {
			t_in_runtime_launch = d->correlationId;
			flightrec_cupti_launch(d->correlationId);
		} else {
			t_in_runtime_launch = 0;
		}
	} else if (domain == CUPTI_CB_DOMAIN_DRIVER_API && d->callbackSite == CUPTI_API_ENTER &&
		   !t_in_runtime_launch) {
		flightrec_cupti_launch(d->correlationId); /* a driver-API caller */
	}
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*max_records = 0;
	unsigned free_mask = atomic_load(&g_pool_free);
	while (free_mask) {
		unsigned i = (unsigned)__builtin_ctz(free_mask);
		if (atomic_compare_exchange_weak(&g_pool_free, &free_mask, free_mask & ~(1u << i))) {
			*buffer = g_pool + (size_t)i * BUFFER_BYTES;
			*size = BUFFER_BYTES;
			return;
		}
	}
	*buffer = NULL; /* CUPTI drops records until a buffer comes back */
	*size = 0;
}

static void convert(struct fr_gpu_kernel *out, const CUpti_Activity *rec)
{
	/* Only fields of the CUpti_ActivityKernel5 prefix, which every later
	 * CUpti_ActivityKernelN keeps: the same code reads CUDA 11.x-13.x. */
	const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
	memset(out, 0, sizeof(*out));
	out->start_ns = k->start;
	out->end_ns = k->end;
	out->correlation_id = k->correlationId;
	out->device = k->deviceId;
	out->context = k->contextId;
	out->stream = k->streamId;
	out->grid[0] = (uint32_t)k->gridX, out->grid[1] = (uint32_t)k->gridY;
	out->grid[2] = (uint32_t)k->gridZ;
	out->block[0] = (uint32_t)k->blockX, out->block[1] = (uint32_t)k->blockY;
	out->block[2] = (uint32_t)k->blockZ;
	out->shared_bytes = (uint32_t)k->staticSharedMemory + (uint32_t)k->dynamicSharedMemory;
	out->registers = k->registersPerThread;
	if (k->name) {
		strncpy(out->name, k->name, sizeof(out->name) - 1);
	}
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
				      size_t valid)
{
	(void)ctx;
	(void)stream;
	(void)size;
	struct fr_gpu_kernel batch[FR_GPU_KERNEL_BATCH];
	uint32_t n = 0;
	CUpti_Activity *rec = NULL;
	while (g_cupti.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
		if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
		    rec->kind != CUPTI_ACTIVITY_KIND_KERNEL)
			continue;
		convert(&batch[n++], rec);
		if (n == FR_GPU_KERNEL_BATCH) {
			flightrec_cupti_kernels(batch, n, atomic_exchange(&g_dropped, 0));
			n = 0;
		}
	}
	size_t cupti_dropped = 0;
	if (g_cupti.dropped(NULL, 0, &cupti_dropped) == CUPTI_SUCCESS)
		atomic_fetch_add(&g_dropped, cupti_dropped);
	uint64_t dropped = atomic_exchange(&g_dropped, 0);
	if (n || dropped)
		flightrec_cupti_kernels(batch, n, dropped);
	size_t i = (size_t)(buffer - g_pool) / BUFFER_BYTES;
	if (buffer >= g_pool && i < N_BUFFERS)
		atomic_fetch_or(&g_pool_free, 1u << i);
}

static void flush_at_exit(void)
{
	g_cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

/* FLIGHTREC_CUPTI_LIB, a path, overrides the soname search (a CUDA
 * installed where the loader does not look). */
static void *load_cupti(void)
{
	const char *path = getenv("FLIGHTREC_CUPTI_LIB");
	if (path && *path)
		return dlopen(path, RTLD_NOW | RTLD_LOCAL);
	static const char *const sonames[] = { "libcupti.so.13", "libcupti.so.12", "libcupti.so" };
	for (size_t i = 0; i < sizeof(sonames) / sizeof(sonames[0]); i++) {
		void *h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
		if (h)
			return h;
	}
	return NULL;
}

static int resolve(void *h)
{
#define SYM(field, name) ((*(void **)&g_cupti.field = dlsym(h, name)) != NULL)
	return SYM(subscribe, "cuptiSubscribe") && SYM(enable_callback, "cuptiEnableCallback") &&
	       SYM(activity_enable, "cuptiActivityEnable") &&
	       SYM(register_callbacks, "cuptiActivityRegisterCallbacks") &&
	       SYM(register_timestamp, "cuptiActivityRegisterTimestampCallback") &&
	       SYM(flush_all, "cuptiActivityFlushAll") &&
	       SYM(next_record, "cuptiActivityGetNextRecord") &&
	       SYM(dropped, "cuptiActivityGetNumDroppedRecords") &&
	       SYM(result_string, "cuptiGetResultString");
#undef SYM
}

static const char *result_name(CUptiResult r)
{
	const char *s = NULL;
	if (g_cupti.result_string(r, &s) != CUPTI_SUCCESS || !s)
		return "unknown CUPTI error";
	return s;
}

static int setup(void)
{
	CUptiResult r = g_cupti.subscribe(&g_subscriber, on_api, NULL);
	if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		fprintf(stderr, "flightrec-cupti: another profiler already uses CUPTI in this process "
				"(%s); no GPU kernel times\n", result_name(r));
		return -1;
	}
	/* CUPTI wants the clock before any activity kind is enabled. */
	if (!r)
		r = g_cupti.register_timestamp(monotonic_ns);
	if (!r)
		r = g_cupti.register_callbacks(buffer_requested, buffer_completed);
	for (size_t i = 0; !r && i < sizeof(runtime_launches) / sizeof(runtime_launches[0]); i++)
		r = g_cupti.enable_callback(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
					    runtime_launches[i]);
	for (size_t i = 0; !r && i < sizeof(driver_launches) / sizeof(driver_launches[0]); i++)
		r = g_cupti.enable_callback(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
					    driver_launches[i]);
	if (!r)
		r = g_cupti.activity_enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	if (!r)
		r = g_cupti.activity_enable(CUPTI_ACTIVITY_KIND_MEMCPY);
	if (!r)
		r = g_cupti.activity_enable(CUPTI_ACTIVITY_KIND_MEMSET);
	if (r) {
		fprintf(stderr, "flightrec-cupti: CUPTI setup failed (%s); no GPU kernel times\n",
			result_name(r));
		return -1;
	}
	return 0;
}

/* Called by the CUDA driver, which does not expect it to fail: 1 always
 * (NVIDIA's samples return 1), whatever happened. */
EXPORT int InitializeInjection(void)
{
	static atomic_int once;
	if (atomic_exchange(&once, 1))
		return 1;
	void *h = load_cupti();
	if (!h) {
		fprintf(stderr, "flightrec-cupti: cannot load libcupti (%s); no GPU kernel times\n",
			dlerror());
		return 1;
	}
	if (!resolve(h)) {
		fprintf(stderr, "flightrec-cupti: libcupti lacks a needed function (%s); "
				"no GPU kernel times\n", dlerror());
		return 1;
	}
	g_pool = aligned_alloc(BUFFER_ALIGN, (size_t)N_BUFFERS * BUFFER_BYTES);
	if (!g_pool) {
		fputs("flightrec-cupti: out of memory for activity buffers; no GPU kernel times\n",
		      stderr);
		return 1;
	}
	if (setup())
		return 1;
	atexit(flush_at_exit);
	return 1;
}
