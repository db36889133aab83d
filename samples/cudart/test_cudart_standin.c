/* Unit test of the stand-in libcudart (ctest unit.cudart_standin).
 *
 * What it is for: pinning the behaviour flightrec's tests rely on: error
 * numbers and out-of-memory past capacity, first-fit reuse of freed
 * addresses, pinned host memory that is real, copies and kernels that take
 * their simulated time (async ones on the stream, not in the call), streams
 * waiting on events, stream capture and graph launches, the _ptsz/_ptds
 * variants, a machine without GPUs, thread safety.
 * What it is NOT for: checking the recorder; timing bounds here are loose
 * lower bounds plus generous upper ones, never benchmarks.
 */
#ifdef CUDART_STANDIN_REAL_HEADER
#include <cuda_runtime_api.h>
#else
#include "cuda_runtime_api_min.h"
#endif

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count,
				 enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
				  size_t sharedMem, cudaStream_t stream);
cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream);

#define MiB (1024ull * 1024ull)
#define KERNEL_US 50000

static int failures;

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
			failures++;                                                  \
		}                                                                    \
	} while (0)
#define CHECK_ERR(call, want)                                                        \
	do {                                                                         \
		int got_ = (int)(call);                                              \
		if (got_ != (int)(want)) {                                           \
			fprintf(stderr, "%s:%d: %s returned %d, want %d\n", __FILE__, __LINE__, \
				#call, got_, (int)(want));                           \
			failures++;                                                  \
		}                                                                    \
	} while (0)

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void kernel_stub(void)
{
}

/* Runs before anything initialises the library in this process: a child
 * with FLIGHTREC_FAKE_GPUS=0 sees a machine without GPUs. */
static void test_no_device(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		setenv("FLIGHTREC_FAKE_GPUS", "0", 1);
		int n = -1, bad = 0;
		void *p = (void *)1;
		bad |= cudaGetDeviceCount(&n) != cudaErrorNoDevice || n != 0;
		bad |= cudaMalloc(&p, 1024) != cudaErrorNoDevice;
		bad |= cudaFree(NULL) != cudaErrorNoDevice;
		bad |= cudaGetLastError() != cudaErrorNoDevice;
		_exit(bad);
	}
	int status = 0;
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_errors_and_devices(void)
{
	CHECK(cudaSuccess == 0 && cudaErrorInvalidValue == 1 && cudaErrorMemoryAllocation == 2);
	CHECK(cudaErrorInitializationError == 3 && cudaErrorInvalidDevicePointer == 17);
	CHECK(cudaErrorNoDevice == 100 && cudaErrorInvalidDevice == 101);
	CHECK(!strcmp(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory"));
	CHECK(!strcmp(cudaGetErrorName(cudaErrorNoDevice), "cudaErrorNoDevice"));
	int n = 0, dev = -1;
	CHECK_ERR(cudaGetDeviceCount(&n), cudaSuccess);
	CHECK(n == 2);
	CHECK_ERR(cudaGetDevice(&dev), cudaSuccess);
	CHECK(dev == 0);
	CHECK_ERR(cudaSetDevice(2), cudaErrorInvalidDevice);
	CHECK_ERR(cudaGetLastError(), cudaErrorInvalidDevice);
	CHECK_ERR(cudaGetLastError(), cudaSuccess);
	int v = 0;
	CHECK_ERR(cudaRuntimeGetVersion(&v), cudaSuccess);
	CHECK(v == 12000);
}

static void test_allocator(void)
{
	size_t free_bytes = 0, total = 0;
	CHECK_ERR(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
	CHECK(total == 1024 * MiB && free_bytes == total);

	void *p[4] = { 0 };
	for (int i = 0; i < 4; i++)
		CHECK_ERR(cudaMalloc(&p[i], 256 * MiB), cudaSuccess);
	CHECK((uintptr_t)p[1] == (uintptr_t)p[0] + 256 * MiB);
	CHECK_ERR(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
	CHECK(free_bytes == 0);

	/* Past capacity: out of memory, NULL, and the last error set. */
	void *q = (void *)1;
	CHECK_ERR(cudaMalloc(&q, 1), cudaErrorMemoryAllocation);
	CHECK(q == NULL);
	CHECK_ERR(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
	CHECK_ERR(cudaGetLastError(), cudaErrorMemoryAllocation);
	CHECK_ERR(cudaGetLastError(), cudaSuccess);

	/* Freed addresses come back (first fit), neighbours coalesce. */
	CHECK_ERR(cudaFree(p[1]), cudaSuccess);
	void *again = NULL;
	CHECK_ERR(cudaMalloc(&again, 256 * MiB), cudaSuccess);
	CHECK(again == p[1]);
	CHECK_ERR(cudaFree(p[1]), cudaSuccess);
	CHECK_ERR(cudaFree(p[2]), cudaSuccess);
	void *big = NULL;
	CHECK_ERR(cudaMalloc(&big, 512 * MiB), cudaSuccess);
	CHECK(big == p[1]);

	/* Bad frees. */
	CHECK_ERR(cudaFree(NULL), cudaSuccess);
	CHECK_ERR(cudaFree(p[1]), cudaSuccess);
	CHECK_ERR(cudaFree(p[1]), cudaErrorInvalidValue);               /* double free */
	CHECK_ERR(cudaFree((char *)p[0] + 256), cudaErrorInvalidValue); /* interior */
	int on_stack;
	CHECK_ERR(cudaFree(&on_stack), cudaErrorInvalidValue);          /* host memory */
	CHECK_ERR(cudaFree(p[0]), cudaSuccess);
	CHECK_ERR(cudaFree(p[3]), cudaSuccess);

	/* 256-byte granularity. */
	void *a = NULL, *b = NULL;
	CHECK_ERR(cudaMalloc(&a, 1), cudaSuccess);
	CHECK_ERR(cudaMalloc(&b, 1), cudaSuccess);
	CHECK((uintptr_t)a % 256 == 0 && (uintptr_t)b == (uintptr_t)a + 256);
	CHECK_ERR(cudaFree(a), cudaSuccess);
	CHECK_ERR(cudaFree(b), cudaSuccess);
	void *zero = (void *)1;
	CHECK_ERR(cudaMalloc(&zero, 0), cudaSuccess);
	CHECK(zero == NULL);
	CHECK_ERR(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
	CHECK(free_bytes == total);

	/* Devices have separate ranges and capacities. */
	void *d0 = NULL, *d1 = NULL;
	CHECK_ERR(cudaMalloc(&d0, 1024 * MiB), cudaSuccess);
	CHECK_ERR(cudaSetDevice(1), cudaSuccess);
	CHECK_ERR(cudaMalloc(&d1, 1024 * MiB), cudaSuccess);
	CHECK(d0 && d1 && (uintptr_t)d1 - (uintptr_t)d0 >= 1024 * MiB);
	CHECK_ERR(cudaFree(d1), cudaSuccess);
	CHECK_ERR(cudaSetDevice(0), cudaSuccess);
	CHECK_ERR(cudaFree(d0), cudaSuccess);

	/* Managed memory is real and counts against the device. */
	char *m = NULL;
	CHECK_ERR(cudaMallocManaged((void **)&m, 4 * MiB, cudaMemAttachGlobal), cudaSuccess);
	CHECK(m != NULL);
	if (m) {
		m[0] = 1;
		m[4 * MiB - 1] = 2;
	}
	CHECK_ERR(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
	CHECK(free_bytes == total - 4 * MiB);
	CHECK_ERR(cudaFree(m), cudaSuccess);
}

static void test_pinned(void)
{
	unsigned char *h = NULL;
	CHECK_ERR(cudaMallocHost((void **)&h, 4 * MiB), cudaSuccess);
	CHECK(h != NULL);
	if (h) {
		for (size_t i = 0; i < 4 * MiB; i += 4096)
			h[i] = (unsigned char)(i >> 12);
		CHECK(h[8192] == 2 && h[4 * MiB - 4096] == (unsigned char)((4 * MiB - 4096) >> 12));
	}
	CHECK_ERR(cudaFreeHost(h), cudaSuccess);
	CHECK_ERR(cudaFreeHost(h), cudaErrorInvalidValue);
	void *ha = NULL;
	CHECK_ERR(cudaHostAlloc(&ha, 4096, cudaHostAllocPortable | cudaHostAllocMapped), cudaSuccess);
	memset(ha, 1, 4096);
	CHECK_ERR(cudaHostAlloc(&ha, 4096, 0x80), cudaErrorInvalidValue);
	CHECK_ERR(cudaFreeHost(ha), cudaSuccess);

	char *buf = malloc(1 * MiB);
	CHECK_ERR(cudaHostRegister(buf, 1 * MiB, cudaHostRegisterDefault), cudaSuccess);
	CHECK_ERR(cudaHostRegister(buf + 4096, 4096, 0), cudaErrorHostMemoryAlreadyRegistered);
	CHECK_ERR(cudaFreeHost(buf), cudaErrorInvalidValue); /* registered, not allocated */
	CHECK_ERR(cudaHostUnregister(buf), cudaSuccess);
	CHECK_ERR(cudaHostUnregister(buf), cudaErrorHostMemoryNotRegistered);
	free(buf);
	(void)cudaGetLastError();
}

static void test_copies_and_streams(void)
{
	const size_t bytes = 64 * MiB;
	void *dev = NULL, *pinned = NULL;
	char *pageable = malloc(bytes);
	CHECK_ERR(cudaMalloc(&dev, bytes), cudaSuccess);
	CHECK_ERR(cudaMallocHost(&pinned, bytes), cudaSuccess);
	memset(pageable, 7, bytes);

	/* Blocking copies take bytes / bandwidth: 64 MiB at 8 GB/s is 8.4 ms
	 * pageable, at 25 GB/s 2.7 ms pinned. */
	double t0 = now_ms();
	CHECK_ERR(cudaMemcpy(dev, pageable, bytes, cudaMemcpyHostToDevice), cudaSuccess);
	double pageable_ms = now_ms() - t0;
	t0 = now_ms();
	CHECK_ERR(cudaMemcpy(pinned, dev, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
	double pinned_ms = now_ms() - t0;
	CHECK(pageable_ms >= 8.3 && pageable_ms < 500);
	CHECK(pinned_ms >= 2.6 && pinned_ms < 500);

	/* Kind must match the pointers; unknown kinds are a direction error. */
	CHECK_ERR(cudaMemcpy(dev, pageable, 16, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
	CHECK_ERR(cudaMemcpy(dev, pageable, 16, (enum cudaMemcpyKind)7), cudaErrorInvalidMemcpyDirection);
	CHECK_ERR(cudaMemcpy(dev, pageable, bytes + 1, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
	CHECK_ERR(cudaMemcpy(dev, pageable, bytes + 1, cudaMemcpyDefault), cudaErrorInvalidValue);
	CHECK_ERR(cudaMemcpy(pageable, (char *)dev + bytes, 16, cudaMemcpyDefault),
		  cudaErrorInvalidValue); /* just past the end: unallocated device memory */
	CHECK_ERR(cudaMemcpy(dev, pageable, 16, cudaMemcpyDefault), cudaSuccess);
	char h2h[8] = { 0 };
	CHECK_ERR(cudaMemcpy(h2h, "abcdefg", 8, cudaMemcpyHostToHost), cudaSuccess);
	CHECK(!strcmp(h2h, "abcdefg"));
	(void)cudaGetLastError();

	/* Async work is queued on the stream: the call returns at once, the
	 * synchronisation waits (kernels take KERNEL_US here). */
	cudaStream_t s = NULL;
	CHECK_ERR(cudaStreamCreate(&s), cudaSuccess);
	dim3 grid = { 1, 1, 1 }, block = { 128, 1, 1 };
	t0 = now_ms();
	CHECK_ERR(cudaLaunchKernel((const void *)kernel_stub, grid, block, NULL, 0, s), cudaSuccess);
	CHECK_ERR(cudaMemcpyAsync(dev, pinned, bytes, cudaMemcpyHostToDevice, s), cudaSuccess);
	double call_ms = now_ms() - t0;
	CHECK_ERR(cudaStreamQuery(s), cudaErrorNotReady);
	t0 = now_ms();
	CHECK_ERR(cudaStreamSynchronize(s), cudaSuccess);
	double sync_ms = now_ms() - t0;
	CHECK(call_ms < KERNEL_US / 2000.0);
	CHECK(call_ms + sync_ms >= KERNEL_US / 1000.0 + 2.6);
	CHECK_ERR(cudaStreamQuery(s), cudaSuccess);

	/* Events. */
	cudaEvent_t start = NULL, end = NULL;
	CHECK_ERR(cudaEventCreate(&start), cudaSuccess);
	CHECK_ERR(cudaEventCreate(&end), cudaSuccess);
	CHECK_ERR(cudaEventRecord(start, s), cudaSuccess);
	CHECK_ERR(cudaLaunchKernel((const void *)kernel_stub, grid, block, NULL, 0, s), cudaSuccess);
	CHECK_ERR(cudaEventRecord(end, s), cudaSuccess);
	CHECK_ERR(cudaEventQuery(end), cudaErrorNotReady);
	t0 = now_ms();
	CHECK_ERR(cudaEventSynchronize(end), cudaSuccess);
	CHECK(now_ms() - t0 >= KERNEL_US / 1000.0 * 0.9);
	float elapsed = 0;
	CHECK_ERR(cudaEventElapsedTime(&elapsed, start, end), cudaSuccess);
	CHECK(elapsed >= KERNEL_US / 1000.0f * 0.99f && elapsed < KERNEL_US / 1000.0f * 1.5f);
	CHECK_ERR(cudaEventDestroy(start), cudaSuccess);
	CHECK_ERR(cudaEventDestroy(end), cudaSuccess);
	CHECK_ERR(cudaEventDestroy(end), cudaErrorInvalidResourceHandle);

	/* The device synchronises every stream. */
	CHECK_ERR(cudaLaunchKernel((const void *)kernel_stub, grid, block, NULL, 0, s), cudaSuccess);
	t0 = now_ms();
	CHECK_ERR(cudaDeviceSynchronize(), cudaSuccess);
	CHECK(now_ms() - t0 >= KERNEL_US / 1000.0 * 0.9);

	/* Launch errors. */
	CHECK_ERR(cudaLaunchKernel(NULL, grid, block, NULL, 0, s), cudaErrorInvalidDeviceFunction);
	dim3 huge = { 2048, 1, 1 };
	CHECK_ERR(cudaLaunchKernel((const void *)kernel_stub, grid, huge, NULL, 0, s),
		  cudaErrorInvalidConfiguration);
	CHECK_ERR(cudaLaunchKernel((const void *)kernel_stub, grid, block, NULL, 0,
				   (cudaStream_t)(uintptr_t)0x1234),
		  cudaErrorInvalidResourceHandle);
	CHECK_ERR(cudaStreamDestroy(s), cudaSuccess);
	CHECK_ERR(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);

	/* Per-thread default stream variants: NULL means this thread's stream. */
	t0 = now_ms();
	CHECK_ERR(cudaLaunchKernel_ptsz((const void *)kernel_stub, grid, block, NULL, 0, NULL), cudaSuccess);
	CHECK_ERR(cudaMemcpyAsync_ptsz(dev, pinned, 1024, cudaMemcpyHostToDevice, NULL), cudaSuccess);
	CHECK_ERR(cudaStreamSynchronize_ptsz(NULL), cudaSuccess);
	CHECK(now_ms() - t0 >= KERNEL_US / 1000.0 * 0.9);
	static const char *const variants[] = {
		"cudaMemcpy_ptds", "cudaMemcpyAsync_ptsz", "cudaLaunchKernel_ptsz",
		"cudaStreamSynchronize_ptsz", "cudaMallocAsync_ptsz", "cudaFreeAsync_ptsz",
		"cudaEventRecord_ptsz", "cudaMemset_ptds", "cudaMemsetAsync_ptsz",
		"cudaStreamWaitEvent_ptsz", "cudaStreamBeginCapture_ptsz", "cudaStreamEndCapture_ptsz",
		"cudaGraphLaunch_ptsz",
	};
	for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++)
		CHECK(dlsym(RTLD_DEFAULT, variants[i]) != NULL);

	/* Stream-ordered allocation. */
	void *pa = NULL;
	CHECK_ERR(cudaMallocAsync(&pa, 1 * MiB, NULL), cudaSuccess);
	CHECK(pa != NULL);
	CHECK_ERR(cudaMemsetAsync(pa, 0, 1 * MiB, NULL), cudaSuccess);
	CHECK_ERR(cudaFreeAsync(pa, NULL), cudaSuccess);
	CHECK_ERR(cudaFreeAsync(pa, NULL), cudaErrorInvalidValue);
	(void)cudaGetLastError();

	CHECK_ERR(cudaFree(dev), cudaSuccess);
	CHECK_ERR(cudaFreeHost(pinned), cudaSuccess);
	free(pageable);
}

static void *end_capture_elsewhere(void *stream)
{
	cudaGraph_t g = NULL;
	return (void *)(intptr_t)cudaStreamEndCapture((cudaStream_t)stream, &g);
}

/* A stream waiting on an event starts its later work when the event's
 * work ends; a launched graph runs its captured kernels back to back on
 * the stream (kernels take KERNEL_US here). */
static void test_stream_waits_and_graphs(void)
{
	const double kernel_ms = KERNEL_US / 1000.0;
	const void *k = (const void *)kernel_stub;
	dim3 grid = { 1, 1, 1 }, block = { 128, 1, 1 };
	cudaStream_t a = NULL, b = NULL;
	cudaEvent_t e = NULL, never = NULL;
	CHECK_ERR(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
	CHECK_ERR(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
	CHECK_ERR(cudaEventCreate(&e), cudaSuccess);
	CHECK_ERR(cudaEventCreate(&never), cudaSuccess);

	/* b waits for a's kernel, then runs its own: two kernel times. */
	double t0 = now_ms();
	CHECK_ERR(cudaLaunchKernel(k, grid, block, NULL, 0, a), cudaSuccess);
	CHECK_ERR(cudaEventRecord(e, a), cudaSuccess);
	CHECK_ERR(cudaStreamWaitEvent(b, e, cudaEventWaitDefault), cudaSuccess);
	CHECK_ERR(cudaStreamQuery(b), cudaErrorNotReady);
	CHECK_ERR(cudaLaunchKernel(k, grid, block, NULL, 0, b), cudaSuccess);
	CHECK_ERR(cudaStreamSynchronize(b), cudaSuccess);
	CHECK(now_ms() - t0 >= 2 * kernel_ms * 0.999);
	CHECK_ERR(cudaStreamQuery(a), cudaSuccess);
	/* A never-recorded event is complete: waiting for it waits for nothing. */
	CHECK_ERR(cudaStreamWaitEvent(b, never, 0), cudaSuccess);
	CHECK_ERR(cudaStreamQuery(b), cudaSuccess);
	CHECK_ERR(cudaStreamWaitEvent(b, e, 0x4), cudaErrorInvalidValue);
	CHECK_ERR(cudaStreamWaitEvent(b, (cudaEvent_t)(uintptr_t)0x1234, 0),
		  cudaErrorInvalidResourceHandle);
	/* The per-thread variant: NULL is this thread's stream. */
	CHECK_ERR(cudaLaunchKernel(k, grid, block, NULL, 0, a), cudaSuccess);
	CHECK_ERR(cudaEventRecord(e, a), cudaSuccess);
	CHECK_ERR(cudaStreamWaitEvent_ptsz(NULL, e, cudaEventWaitExternal), cudaSuccess);
	CHECK_ERR(cudaStreamQuery_ptsz(NULL), cudaErrorNotReady);
	CHECK_ERR(cudaStreamSynchronize_ptsz(NULL), cudaSuccess);
	CHECK_ERR(cudaEventQuery(e), cudaSuccess);

	/* Capture: kernels are recorded, not run. */
	cudaGraph_t g = NULL;
	cudaGraphExec_t x = NULL;
	CHECK_ERR(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal), cudaSuccess);
	CHECK_ERR(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal), cudaErrorIllegalState);
	for (int i = 0; i < 3; i++)
		CHECK_ERR(cudaLaunchKernel(k, grid, block, NULL, 0, a), cudaSuccess);
	CHECK_ERR(cudaStreamEndCapture(a, &g), cudaSuccess);
	CHECK(g != NULL);
	CHECK_ERR(cudaStreamQuery(a), cudaSuccess);
	CHECK_ERR(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
	CHECK(x != NULL);

	/* Each launch queues the three kernels at once and returns. */
	t0 = now_ms();
	CHECK_ERR(cudaGraphLaunch(x, a), cudaSuccess);
	CHECK_ERR(cudaEventRecord(e, a), cudaSuccess);
	CHECK(now_ms() - t0 < kernel_ms / 2);
	CHECK_ERR(cudaEventQuery(e), cudaErrorNotReady);
	CHECK_ERR(cudaEventSynchronize(e), cudaSuccess);
	double ran_ms = now_ms() - t0;
	CHECK(ran_ms >= 3 * kernel_ms * 0.999 && ran_ms < 3 * kernel_ms + 500);
	CHECK_ERR(cudaEventQuery(e), cudaSuccess);
	t0 = now_ms();
	CHECK_ERR(cudaGraphLaunch(x, a), cudaSuccess);
	CHECK_ERR(cudaGraphLaunch_ptsz(x, NULL), cudaSuccess);
	CHECK_ERR(cudaStreamSynchronize(a), cudaSuccess);
	CHECK(now_ms() - t0 >= 3 * kernel_ms * 0.999);
	CHECK_ERR(cudaStreamSynchronize_ptsz(NULL), cudaSuccess);
	CHECK_ERR(cudaGraphLaunch(x, (cudaStream_t)(uintptr_t)0x1234), cudaErrorInvalidResourceHandle);
	CHECK_ERR(cudaGraphLaunch((cudaGraphExec_t)(uintptr_t)0x1234, a),
		  cudaErrorInvalidResourceHandle);
	CHECK_ERR(cudaGraphInstantiate(&x, (cudaGraph_t)(uintptr_t)0x1234, 0), cudaErrorInvalidValue);
	CHECK_ERR(cudaGraphInstantiate(&x, g, 0x100), cudaErrorInvalidValue);

	/* What cannot be captured: the legacy stream; anything but kernels on
	 * a capturing stream fails and invalidates the capture. */
	cudaGraph_t bad = (cudaGraph_t)(uintptr_t)1;
	CHECK_ERR(cudaStreamBeginCapture(NULL, cudaStreamCaptureModeGlobal),
		  cudaErrorStreamCaptureUnsupported);
	CHECK_ERR(cudaStreamEndCapture(b, &bad), cudaErrorIllegalState);
	CHECK_ERR(cudaStreamBeginCapture(b, cudaStreamCaptureModeRelaxed), cudaSuccess);
	CHECK_ERR(cudaLaunchKernel(k, grid, block, NULL, 0, b), cudaSuccess);
	CHECK_ERR(cudaEventRecord(e, b), cudaErrorStreamCaptureUnsupported);
	CHECK_ERR(cudaStreamSynchronize(b), cudaErrorStreamCaptureUnsupported);
	CHECK_ERR(cudaGraphLaunch(x, b), cudaErrorStreamCaptureUnsupported);
	CHECK_ERR(cudaStreamEndCapture(b, &bad), cudaErrorStreamCaptureInvalidated);
	CHECK(bad == NULL);
	CHECK_ERR(cudaStreamQuery(b), cudaSuccess);
	/* A Global capture ends on the thread that began it. */
	CHECK_ERR(cudaStreamBeginCapture(b, cudaStreamCaptureModeGlobal), cudaSuccess);
	pthread_t other;
	void *other_err = NULL;
	CHECK(pthread_create(&other, NULL, end_capture_elsewhere, b) == 0);
	pthread_join(other, &other_err);
	CHECK((intptr_t)other_err == cudaErrorStreamCaptureWrongThread);
	cudaGraph_t empty = NULL;
	CHECK_ERR(cudaStreamEndCapture(b, &empty), cudaSuccess);
	CHECK(empty != NULL);
	CHECK_ERR(cudaGraphDestroy(empty), cudaSuccess);
	/* A capture left open dies with its stream. */
	CHECK_ERR(cudaStreamBeginCapture(b, cudaStreamCaptureModeThreadLocal), cudaSuccess);
	CHECK_ERR(cudaStreamDestroy(b), cudaSuccess);

	CHECK_ERR(cudaGraphExecDestroy(x), cudaSuccess);
	CHECK_ERR(cudaGraphExecDestroy(x), cudaErrorInvalidValue);
	CHECK_ERR(cudaGraphDestroy(g), cudaSuccess);
	CHECK_ERR(cudaGraphDestroy(g), cudaErrorInvalidValue);
	CHECK_ERR(cudaEventDestroy(e), cudaSuccess);
	CHECK_ERR(cudaEventDestroy(never), cudaSuccess);
	CHECK_ERR(cudaStreamDestroy(a), cudaSuccess);
	(void)cudaGetLastError();
}

static void *alloc_free_loop(void *arg)
{
	(void)arg;
	intptr_t bad = 0;
	for (int i = 0; i < 2000; i++) {
		void *p = NULL;
		bad += cudaMalloc(&p, (size_t)(i % 7 + 1) * 4096) != cudaSuccess;
		bad += cudaFree(p) != cudaSuccess;
	}
	return (void *)bad;
}

/* A host function holds its stream until it returns: queries say not
 * ready, an event recorded behind it completes after it, synchronize waits
 * for it, host functions of one stream run in order. */
static int hostfn_order[2], hostfn_n;
static void hostfn_sleep(void *arg)
{
	struct timespec ts = { 0, 80 * 1000000L };
	nanosleep(&ts, NULL);
	hostfn_order[hostfn_n++ & 1] = (int)(intptr_t)arg;
}

static void test_host_functions(void)
{
	cudaStream_t s;
	cudaEvent_t e;
	CHECK_ERR(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
	CHECK_ERR(cudaEventCreate(&e), cudaSuccess);
	CHECK_ERR(cudaLaunchHostFunc(s, NULL, NULL), cudaErrorInvalidValue);
	double t0 = now_ms();
	CHECK_ERR(cudaLaunchHostFunc(s, hostfn_sleep, (void *)(intptr_t)1), cudaSuccess);
	CHECK_ERR(cudaLaunchHostFunc(s, hostfn_sleep, (void *)(intptr_t)2), cudaSuccess);
	CHECK(now_ms() - t0 < 60); /* returns at once */
	CHECK_ERR(cudaEventRecord(e, s), cudaSuccess);
	CHECK_ERR(cudaStreamQuery(s), cudaErrorNotReady);
	CHECK_ERR(cudaEventQuery(e), cudaErrorNotReady);
	CHECK_ERR(cudaStreamSynchronize(s), cudaSuccess);
	CHECK(now_ms() - t0 >= 150); /* both ran, one after the other */
	CHECK(hostfn_n == 2 && hostfn_order[0] == 1 && hostfn_order[1] == 2);
	CHECK_ERR(cudaEventQuery(e), cudaSuccess);
	CHECK_ERR(cudaStreamQuery(s), cudaSuccess);
	/* an event synchronize waits for the host function too */
	t0 = now_ms();
	CHECK_ERR(cudaLaunchHostFunc(s, hostfn_sleep, (void *)(intptr_t)3), cudaSuccess);
	CHECK_ERR(cudaEventRecord(e, s), cudaSuccess);
	CHECK_ERR(cudaEventSynchronize(e), cudaSuccess);
	CHECK(now_ms() - t0 >= 70);
	CHECK_ERR(cudaEventDestroy(e), cudaSuccess);
	CHECK_ERR(cudaStreamDestroy(s), cudaSuccess);
}

static void test_threads(void)
{
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		CHECK(pthread_create(&t[i], NULL, alloc_free_loop, NULL) == 0);
	for (int i = 0; i < 4; i++) {
		void *bad = (void *)1;
		pthread_join(t[i], &bad);
		CHECK(bad == NULL);
	}
	size_t free_bytes = 0, total = 0;
	CHECK_ERR(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
	CHECK(free_bytes == total);
}

int main(void)
{
	test_no_device();
	setenv("FLIGHTREC_FAKE_GPUS", "2", 1);
	setenv("FLIGHTREC_FAKE_GPU_BYTES", "1073741824", 1);
	char kernel_us[32];
	snprintf(kernel_us, sizeof(kernel_us), "%d", KERNEL_US);
	setenv("FLIGHTREC_FAKE_KERNEL_US", kernel_us, 1);

	test_errors_and_devices();
	test_allocator();
	test_pinned();
	test_copies_and_streams();
	test_stream_waits_and_graphs();
	test_host_functions();
	test_threads();
	if (failures) {
		fprintf(stderr, "test_cudart_standin: %d failure(s)\n", failures);
		return 1;
	}
	printf("test_cudart_standin: ok\n");
	return 0;
}
