/* Stand-in libcudart.so.12: NVIDIA's CUDA runtime API names, prototypes and
 * error codes over a fake GPU, so flightrec's cuda probes have something to
 * attach to on machines without a GPU.
 *
 * What it is for: giving flightrec's recorder (uprobes on libcudart) and its
 * tests a library it attaches to exactly as it would to NVIDIA's: the same
 * exported symbols (including the _ptsz/_ptds per-thread-stream variants
 * NVIDIA exports), the same symbol version node scheme (libcudart.so.12),
 * the same argument registers, the same error numbers, and a first
 * instruction of `push %rbp` in every exported function.  Calls take
 * realistic wall-clock time so durations and synchronisation waits look like
 * a real job's.
 * What it is NOT for: running CUDA code.  It is a stand-in for hardware we
 * lack, not a CUDA emulator: kernels never run, device memory holds no bytes.
 *
 * Model (all times are real time; waits are clock_nanosleep):
 *   - devices: FLIGHTREC_FAKE_GPUS (default 1, 0..16; 0 makes every call
 *     fail with cudaErrorNoDevice like a machine without a GPU), each with
 *     FLIGHTREC_FAKE_GPU_BYTES of memory (default 16 GiB, at most 1 TiB).
 *   - device memory: a reserved, inaccessible address range per device
 *     (PROT_NONE, no RAM; at 0x600000000000 + device * 2^40 when free) with
 *     a first-fit allocator, 256-byte granularity, adjacent free ranges
 *     coalesced, so freed addresses are reused as with a real allocator.
 *     Out of memory: cudaErrorMemoryAllocation and *devPtr = NULL.  Unknown
 *     pointer to cudaFree: cudaErrorInvalidValue.  cudaFree waits for the
 *     device to go idle first, as NVIDIA's does.
 *   - managed memory (cudaMallocManaged): real host memory (lazily
 *     committed), counted against the device's capacity.
 *   - pinned host memory: cudaMallocHost/cudaHostAlloc return real mapped
 *     memory; cudaHostRegister marks an existing range pinned.
 *   - streams: each holds a "busy until" time.  Async work starts when the
 *     stream (and, by NVIDIA's rules, the legacy default stream or the
 *     blocking streams) is free and extends its busy time.  Synchronize calls
 *     sleep until the stream(s) or event are reached.
 *   - copies: 5 us + bytes / bandwidth; host<->device 25 GB/s when the host
 *     side is pinned, 8 GB/s when pageable (pageable copies also memcpy the
 *     host bytes through a bounce buffer, as the driver's staging does);
 *     device<->device 1000 GB/s.  cudaMemcpy blocks until done;
 *     cudaMemcpyAsync returns at once.
 *   - kernels: cudaLaunchKernel queues FLIGHTREC_FAKE_KERNEL_US (default 50)
 *     microseconds on the stream.
 *   - profiling: at its first call the runtime loads CUDA_INJECTION64_PATH
 *     and calls its InitializeInjection, as NVIDIA's driver does in cuInit.
 *     If a libcupti.so.13 is loaded then (the stand-in, samples/cupti/),
 *     each cudaLaunchKernel fires its runtime API callbacks (ENTER/EXIT, one
 *     correlation id) on the launching thread and gives it the kernel's
 *     record: start and end on the stream, grid, block, dynamic shared
 *     memory, and the name of the kernel stub's symbol (dladdr; samples
 *     link with -rdynamic).  Captured and graph kernels make no records.
 *   - events: cudaEventRecord marks when the work queued so far on its
 *     stream ends; cudaEventQuery answers cudaErrorNotReady (600) before
 *     then, cudaEventSynchronize sleeps until then; cudaStreamWaitEvent
 *     makes later work on the waiting stream start no earlier than that
 *     (a never-recorded event is already complete, as NVIDIA's is).
 *   - host functions: cudaLaunchHostFunc runs fn(userData) on a thread of
 *     its own once the work queued before it on the stream is done, the
 *     stream's host functions one after another, and holds the stream until
 *     fn returns: the end of a held stream is not known in advance (the NCCL
 *     stand-in's asynchronous mode completes its collectives this way).
 *     While a stream is held, synchronizing on it (or on the device) waits
 *     for the hold to end, cudaStreamQuery says not ready, an event
 *     recorded on it completes when the host functions queued before the
 *     record have returned, and work queued on it (or waiting on such an
 *     event) blocks the calling thread until the hold ends (NVIDIA's would
 *     return at once).  A held stream does not hold the legacy stream (its
 *     implicit synchronization with blocking streams is not modelled for
 *     host functions).
 *   - graphs: cudaStreamBeginCapture on a created or per-thread stream
 *     (not the legacy one) captures the kernels launched on it instead of
 *     queueing them; cudaStreamEndCapture returns them as a graph,
 *     cudaGraphInstantiate makes an executable graph of it, and each
 *     cudaGraphLaunch queues its kernels back to back on the stream (their
 *     total time, once).  Only kernels are captured: any other stream
 *     operation on a capturing stream (copy, memset, event record or wait,
 *     synchronize, query, graph launch, async allocation) fails with
 *     cudaErrorStreamCaptureUnsupported and invalidates the capture, which
 *     cudaStreamEndCapture then reports (cudaErrorStreamCaptureInvalidated,
 *     no graph).  NVIDIA's captures those too; the stand-in does not.
 *     Capture modes: ending a Global or ThreadLocal capture from another
 *     thread fails (cudaErrorStreamCaptureWrongThread); the modes' other
 *     rules (what other threads may call meanwhile) are not modelled.
 */
/* CMake defines CUDART_STANDIN_REAL_HEADER when NVIDIA's header is usable. */
#ifdef CUDART_STANDIN_REAL_HEADER
#undef CUDA_API_PER_THREAD_DEFAULT_STREAM /* the plain names, not _ptsz macros */
#include <cuda_runtime_api.h>
#else
#include "cuda_runtime_api_min.h"
#endif
#include "cudart_errors.h"
#include "fake_gpu_activity.h"

#include <dlfcn.h>
#include <stdio.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* NVIDIA exports these per-thread-default-stream variants; its header only
 * declares them (through macros) under CUDA_API_PER_THREAD_DEFAULT_STREAM. */
cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count,
				 enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count);
cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream);
cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
				  size_t sharedMem, cudaStream_t stream);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream);
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph);
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream);
cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData);
cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);

#define STANDIN_VERSION 12000           /* runtime and driver version reported */
#define MAX_DEVICES 16
#define DEFAULT_DEVICE_BYTES (16ull << 30)
#define MAX_DEVICE_BYTES (1ull << 40)
#define DEVICE_VA_BASE 0x600000000000ull
#define DEVICE_VA_STRIDE (1ull << 40)
#define ALLOC_ALIGN 256u
#define COPY_LATENCY_NS 5000ull
#define PINNED_BYTES_PER_S 25e9
#define PAGEABLE_BYTES_PER_S 8e9
#define D2D_BYTES_PER_S 1000e9
#define BOUNCE_BYTES (1u << 20)
#define MAX_THREADS_PER_BLOCK 1024u
/* cupti_runtime_cbid.h: CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel(_ptsz)_v7000 */
#define CUPTI_CBID_LAUNCH_KERNEL 211u
#define CUPTI_CBID_LAUNCH_KERNEL_PTSZ 214u

/* Which default stream a call without an explicit stream means. */
enum default_stream { USE_LEGACY = 0, USE_PER_THREAD = 1 };

struct CUstream_st {
	struct CUstream_st *next;   /* all live streams (user + per-thread) */
	int device;
	unsigned int flags;         /* cudaStreamNonBlocking */
	uint64_t busy_until_ns;     /* CLOCK_MONOTONIC: queued work ends */
	uint64_t hostfn_queued;     /* host functions queued (tickets 1..) */
	uint64_t hostfn_done;       /* ... and returned, in order; fewer: held */
	struct CUgraph_st *capture; /* the graph being captured, or NULL */
	int capture_invalid;        /* an unsupported operation hit the capture */
	enum cudaStreamCaptureMode capture_mode;
	pthread_t capture_thread;   /* who began the capture */
	uint32_t activity_id;       /* CUPTI streamId, given at first launch */
};

/* A captured graph and an executable one: kernels back to back. */
struct CUgraph_st {
	struct CUgraph_st *next;    /* all graphs returned by cudaStreamEndCapture */
	unsigned int n_kernels;
	uint64_t duration_ns;       /* the kernels' total time */
};

struct CUgraphExec_st {
	struct CUgraphExec_st *next;
	unsigned int n_kernels;
	uint64_t duration_ns;
};

struct CUevent_st {
	struct CUevent_st *next;
	unsigned int flags;
	int recorded;
	uint64_t ready_ns;          /* when the recorded work completes */
	/* recorded on a held stream: complete once host function ticket
	 * pending_ticket of pending_stream has returned (ready_ns is set then) */
	struct CUstream_st *pending_stream;
	uint64_t pending_ticket;
};

struct range {
	uint64_t addr;
	uint64_t bytes;
};

enum alloc_kind { ALLOC_DEVICE, ALLOC_MANAGED };

struct allocation {
	uint64_t addr;
	uint64_t bytes;     /* as requested */
	uint64_t reserved;  /* bytes taken from the device (rounded up) */
	int device;
	enum alloc_kind kind;
};

enum pinned_kind { PINNED_ALLOCATED, PINNED_REGISTERED };

struct pinned {
	uint64_t addr;
	uint64_t bytes;
	uint64_t mapped;    /* bytes mapped (ALLOCATED only) */
	enum pinned_kind kind;
};

struct device {
	uint64_t base;
	uint64_t capacity_bytes;
	uint64_t inuse_bytes;
	struct range *free_ranges;  /* sorted by address, coalesced */
	size_t n_free, cap_free;
	struct CUstream_st legacy;  /* the NULL stream */
};

/* A sorted array of elements keyed by a leading uint64_t address. */
struct table {
	void *items;
	size_t n, cap, item_size;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_hostfn_cond = PTHREAD_COND_INITIALIZER; /* a host function returned */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static cudaError_t g_init_error;
static int g_ndevices;
static uint64_t g_kernel_ns;
static struct device g_devices[MAX_DEVICES];
static struct table g_allocs = { NULL, 0, 0, sizeof(struct allocation) };
static struct table g_pinned = { NULL, 0, 0, sizeof(struct pinned) };
static struct CUstream_st *g_streams;
static struct CUevent_st *g_events;
static struct CUgraph_st *g_graphs;
static struct CUgraphExec_st *g_graph_execs;
static pthread_key_t g_thread_key;
static fake_gpu_api_enter_fn g_api_enter; /* from a loaded libcupti.so.13 */
static fake_gpu_api_exit_fn g_api_exit;
static fake_gpu_kernel_fn g_kernel_record;
static uint32_t g_next_activity_id;

/* Per-thread state: current device, last error, per-thread default
 * streams, the bounce buffer for pageable copies. */
struct thread_state {
	struct CUstream_st *per_thread[MAX_DEVICES];
	unsigned char *bounce;
};
static _Thread_local int t_device;
static _Thread_local cudaError_t t_last_error;
static _Thread_local struct thread_state *t_state;

/* ---- time --------------------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t_ns)
{
	struct timespec ts = { (time_t)(t_ns / 1000000000ull), (long)(t_ns % 1000000000ull) };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static uint64_t transfer_ns(uint64_t bytes, double bytes_per_s)
{
	return COPY_LATENCY_NS + (uint64_t)((double)bytes * 1e9 / bytes_per_s);
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* ---- sorted tables ------------------------------------------------------ */

static void *table_at(const struct table *t, size_t i)
{
	return (char *)t->items + i * t->item_size;
}

static uint64_t table_key(const struct table *t, size_t i)
{
	uint64_t key;
	memcpy(&key, table_at(t, i), sizeof(key));
	return key;
}

/* Index of the first item whose address is > addr. */
static size_t table_upper(const struct table *t, uint64_t addr)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (table_key(t, mid) <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int table_insert(struct table *t, const void *item)
{
	uint64_t key;
	memcpy(&key, item, sizeof(key));
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		void *p = realloc(t->items, cap * t->item_size);
		if (!p)
			return -1;
		t->items = p;
		t->cap = cap;
	}
	size_t at = table_upper(t, key);
	memmove(table_at(t, at + 1), table_at(t, at), (t->n - at) * t->item_size);
	memcpy(table_at(t, at), item, t->item_size);
	t->n++;
	return 0;
}

static void table_remove(struct table *t, size_t i)
{
	memmove(table_at(t, i), table_at(t, i + 1), (t->n - i - 1) * t->item_size);
	t->n--;
}

/* ---- initialisation ----------------------------------------------------- */

static int env_u64(const char *name, uint64_t dflt, uint64_t *out)
{
	const char *s = getenv(name);
	if (!s || !*s) {
		*out = dflt;
		return 0;
	}
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || *end || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

static void thread_state_free(void *p)
{
	struct thread_state *ts = p;
	pthread_mutex_lock(&g_lock);
	for (struct CUstream_st **link = &g_streams; *link;) {
		int mine = 0;
		for (int d = 0; d < MAX_DEVICES; d++)
			mine |= *link == ts->per_thread[d];
		if (mine) {
			struct CUstream_st *dead = *link;
			*link = dead->next;
			free(dead->capture);
			free(dead);
		} else {
			link = &(*link)->next;
		}
	}
	pthread_mutex_unlock(&g_lock);
	free(ts->bounce);
	free(ts);
}

/* NVIDIA's driver at cuInit: dlopen CUDA_INJECTION64_PATH, call its
 * InitializeInjection; a missing file or symbol is reported, not fatal. */
static void load_injection(void)
{
	const char *path = getenv("CUDA_INJECTION64_PATH");
	if (!path || !*path)
		return; /* no profiler: not one dlopen more than before */
	void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
	if (!init) {
		fprintf(stderr, "cudart stand-in: CUDA_INJECTION64_PATH %s: %s\n", path,
			h ? "no InitializeInjection" : dlerror());
		return;
	}
	init();
	void *cupti = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
	if (!cupti)
		return;
	g_api_enter = (fake_gpu_api_enter_fn)dlsym(cupti, FAKE_GPU_API_ENTER);
	g_api_exit = (fake_gpu_api_exit_fn)dlsym(cupti, FAKE_GPU_API_EXIT);
	g_kernel_record = (fake_gpu_kernel_fn)dlsym(cupti, FAKE_GPU_KERNEL);
	if (!g_api_enter || !g_api_exit || !g_kernel_record)
		g_api_enter = NULL; /* NVIDIA's libcupti: nothing to feed */
}

static void init_once(void)
{
	uint64_t ndev, capacity, kernel_us;
	if (env_u64("FLIGHTREC_FAKE_GPUS", 1, &ndev) || ndev > MAX_DEVICES ||
	    env_u64("FLIGHTREC_FAKE_GPU_BYTES", DEFAULT_DEVICE_BYTES, &capacity) ||
	    capacity > MAX_DEVICE_BYTES ||
	    env_u64("FLIGHTREC_FAKE_KERNEL_US", 50, &kernel_us) || kernel_us > 60000000) {
		g_init_error = cudaErrorInitializationError;
		return;
	}
	if (pthread_key_create(&g_thread_key, thread_state_free)) {
		g_init_error = cudaErrorInitializationError;
		return;
	}
	capacity = capacity / ALLOC_ALIGN * ALLOC_ALIGN;
	g_kernel_ns = kernel_us * 1000;
	for (int d = 0; d < (int)ndev; d++) {
		struct device *dev = &g_devices[d];
		uint64_t hint = DEVICE_VA_BASE + (uint64_t)d * DEVICE_VA_STRIDE;
		/* Reserve the range so no host mapping can ever share an address
		 * with fake device memory.  PROT_NONE + NORESERVE costs no RAM. */
		int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
		void *va = capacity ? mmap((void *)hint, capacity, PROT_NONE,
					   flags | MAP_FIXED_NOREPLACE, -1, 0) : MAP_FAILED;
		if (capacity && va == MAP_FAILED)
			va = mmap(NULL, capacity, PROT_NONE, flags, -1, 0);
		if (capacity && va == MAP_FAILED) {
			g_init_error = cudaErrorInitializationError;
			return;
		}
		dev->base = capacity ? (uint64_t)(uintptr_t)va : hint;
		dev->capacity_bytes = capacity;
		dev->legacy.device = d;
		dev->free_ranges = malloc(16 * sizeof(*dev->free_ranges));
		if (!dev->free_ranges) {
			g_init_error = cudaErrorInitializationError;
			return;
		}
		dev->cap_free = 16;
		dev->n_free = 0;
		if (capacity)
			dev->free_ranges[dev->n_free++] = (struct range){ dev->base, capacity };
	}
	g_ndevices = (int)ndev;
	g_init_error = ndev ? cudaSuccess : cudaErrorNoDevice;
	if (ndev)
		load_injection();
}

/* Every exported call starts here: initialise once, report a missing GPU. */
static cudaError_t ensure_init(void)
{
	pthread_once(&g_once, init_once);
	return g_init_error;
}

static struct thread_state *thread_state(void)
{
	if (!t_state) {
		t_state = calloc(1, sizeof(*t_state));
		if (t_state)
			pthread_setspecific(g_thread_key, t_state);
	}
	return t_state;
}

/* Records a call's result as the thread's last error (not success). */
static cudaError_t finish(cudaError_t err)
{
	if (err != cudaSuccess)
		t_last_error = err;
	return err;
}

/* ---- streams (call with g_lock held) ------------------------------------ */

static struct CUstream_st *find_stream(cudaStream_t s)
{
	for (struct CUstream_st *it = g_streams; it; it = it->next)
		if (it == s)
			return it;
	return NULL;
}

static struct CUstream_st *per_thread_stream(int device)
{
	struct thread_state *ts = thread_state();
	if (!ts)
		return NULL;
	if (!ts->per_thread[device]) {
		struct CUstream_st *s = calloc(1, sizeof(*s));
		if (!s)
			return NULL;
		s->device = device;
		s->next = g_streams;
		g_streams = s;
		ts->per_thread[device] = s;
	}
	return ts->per_thread[device];
}

/* The stream a handle names: NULL is the legacy stream, or the per-thread
 * stream in a _ptsz/_ptds variant; 0x1 and 0x2 are cudaStreamLegacy and
 * cudaStreamPerThread. */
static cudaError_t resolve_stream(cudaStream_t handle, enum default_stream dflt,
				  struct CUstream_st **out)
{
	if (handle == NULL)
		handle = dflt == USE_PER_THREAD ? cudaStreamPerThread : cudaStreamLegacy;
	if (handle == cudaStreamLegacy) {
		*out = &g_devices[t_device].legacy;
	} else if (handle == cudaStreamPerThread) {
		*out = per_thread_stream(t_device);
		if (!*out)
			return cudaErrorMemoryAllocation;
	} else {
		*out = find_stream(handle);
		if (!*out)
			return cudaErrorInvalidResourceHandle;
	}
	return cudaSuccess;
}

static int is_legacy(const struct CUstream_st *s)
{
	return s == &g_devices[s->device].legacy;
}

/* resolve_stream for an operation the stand-in cannot capture: on a
 * capturing stream it fails and invalidates the capture. */
static cudaError_t resolve_stream_op(cudaStream_t handle, enum default_stream dflt,
				     struct CUstream_st **out)
{
	cudaError_t err = resolve_stream(handle, dflt, out);
	if (!err && (*out)->capture) {
		(*out)->capture_invalid = 1;
		err = cudaErrorStreamCaptureUnsupported;
	}
	return err;
}

/* When work queued now on s can start, by NVIDIA's default-stream rules:
 * legacy-stream work waits for every blocking stream of the device, and
 * blocking-stream work waits for the legacy stream. */
static uint64_t stream_start_ns(const struct CUstream_st *s, uint64_t now)
{
	uint64_t start = max_u64(now, s->busy_until_ns);
	if (s->flags & cudaStreamNonBlocking)
		return start;
	const struct device *dev = &g_devices[s->device];
	if (!is_legacy(s))
		return max_u64(start, dev->legacy.busy_until_ns);
	for (const struct CUstream_st *it = g_streams; it; it = it->next)
		if (it->device == s->device && !(it->flags & cudaStreamNonBlocking))
			start = max_u64(start, it->busy_until_ns);
	return start;
}

static int stream_held(const struct CUstream_st *s)
{
	return s->hostfn_done != s->hostfn_queued;
}

/* Waits (g_lock held, released meanwhile) until no host function holds s. */
static void wait_unheld(struct CUstream_st *s)
{
	while (stream_held(s))
		pthread_cond_wait(&g_hostfn_cond, &g_lock);
}

/* Waits (g_lock held) until no stream of device is held. */
static void wait_device_unheld(int device)
{
	for (;;) {
		struct CUstream_st *held = NULL;
		for (struct CUstream_st *it = g_streams; it && !held; it = it->next)
			if (it->device == device && stream_held(it))
				held = it;
		if (!held)
			return;
		wait_unheld(held);
	}
}

/* Queues duration_ns of work on s; returns when it ends.  Behind a host
 * function the end is not known: the caller waits for the hold to end
 * first (see the model above). */
static uint64_t stream_enqueue(struct CUstream_st *s, uint64_t duration_ns)
{
	wait_unheld(s);
	uint64_t start = stream_start_ns(s, now_ns());
	s->busy_until_ns = start + duration_ns;
	return s->busy_until_ns;
}

static uint64_t device_idle_ns(int device)
{
	uint64_t t = g_devices[device].legacy.busy_until_ns;
	for (const struct CUstream_st *it = g_streams; it; it = it->next)
		if (it->device == device)
			t = max_u64(t, it->busy_until_ns);
	return t;
}

/* ---- memory tables (call with g_lock held) ------------------------------ */

/* The live allocation holding [addr, addr + bytes), or NULL. */
static struct allocation *find_allocation(uint64_t addr, uint64_t bytes, size_t *index)
{
	size_t i = table_upper(&g_allocs, addr);
	if (i == 0)
		return NULL;
	struct allocation *a = table_at(&g_allocs, i - 1);
	if (addr - a->addr >= max_u64(a->bytes, 1) || bytes > a->bytes - (addr - a->addr))
		return NULL;
	if (index)
		*index = i - 1;
	return a;
}

/* The pinned entry covering [addr, addr + bytes), or NULL. */
static struct pinned *find_pinned(uint64_t addr, uint64_t bytes, size_t *index)
{
	size_t i = table_upper(&g_pinned, addr);
	if (i == 0)
		return NULL;
	struct pinned *p = table_at(&g_pinned, i - 1);
	if (addr - p->addr >= p->bytes || bytes > p->bytes - (addr - p->addr))
		return NULL;
	if (index)
		*index = i - 1;
	return p;
}

static int pinned_overlaps(uint64_t addr, uint64_t bytes)
{
	size_t i = table_upper(&g_pinned, addr);
	if (i > 0) {
		const struct pinned *prev = table_at(&g_pinned, i - 1);
		if (prev->addr + prev->bytes > addr)
			return 1;
	}
	return i < g_pinned.n && table_key(&g_pinned, i) < addr + bytes;
}

/* First fit: the lowest free range that holds `bytes`. */
static int range_take(struct device *dev, uint64_t bytes, uint64_t *addr)
{
	for (size_t i = 0; i < dev->n_free; i++) {
		struct range *r = &dev->free_ranges[i];
		if (r->bytes < bytes)
			continue;
		*addr = r->addr;
		r->addr += bytes;
		r->bytes -= bytes;
		if (r->bytes == 0) {
			memmove(r, r + 1, (dev->n_free - i - 1) * sizeof(*r));
			dev->n_free--;
		}
		return 0;
	}
	return -1;
}

/* Returns [addr, addr + bytes) to the free list, merging neighbours. */
static int range_give(struct device *dev, uint64_t addr, uint64_t bytes)
{
	size_t i = 0;
	while (i < dev->n_free && dev->free_ranges[i].addr < addr)
		i++;
	int merge_prev = i > 0 && dev->free_ranges[i - 1].addr + dev->free_ranges[i - 1].bytes == addr;
	int merge_next = i < dev->n_free && addr + bytes == dev->free_ranges[i].addr;
	if (merge_prev && merge_next) {
		dev->free_ranges[i - 1].bytes += bytes + dev->free_ranges[i].bytes;
		memmove(&dev->free_ranges[i], &dev->free_ranges[i + 1],
			(dev->n_free - i - 1) * sizeof(struct range));
		dev->n_free--;
	} else if (merge_prev) {
		dev->free_ranges[i - 1].bytes += bytes;
	} else if (merge_next) {
		dev->free_ranges[i].addr = addr;
		dev->free_ranges[i].bytes += bytes;
	} else {
		if (dev->n_free == dev->cap_free) {
			struct range *p = realloc(dev->free_ranges,
						  2 * dev->cap_free * sizeof(*p));
			if (!p)
				return -1;
			dev->free_ranges = p;
			dev->cap_free *= 2;
		}
		memmove(&dev->free_ranges[i + 1], &dev->free_ranges[i],
			(dev->n_free - i) * sizeof(struct range));
		dev->free_ranges[i] = (struct range){ addr, bytes };
		dev->n_free++;
	}
	return 0;
}

/* ---- implementations (the exported functions below are thin shells) ----- */

static cudaError_t device_alloc(void **dev_ptr, size_t size, enum alloc_kind kind)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	if (!dev_ptr)
		return cudaErrorInvalidValue;
	*dev_ptr = NULL;
	if (size == 0)
		return cudaSuccess;
	if (size > UINT64_MAX - ALLOC_ALIGN)
		return cudaErrorMemoryAllocation;
	uint64_t reserved = ((uint64_t)size + ALLOC_ALIGN - 1) / ALLOC_ALIGN * ALLOC_ALIGN;
	pthread_mutex_lock(&g_lock);
	struct device *dev = &g_devices[t_device];
	struct allocation a = { 0, size, reserved, t_device, kind };
	err = cudaErrorMemoryAllocation;
	if (dev->capacity_bytes - dev->inuse_bytes < reserved)
		goto out;
	if (kind == ALLOC_DEVICE) {
		if (range_take(dev, reserved, &a.addr))
			goto out;
		if (table_insert(&g_allocs, &a)) {
			range_give(dev, a.addr, reserved);
			goto out;
		}
	} else {
		void *p = mmap(NULL, reserved, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			goto out;
		a.addr = (uint64_t)(uintptr_t)p;
		if (table_insert(&g_allocs, &a)) {
			munmap(p, reserved);
			goto out;
		}
	}
	dev->inuse_bytes += reserved;
	*dev_ptr = (void *)(uintptr_t)a.addr;
	err = cudaSuccess;
out:
	pthread_mutex_unlock(&g_lock);
	return err;
}

/* wait_idle: cudaFree waits for the device; cudaFreeAsync does not. */
static cudaError_t device_free(void *dev_ptr, int wait_idle)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	if (!dev_ptr)
		return cudaSuccess;
	uint64_t addr = (uint64_t)(uintptr_t)dev_ptr;
	pthread_mutex_lock(&g_lock);
	size_t index;
	struct allocation *a = find_allocation(addr, 0, &index);
	if (!a || a->addr != addr) {
		pthread_mutex_unlock(&g_lock);
		return cudaErrorInvalidValue;
	}
	struct allocation gone = *a;
	if (wait_idle)
		wait_device_unheld(gone.device);
	uint64_t idle = device_idle_ns(gone.device);
	pthread_mutex_unlock(&g_lock);
	if (wait_idle)
		sleep_until(idle);
	pthread_mutex_lock(&g_lock);
	/* Look again: another thread may have freed it while we waited. */
	a = find_allocation(addr, 0, &index);
	if (!a || a->addr != addr) {
		pthread_mutex_unlock(&g_lock);
		return cudaErrorInvalidValue;
	}
	struct device *dev = &g_devices[gone.device];
	if (gone.kind == ALLOC_DEVICE)
		range_give(dev, gone.addr, gone.reserved);
	else
		munmap(dev_ptr, gone.reserved);
	dev->inuse_bytes -= gone.reserved;
	table_remove(&g_allocs, index);
	pthread_mutex_unlock(&g_lock);
	return cudaSuccess;
}

static cudaError_t host_alloc(void **ptr, size_t size, unsigned int flags)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	if (!ptr || (flags & ~(unsigned)(cudaHostAllocPortable | cudaHostAllocMapped |
					 cudaHostAllocWriteCombined)))
		return cudaErrorInvalidValue;
	*ptr = NULL;
	if (size == 0)
		return cudaSuccess;
	long page = sysconf(_SC_PAGESIZE);
	size_t mapped = (size + (size_t)page - 1) / (size_t)page * (size_t)page;
	if (mapped < size)
		return cudaErrorMemoryAllocation;
	/* MAP_POPULATE: pinning faults every page in, as the driver does. */
	void *p = mmap(NULL, mapped, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED)
		return cudaErrorMemoryAllocation;
	struct pinned entry = { (uint64_t)(uintptr_t)p, size, mapped, PINNED_ALLOCATED };
	pthread_mutex_lock(&g_lock);
	int bad = table_insert(&g_pinned, &entry);
	pthread_mutex_unlock(&g_lock);
	if (bad) {
		munmap(p, mapped);
		return cudaErrorMemoryAllocation;
	}
	*ptr = p;
	return cudaSuccess;
}

static cudaError_t host_free(void *ptr)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	if (!ptr)
		return cudaSuccess;
	uint64_t addr = (uint64_t)(uintptr_t)ptr;
	pthread_mutex_lock(&g_lock);
	size_t index;
	struct pinned *p = find_pinned(addr, 0, &index);
	if (!p || p->addr != addr || p->kind != PINNED_ALLOCATED) {
		pthread_mutex_unlock(&g_lock);
		return cudaErrorInvalidValue;
	}
	uint64_t mapped = p->mapped;
	table_remove(&g_pinned, index);
	wait_device_unheld(t_device);
	uint64_t idle = device_idle_ns(t_device);
	pthread_mutex_unlock(&g_lock);
	sleep_until(idle); /* pending copies may still read it */
	munmap(ptr, mapped);
	return cudaSuccess;
}

static cudaError_t host_register(void *ptr, size_t size, unsigned int flags)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	if (!ptr || size == 0 || (uint64_t)(uintptr_t)ptr > UINT64_MAX - size ||
	    flags > (cudaHostRegisterPortable | cudaHostRegisterMapped |
		     cudaHostRegisterIoMemory | cudaHostRegisterReadOnly))
		return cudaErrorInvalidValue;
	struct pinned entry = { (uint64_t)(uintptr_t)ptr, size, 0, PINNED_REGISTERED };
	pthread_mutex_lock(&g_lock);
	if (pinned_overlaps(entry.addr, size))
		err = cudaErrorHostMemoryAlreadyRegistered;
	else if (table_insert(&g_pinned, &entry))
		err = cudaErrorMemoryAllocation;
	pthread_mutex_unlock(&g_lock);
	return err;
}

static cudaError_t host_unregister(void *ptr)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	if (!ptr)
		return cudaErrorInvalidValue;
	uint64_t addr = (uint64_t)(uintptr_t)ptr;
	pthread_mutex_lock(&g_lock);
	size_t index;
	struct pinned *p = find_pinned(addr, 0, &index);
	if (!p || p->addr != addr || p->kind != PINNED_REGISTERED)
		err = cudaErrorHostMemoryNotRegistered;
	else
		table_remove(&g_pinned, index);
	pthread_mutex_unlock(&g_lock);
	return err;
}

/* One side of a copy, classified under g_lock. */
struct copy_end {
	int on_device;      /* inside a cudaMalloc'd or managed allocation */
	int real_memory;    /* host memory or managed: bytes can be touched */
	int pinned;
	int invalid;        /* device memory, but not [p, p + count) of one live
			       allocation (overrun, freed, never allocated) */
};

static int in_device_range(uint64_t addr)
{
	for (int d = 0; d < g_ndevices; d++)
		if (addr - g_devices[d].base < g_devices[d].capacity_bytes)
			return 1;
	return 0;
}

static struct copy_end classify(const void *p, size_t count)
{
	uint64_t addr = (uint64_t)(uintptr_t)p;
	struct copy_end e = { 0, 1, 0, 0 };
	const struct allocation *a = find_allocation(addr, count, NULL);
	if (a) {
		e.on_device = 1;
		e.real_memory = a->kind == ALLOC_MANAGED;
	} else if (find_allocation(addr, 0, NULL) || in_device_range(addr)) {
		e.invalid = 1;
	} else {
		e.pinned = find_pinned(addr, count, NULL) != NULL;
	}
	return e;
}

/* Moves the host bytes of a pageable copy through the thread's bounce
 * buffer: reads the source (H2D) or writes the destination (D2H). */
static void bounce_copy(void *dst, const void *src, size_t count, int host_is_src)
{
	struct thread_state *ts = thread_state();
	if (ts && !ts->bounce)
		ts->bounce = calloc(1, BOUNCE_BYTES);
	if (!ts || !ts->bounce)
		return;
	for (size_t off = 0; off < count; off += BOUNCE_BYTES) {
		size_t n = count - off < BOUNCE_BYTES ? count - off : BOUNCE_BYTES;
		if (host_is_src)
			memcpy(ts->bounce, (const char *)src + off, n);
		else
			memcpy((char *)dst + off, ts->bounce, n);
	}
}

/* cudaMemcpy / cudaMemcpyAsync and their _ptds / _ptsz variants. */
static cudaError_t memcpy_common(void *dst, const void *src, size_t count,
				 enum cudaMemcpyKind kind, cudaStream_t handle,
				 enum default_stream dflt, int async)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	if ((unsigned)kind > cudaMemcpyDefault)
		return cudaErrorInvalidMemcpyDirection;
	if (count == 0)
		return cudaSuccess;
	if (!dst || !src)
		return cudaErrorInvalidValue;

	pthread_mutex_lock(&g_lock);
	struct CUstream_st *s;
	err = resolve_stream_op(handle, dflt, &s);
	if (err) {
		pthread_mutex_unlock(&g_lock);
		return err;
	}
	struct copy_end from = classify(src, count), to = classify(dst, count);
	if (from.invalid || to.invalid) {
		pthread_mutex_unlock(&g_lock);
		return cudaErrorInvalidValue;
	}
	enum cudaMemcpyKind actual = (enum cudaMemcpyKind)(from.on_device * 2 + to.on_device);
	/* 0 H2H, 1 H2D, 2 D2H, 3 D2D: the same numbering as cudaMemcpyKind */
	if (kind != cudaMemcpyDefault && kind != actual) {
		pthread_mutex_unlock(&g_lock);
		return cudaErrorInvalidValue;
	}
	uint64_t duration;
	int pageable = 0;
	switch (actual) {
	case cudaMemcpyHostToDevice:
		pageable = !from.pinned;
		duration = transfer_ns(count, pageable ? PAGEABLE_BYTES_PER_S : PINNED_BYTES_PER_S);
		break;
	case cudaMemcpyDeviceToHost:
		pageable = !to.pinned;
		duration = transfer_ns(count, pageable ? PAGEABLE_BYTES_PER_S : PINNED_BYTES_PER_S);
		break;
	case cudaMemcpyDeviceToDevice:
		duration = transfer_ns(count, D2D_BYTES_PER_S);
		break;
	default:
		duration = 0; /* host to host: a plain memcpy below */
		break;
	}
	uint64_t end = stream_enqueue(s, duration);
	uint64_t start = end - duration;
	pthread_mutex_unlock(&g_lock);

	/* A pageable copy is staged by the CPU even when "async", so the
	 * call returns only after the staging (NVIDIA's behaviour too). */
	if (!async || pageable || actual == cudaMemcpyHostToHost)
		sleep_until(start);
	if (from.real_memory && to.real_memory)
		memmove(dst, src, count);
	else if (pageable)
		bounce_copy(dst, src, count, actual == cudaMemcpyHostToDevice);
	if (!async || pageable)
		sleep_until(end);
	return cudaSuccess;
}

static cudaError_t memset_common(void *dev_ptr, int value, size_t count, cudaStream_t handle,
				 enum default_stream dflt)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	if (count == 0)
		return cudaSuccess;
	pthread_mutex_lock(&g_lock);
	struct CUstream_st *s;
	err = resolve_stream_op(handle, dflt, &s);
	const struct allocation *a =
		err ? NULL : find_allocation((uint64_t)(uintptr_t)dev_ptr, count, NULL);
	if (!err && !a)
		err = cudaErrorInvalidValue;
	if (!err) {
		stream_enqueue(s, transfer_ns(count, D2D_BYTES_PER_S));
		if (a->kind == ALLOC_MANAGED)
			memset(dev_ptr, value, count);
	}
	pthread_mutex_unlock(&g_lock);
	return err;
}

static cudaError_t launch_common(const void *func, dim3 grid, dim3 block, size_t shared_bytes,
				 cudaStream_t handle, enum default_stream dflt, uint32_t cbid,
				 const char *api)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	uint32_t correlation = g_api_enter ? g_api_enter(cbid, api) : 0;
	struct fake_gpu_kernel k = { .correlation_id = correlation };
	int ran = 0;
	if (!func)
		err = cudaErrorInvalidDeviceFunction;
	else if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z ||
		 (uint64_t)block.x * block.y * block.z > MAX_THREADS_PER_BLOCK)
		err = cudaErrorInvalidConfiguration;
	if (!err) {
		pthread_mutex_lock(&g_lock);
		struct CUstream_st *s;
		err = resolve_stream(handle, dflt, &s);
		if (!err && s->capture) {
			s->capture->n_kernels++; /* captured, not run */
			s->capture->duration_ns += g_kernel_ns;
		} else if (!err) {
			k.end_ns = stream_enqueue(s, g_kernel_ns);
			k.start_ns = k.end_ns - g_kernel_ns;
			if (!s->activity_id)
				s->activity_id = ++g_next_activity_id;
			k.stream = s->activity_id;
			k.device = (uint32_t)s->device;
			k.context = (uint32_t)s->device + 1;
			ran = 1;
		}
		pthread_mutex_unlock(&g_lock);
	}
	if (correlation && ran) {
		Dl_info info;
		char fallback[32];
		if (!dladdr(func, &info) || !info.dli_sname || info.dli_saddr != func) {
			snprintf(fallback, sizeof(fallback), "kernel@%p", func);
			info.dli_sname = fallback;
		}
		k.name = info.dli_sname;
		k.grid[0] = (int32_t)grid.x, k.grid[1] = (int32_t)grid.y, k.grid[2] = (int32_t)grid.z;
		k.block[0] = (int32_t)block.x, k.block[1] = (int32_t)block.y, k.block[2] = (int32_t)block.z;
		k.dynamic_shared_bytes = (int32_t)shared_bytes;
		g_kernel_record(&k);
	}
	if (correlation)
		g_api_exit(cbid, api, correlation);
	return err;
}

static cudaError_t stream_sync_common(cudaStream_t handle, enum default_stream dflt)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	pthread_mutex_lock(&g_lock);
	struct CUstream_st *s;
	err = resolve_stream_op(handle, dflt, &s);
	if (!err)
		wait_unheld(s);
	uint64_t until = err ? 0 : s->busy_until_ns;
	pthread_mutex_unlock(&g_lock);
	if (!err)
		sleep_until(until);
	return err;
}

static cudaError_t stream_query_common(cudaStream_t handle, enum default_stream dflt)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	pthread_mutex_lock(&g_lock);
	struct CUstream_st *s;
	err = resolve_stream_op(handle, dflt, &s);
	if (!err && (stream_held(s) || s->busy_until_ns > now_ns()))
		err = cudaErrorNotReady;
	pthread_mutex_unlock(&g_lock);
	return err;
}

static cudaError_t stream_create(cudaStream_t *out, unsigned int flags)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	if (!out || flags > cudaStreamNonBlocking)
		return cudaErrorInvalidValue;
	struct CUstream_st *s = calloc(1, sizeof(*s));
	if (!s)
		return cudaErrorMemoryAllocation;
	s->device = t_device;
	s->flags = flags;
	pthread_mutex_lock(&g_lock);
	s->next = g_streams;
	g_streams = s;
	pthread_mutex_unlock(&g_lock);
	*out = s;
	return cudaSuccess;
}

static cudaError_t stream_destroy(cudaStream_t handle)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	pthread_mutex_lock(&g_lock);
	/* a host function still running uses it: wait for it first */
	struct CUstream_st *s = find_stream(handle);
	if (s)
		wait_unheld(s);
	err = cudaErrorInvalidResourceHandle;
	struct thread_state *ts = t_state;
	for (struct CUstream_st **link = &g_streams; *link; link = &(*link)->next) {
		if (*link != handle)
			continue;
		int per_thread = 0;
		for (int d = 0; ts && d < MAX_DEVICES; d++)
			per_thread |= ts->per_thread[d] == handle;
		if (per_thread)
			break;
		*link = handle->next;
		free(handle->capture); /* a capture never ended: its graph is gone */
		free(handle);
		err = cudaSuccess;
		break;
	}
	pthread_mutex_unlock(&g_lock);
	return err;
}

static struct CUevent_st *find_event(cudaEvent_t e)
{
	for (struct CUevent_st *it = g_events; it; it = it->next)
		if (it == e)
			return it;
	return NULL;
}

static cudaError_t event_create(cudaEvent_t *out, unsigned int flags)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	if (!out || flags > (cudaEventBlockingSync | cudaEventDisableTiming))
		return cudaErrorInvalidValue;
	struct CUevent_st *e = calloc(1, sizeof(*e));
	if (!e)
		return cudaErrorMemoryAllocation;
	e->flags = flags;
	pthread_mutex_lock(&g_lock);
	e->next = g_events;
	g_events = e;
	pthread_mutex_unlock(&g_lock);
	*out = e;
	return cudaSuccess;
}

static cudaError_t event_record(cudaEvent_t handle, cudaStream_t stream, enum default_stream dflt)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	pthread_mutex_lock(&g_lock);
	struct CUevent_st *e = find_event(handle);
	struct CUstream_st *s = NULL;
	err = e ? resolve_stream_op(stream, dflt, &s) : cudaErrorInvalidResourceHandle;
	if (!err) {
		e->recorded = 1;
		e->ready_ns = stream_start_ns(s, now_ns());
		/* behind a host function: complete when it has returned */
		e->pending_stream = stream_held(s) ? s : NULL;
		e->pending_ticket = s->hostfn_queued;
	}
	pthread_mutex_unlock(&g_lock);
	return err;
}

/* wait: cudaEventSynchronize; else cudaEventQuery. */
static cudaError_t event_wait(cudaEvent_t handle, int wait)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	pthread_mutex_lock(&g_lock);
	struct CUevent_st *e = find_event(handle);
	/* recorded behind a host function: not ready until it returns (look
	 * the event up again after each wait: it may have been destroyed) */
	while (wait && e && e->pending_stream) {
		pthread_cond_wait(&g_hostfn_cond, &g_lock);
		e = find_event(handle);
	}
	int pending = e && e->pending_stream;
	uint64_t ready = e && e->recorded ? e->ready_ns : 0;
	pthread_mutex_unlock(&g_lock);
	if (!e)
		return cudaErrorInvalidResourceHandle;
	if (wait)
		sleep_until(ready);
	else if (pending || ready > now_ns())
		return cudaErrorNotReady;
	return cudaSuccess;
}

static cudaError_t event_elapsed(float *ms, cudaEvent_t start, cudaEvent_t end)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	if (!ms)
		return cudaErrorInvalidValue;
	pthread_mutex_lock(&g_lock);
	struct CUevent_st *a = find_event(start), *b = find_event(end);
	uint64_t now = now_ns();
	if (!a || !b)
		err = cudaErrorInvalidResourceHandle;
	else if ((a->flags | b->flags) & cudaEventDisableTiming || !a->recorded || !b->recorded)
		err = cudaErrorInvalidResourceHandle;
	else if (a->pending_stream || b->pending_stream || a->ready_ns > now || b->ready_ns > now)
		err = cudaErrorNotReady;
	else
		*ms = (float)(((double)b->ready_ns - (double)a->ready_ns) / 1e6);
	pthread_mutex_unlock(&g_lock);
	return err;
}

static cudaError_t event_destroy(cudaEvent_t handle)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	pthread_mutex_lock(&g_lock);
	err = cudaErrorInvalidResourceHandle;
	for (struct CUevent_st **link = &g_events; *link; link = &(*link)->next) {
		if (*link == handle) {
			*link = handle->next;
			free(handle);
			err = cudaSuccess;
			break;
		}
	}
	pthread_mutex_unlock(&g_lock);
	return err;
}

/* cudaStreamWaitEvent: work queued on the stream from now on starts no
 * earlier than the event's work ends. */
static cudaError_t stream_wait_event(cudaStream_t stream, cudaEvent_t handle, unsigned int flags,
				     enum default_stream dflt)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	if (flags & ~(unsigned)cudaEventWaitExternal)
		return cudaErrorInvalidValue;
	pthread_mutex_lock(&g_lock);
	struct CUevent_st *e = find_event(handle);
	struct CUstream_st *s = NULL;
	err = e ? resolve_stream_op(stream, dflt, &s) : cudaErrorInvalidResourceHandle;
	/* an event behind a host function: its end is not known yet, so wait
	 * for it here (see the model above) */
	int legacy = !err && is_legacy(s);
	while (!err && e->pending_stream) {
		pthread_cond_wait(&g_hostfn_cond, &g_lock);
		e = find_event(handle); /* either may be destroyed meanwhile */
		if (!e || (!legacy && !find_stream(s)))
			err = cudaErrorInvalidResourceHandle;
	}
	if (!err && e->recorded)
		s->busy_until_ns = max_u64(s->busy_until_ns, e->ready_ns);
	pthread_mutex_unlock(&g_lock);
	return err;
}

static cudaError_t begin_capture(cudaStream_t handle, enum cudaStreamCaptureMode mode,
				 enum default_stream dflt)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	if ((unsigned)mode > cudaStreamCaptureModeRelaxed)
		return cudaErrorInvalidValue;
	struct CUgraph_st *g = calloc(1, sizeof(*g));
	if (!g)
		return cudaErrorMemoryAllocation;
	pthread_mutex_lock(&g_lock);
	struct CUstream_st *s;
	err = resolve_stream(handle, dflt, &s);
	if (!err && is_legacy(s))
		err = cudaErrorStreamCaptureUnsupported;
	else if (!err && s->capture)
		err = cudaErrorIllegalState;
	if (!err) {
		s->capture = g;
		s->capture_invalid = 0;
		s->capture_mode = mode;
		s->capture_thread = pthread_self();
		g = NULL;
	}
	pthread_mutex_unlock(&g_lock);
	free(g);
	return err;
}

static cudaError_t end_capture(cudaStream_t handle, cudaGraph_t *out, enum default_stream dflt)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	if (!out)
		return cudaErrorInvalidValue;
	pthread_mutex_lock(&g_lock);
	struct CUstream_st *s;
	err = resolve_stream(handle, dflt, &s);
	if (!err && !s->capture)
		err = cudaErrorIllegalState;
	else if (!err && s->capture_mode != cudaStreamCaptureModeRelaxed &&
		 !pthread_equal(s->capture_thread, pthread_self()))
		err = cudaErrorStreamCaptureWrongThread;
	if (!err) {
		struct CUgraph_st *g = s->capture;
		s->capture = NULL;
		if (s->capture_invalid) {
			free(g);
			*out = NULL;
			err = cudaErrorStreamCaptureInvalidated;
		} else {
			g->next = g_graphs;
			g_graphs = g;
			*out = g;
		}
	}
	pthread_mutex_unlock(&g_lock);
	return err;
}

static struct CUgraph_st *find_graph(cudaGraph_t g)
{
	for (struct CUgraph_st *it = g_graphs; it; it = it->next)
		if (it == g)
			return it;
	return NULL;
}

static struct CUgraphExec_st *find_graph_exec(cudaGraphExec_t x)
{
	for (struct CUgraphExec_st *it = g_graph_execs; it; it = it->next)
		if (it == x)
			return it;
	return NULL;
}

/* The flags NVIDIA defines: AutoFreeOnLaunch, Upload, DeviceLaunch,
 * UseNodePriority (all without effect here). */
#define GRAPH_INSTANTIATE_FLAGS 0xfull

static cudaError_t graph_instantiate(cudaGraphExec_t *out, cudaGraph_t graph,
				     unsigned long long flags)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	if (!out || (flags & ~GRAPH_INSTANTIATE_FLAGS))
		return cudaErrorInvalidValue;
	struct CUgraphExec_st *x = calloc(1, sizeof(*x));
	if (!x)
		return cudaErrorMemoryAllocation;
	pthread_mutex_lock(&g_lock);
	const struct CUgraph_st *g = find_graph(graph);
	if (g) {
		x->n_kernels = g->n_kernels;
		x->duration_ns = g->duration_ns;
		x->next = g_graph_execs;
		g_graph_execs = x;
		*out = x;
		x = NULL;
	} else {
		err = cudaErrorInvalidValue;
	}
	pthread_mutex_unlock(&g_lock);
	free(x);
	return err;
}

/* Queues the graph's kernels on the stream, back to back. */
static cudaError_t graph_launch(cudaGraphExec_t exec, cudaStream_t stream, enum default_stream dflt)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	pthread_mutex_lock(&g_lock);
	const struct CUgraphExec_st *x = find_graph_exec(exec);
	struct CUstream_st *s = NULL;
	err = x ? resolve_stream_op(stream, dflt, &s) : cudaErrorInvalidResourceHandle;
	if (!err)
		stream_enqueue(s, x->duration_ns);
	pthread_mutex_unlock(&g_lock);
	return err;
}

static cudaError_t graph_destroy(cudaGraph_t graph)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	pthread_mutex_lock(&g_lock);
	err = cudaErrorInvalidValue;
	for (struct CUgraph_st **link = &g_graphs; *link; link = &(*link)->next) {
		if (*link == graph) {
			*link = graph->next;
			free(graph);
			err = cudaSuccess;
			break;
		}
	}
	pthread_mutex_unlock(&g_lock);
	return err;
}

/* Work already launched keeps its place on its stream. */
static cudaError_t graph_exec_destroy(cudaGraphExec_t exec)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	pthread_mutex_lock(&g_lock);
	err = cudaErrorInvalidValue;
	for (struct CUgraphExec_st **link = &g_graph_execs; *link; link = &(*link)->next) {
		if (*link == exec) {
			*link = exec->next;
			free(exec);
			err = cudaSuccess;
			break;
		}
	}
	pthread_mutex_unlock(&g_lock);
	return err;
}

static cudaError_t device_sync(void)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	pthread_mutex_lock(&g_lock);
	wait_device_unheld(t_device);
	uint64_t idle = device_idle_ns(t_device);
	pthread_mutex_unlock(&g_lock);
	sleep_until(idle);
	return cudaSuccess;
}

/* ---- host functions ------------------------------------------------------ */

struct hostfn_job {
	struct CUstream_st *s;
	cudaHostFn_t fn;
	void *data;
	uint64_t ticket;
};

/* Runs one host function when its turn on the stream comes, then releases
 * the stream (if no other holds it) and the events recorded behind it. */
static void *hostfn_thread(void *arg)
{
	struct hostfn_job *j = arg;
	struct CUstream_st *s = j->s;
	pthread_mutex_lock(&g_lock);
	while (s->hostfn_done != j->ticket - 1)
		pthread_cond_wait(&g_hostfn_cond, &g_lock);
	uint64_t start = s->busy_until_ns; /* the work queued before it */
	pthread_mutex_unlock(&g_lock);
	sleep_until(start);
	j->fn(j->data);
	pthread_mutex_lock(&g_lock);
	s->busy_until_ns = max_u64(s->busy_until_ns, now_ns());
	s->hostfn_done = j->ticket;
	for (struct CUevent_st *e = g_events; e; e = e->next)
		if (e->pending_stream == s && e->pending_ticket <= j->ticket) {
			e->pending_stream = NULL;
			e->ready_ns = s->busy_until_ns;
		}
	pthread_cond_broadcast(&g_hostfn_cond);
	pthread_mutex_unlock(&g_lock);
	free(j);
	return NULL;
}

static cudaError_t launch_host_func(cudaStream_t handle, cudaHostFn_t fn, void *data,
				    enum default_stream dflt)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	if (!fn)
		return cudaErrorInvalidValue;
	struct hostfn_job *j = malloc(sizeof(*j));
	if (!j)
		return cudaErrorMemoryAllocation;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&g_lock);
	struct CUstream_st *s;
	err = resolve_stream_op(handle, dflt, &s);
	if (!err) {
		*j = (struct hostfn_job){ s, fn, data, s->hostfn_queued + 1 };
		pthread_t t;
		/* the thread waits for g_lock, held here until the stream counts it */
		if (pthread_create(&t, &attr, hostfn_thread, j) == 0)
			s->hostfn_queued = j->ticket;
		else
			err = cudaErrorMemoryAllocation;
	}
	pthread_mutex_unlock(&g_lock);
	pthread_attr_destroy(&attr);
	if (err)
		free(j);
	return err;
}

static cudaError_t device_count(int *count)
{
	if (!count)
		return cudaErrorInvalidValue;
	cudaError_t err = ensure_init();
	*count = err ? 0 : g_ndevices;
	return err;
}

static cudaError_t set_device(int device)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	if (device < 0 || device >= g_ndevices)
		return cudaErrorInvalidDevice;
	t_device = device;
	return cudaSuccess;
}

static cudaError_t get_device(int *device)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	if (!device)
		return cudaErrorInvalidValue;
	*device = t_device;
	return cudaSuccess;
}

static cudaError_t mem_get_info(size_t *free_bytes, size_t *total_bytes)
{
	cudaError_t err = ensure_init();
	if (err)
		return err;
	if (!free_bytes || !total_bytes)
		return cudaErrorInvalidValue;
	pthread_mutex_lock(&g_lock);
	const struct device *dev = &g_devices[t_device];
	*free_bytes = dev->capacity_bytes - dev->inuse_bytes;
	*total_bytes = dev->capacity_bytes;
	pthread_mutex_unlock(&g_lock);
	return cudaSuccess;
}

static cudaError_t version(int *out)
{
	if (!out)
		return cudaErrorInvalidValue;
	*out = STANDIN_VERSION;
	return cudaSuccess;
}

static __attribute__((noinline)) cudaError_t last_error(int reset)
{
	cudaError_t err = t_last_error;
	if (reset)
		t_last_error = cudaSuccess;
	return err;
}

#define ERROR_CASE_NAME(name, value, msg) case value: return #name;
#define ERROR_CASE_TEXT(name, value, msg) case value: return msg;

/* noinline, here and below: an exported function that calls nothing is a
 * leaf, and GCC drops the frame setup of a leaf despite
 * -fno-omit-frame-pointer; it would then not start with push %rbp. */
static __attribute__((noinline)) const char *error_name(int code)
{
	switch (code) {
	CUDART_STANDIN_ERRORS(ERROR_CASE_NAME)
	default: return "unrecognized error code";
	}
}

static __attribute__((noinline)) const char *error_text(int code)
{
	switch (code) {
	CUDART_STANDIN_ERRORS(ERROR_CASE_TEXT)
	default: return "unrecognized error code";
	}
}

/* ---- the exported API ---------------------------------------------------
 * Each exported function is a shell around an implementation above, so its
 * code starts with the `push %rbp; mov %rsp,%rbp` frame setup (see
 * CMakeLists.txt for the flags that keep it so).  Exports are chosen by
 * libcudart.map, not by visibility. */

cudaError_t cudaGetDeviceCount(int *count) { return finish(device_count(count)); }
cudaError_t cudaSetDevice(int device) { return finish(set_device(device)); }
cudaError_t cudaGetDevice(int *device) { return finish(get_device(device)); }
cudaError_t cudaDeviceSynchronize(void) { return finish(device_sync()); }
cudaError_t cudaDriverGetVersion(int *v) { return finish(version(v)); }
cudaError_t cudaRuntimeGetVersion(int *v) { return finish(version(v)); }

cudaError_t cudaGetLastError(void) { return last_error(1); }
cudaError_t cudaPeekAtLastError(void) { return last_error(0); }
const char *cudaGetErrorString(cudaError_t error) { return error_text((int)error); }
const char *cudaGetErrorName(cudaError_t error) { return error_name((int)error); }

cudaError_t cudaStreamCreate(cudaStream_t *s) { return finish(stream_create(s, cudaStreamDefault)); }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
	return finish(stream_create(s, flags));
}
cudaError_t cudaStreamDestroy(cudaStream_t s) { return finish(stream_destroy(s)); }
cudaError_t cudaStreamSynchronize(cudaStream_t s) { return finish(stream_sync_common(s, USE_LEGACY)); }
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s)
{
	return finish(stream_sync_common(s, USE_PER_THREAD));
}
cudaError_t cudaStreamQuery(cudaStream_t s) { return finish(stream_query_common(s, USE_LEGACY)); }
cudaError_t cudaStreamQuery_ptsz(cudaStream_t s)
{
	return finish(stream_query_common(s, USE_PER_THREAD));
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags)
{
	return finish(stream_wait_event(s, e, flags, USE_LEGACY));
}
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t s, cudaEvent_t e, unsigned int flags)
{
	return finish(stream_wait_event(s, e, flags, USE_PER_THREAD));
}

cudaError_t cudaEventCreate(cudaEvent_t *e) { return finish(event_create(e, cudaEventDefault)); }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags)
{
	return finish(event_create(e, flags));
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) { return finish(event_record(e, s, USE_LEGACY)); }
cudaError_t cudaEventRecord_ptsz(cudaEvent_t e, cudaStream_t s)
{
	return finish(event_record(e, s, USE_PER_THREAD));
}
cudaError_t cudaEventQuery(cudaEvent_t e) { return finish(event_wait(e, 0)); }
cudaError_t cudaEventSynchronize(cudaEvent_t e) { return finish(event_wait(e, 1)); }
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
	return finish(event_elapsed(ms, start, end));
}
cudaError_t cudaEventDestroy(cudaEvent_t e) { return finish(event_destroy(e)); }

cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *userData)
{
	return finish(launch_host_func(s, fn, userData, USE_LEGACY));
}
cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t s, cudaHostFn_t fn, void *userData)
{
	return finish(launch_host_func(s, fn, userData, USE_PER_THREAD));
}

cudaError_t cudaMalloc(void **devPtr, size_t size) { return finish(device_alloc(devPtr, size, ALLOC_DEVICE)); }
cudaError_t cudaFree(void *devPtr) { return finish(device_free(devPtr, 1)); }

cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t s)
{
	cudaError_t err = stream_query_common(s, USE_LEGACY);
	return finish(err && err != cudaErrorNotReady ? err : device_alloc(devPtr, size, ALLOC_DEVICE));
}
cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t s)
{
	cudaError_t err = stream_query_common(s, USE_PER_THREAD);
	return finish(err && err != cudaErrorNotReady ? err : device_alloc(devPtr, size, ALLOC_DEVICE));
}
cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t s)
{
	cudaError_t err = stream_query_common(s, USE_LEGACY);
	return finish(err && err != cudaErrorNotReady ? err : device_free(devPtr, 0));
}
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t s)
{
	cudaError_t err = stream_query_common(s, USE_PER_THREAD);
	return finish(err && err != cudaErrorNotReady ? err : device_free(devPtr, 0));
}

cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
	if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost)
		return finish(cudaErrorInvalidValue);
	return finish(device_alloc(devPtr, size, ALLOC_MANAGED));
}

cudaError_t cudaMallocHost(void **ptr, size_t size) { return finish(host_alloc(ptr, size, 0)); }
cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
	return finish(host_alloc(pHost, size, flags));
}
cudaError_t cudaFreeHost(void *ptr) { return finish(host_free(ptr)); }
cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
	return finish(host_register(ptr, size, flags));
}
cudaError_t cudaHostUnregister(void *ptr) { return finish(host_unregister(ptr)); }
cudaError_t cudaMemGetInfo(size_t *free, size_t *total) { return finish(mem_get_info(free, total)); }

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	return finish(memcpy_common(dst, src, count, kind, NULL, USE_LEGACY, 0));
}
cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	return finish(memcpy_common(dst, src, count, kind, NULL, USE_PER_THREAD, 0));
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
			    cudaStream_t stream)
{
	return finish(memcpy_common(dst, src, count, kind, stream, USE_LEGACY, 1));
}
cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count,
				 enum cudaMemcpyKind kind, cudaStream_t stream)
{
	return finish(memcpy_common(dst, src, count, kind, stream, USE_PER_THREAD, 1));
}

cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
	return finish(memset_common(devPtr, value, count, NULL, USE_LEGACY));
}
cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count)
{
	return finish(memset_common(devPtr, value, count, NULL, USE_PER_THREAD));
}
cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
	return finish(memset_common(devPtr, value, count, stream, USE_LEGACY));
}
cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream)
{
	return finish(memset_common(devPtr, value, count, stream, USE_PER_THREAD));
}

cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
			     size_t sharedMem, cudaStream_t stream)
{
	(void)args;
	return finish(launch_common(func, gridDim, blockDim, sharedMem, stream, USE_LEGACY,
				    CUPTI_CBID_LAUNCH_KERNEL, "cudaLaunchKernel"));
}
cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
				  size_t sharedMem, cudaStream_t stream)
{
	(void)args;
	return finish(launch_common(func, gridDim, blockDim, sharedMem, stream, USE_PER_THREAD,
				    CUPTI_CBID_LAUNCH_KERNEL_PTSZ, "cudaLaunchKernel_ptsz"));
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode)
{
	return finish(begin_capture(s, mode, USE_LEGACY));
}
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t s, enum cudaStreamCaptureMode mode)
{
	return finish(begin_capture(s, mode, USE_PER_THREAD));
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *pGraph)
{
	return finish(end_capture(s, pGraph, USE_LEGACY));
}
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t s, cudaGraph_t *pGraph)
{
	return finish(end_capture(s, pGraph, USE_PER_THREAD));
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
				 unsigned long long flags)
{
	return finish(graph_instantiate(pGraphExec, graph, flags));
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s)
{
	return finish(graph_launch(exec, s, USE_LEGACY));
}
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t s)
{
	return finish(graph_launch(exec, s, USE_PER_THREAD));
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) { return finish(graph_exec_destroy(exec)); }
cudaError_t cudaGraphDestroy(cudaGraph_t graph) { return finish(graph_destroy(graph)); }
