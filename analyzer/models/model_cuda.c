/* The CUDA API model: one pass over the cuda events, memory bounded by
 * threads, live allocations and functions, never by the number of calls.
 * Not for the memory ledger (model_mem.c) nor for output (cmd_cuda.c).
 *
 * Per function (and its _ptsz/_ptds variant): count, total, self, max,
 * p50/p99, errors by code.  Self time = duration minus the time of the
 * CUDA calls nested in it on the same thread (a runtime call calling a
 * probed driver call).  The recorder writes a call when it returns, so on
 * one thread a nested call arrives before the call around it.  Each thread
 * keeps a window (CUDA_NEST_WINDOW) of calls not yet claimed by a parent,
 * in arrival order; a call claims the calls on top of that window that lie
 * inside [entry, entry + duration] (calls on one thread are nested or
 * disjoint, so what a call contains is always the top run).  The window's
 * oldest entries fall off when it is full; a call that claims the whole of
 * a window that lost entries counts in nesting_overflow.
 *
 * Percentiles: a log-linear histogram per function (lat_hist.c, 7 bits:
 * exact below 128 ns, then 128 buckets per power of two), reported at the
 * bucket's middle: within 0.4% of the exact nearest-rank quantile, 1 KiB
 * per power of two a function's durations span, whatever the number of
 * calls.  The "[unknown function]" row mixes functions: no percentiles.
 *
 * Copies: cudaMemcpy(Async) and the cuMemcpy(Async) family, successful
 * ones, counted once (a copy inside another copy call of the same thread,
 * e.g. cudaMemcpy calling cuMemcpy, is folded into the outer one).
 * Direction from the kind argument; cudaMemcpyDefault (4) is inferred: a
 * pointer inside a live device allocation (cudaMalloc family,
 * cudaMallocManaged, cuMemMap'ed ranges) is device memory, anything else is
 * host memory.  The host side is pinned when it lies inside a live pinned
 * range (cudaMallocHost, cudaHostAlloc, cuMemHostAlloc, cudaHostRegister),
 * else pageable.  Ranges live in an ordered set per (file, pid, kind) (a
 * treap keyed by start address) so an interior pointer finds its range.
 * GB/s is bytes over the call's duration: the transfer rate for synchronous
 * copies, only the enqueue rate for async ones.
 *
 * "Async then sync": a successful cudaMemcpyAsync/cuMemcpyAsync whose
 * thread's next call is a synchronize (cudaStreamSynchronize,
 * cudaDeviceSynchronize, cudaEventSynchronize, cuEventSynchronize: class
 * FR_FN_SYNC; not cudaEventQuery nor cudaStreamWaitEvent, which never
 * block the host) starting less than CUDA_SYNC_GAP_NS after the copy
 * returned: the copy bought no overlap (what non_blocking=False does).
 * Event records, stream waits on events and event queries in between are
 * looked past (is_transparent).
 * Counted with the copy's stack and the synchronize's duration. */
#include "model_cuda.h"
#include "fr_family.h"
#include "hmap.h"
#include "lat_hist.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- names ---------------------------------------------------------------- */

/* The per-thread-stream variants are named _ptsz for calls that take a
 * stream and _ptds for the others (cudaMemcpy_ptds, cudaMemcpyAsync_ptsz). */
const char *cuda_variant_suffix(uint16_t func)
{
	switch (func) {
	case FR_CUDA_MALLOC_ASYNC: case FR_CUDA_FREE_ASYNC: case FR_CUDA_MEMCPY_ASYNC:
	case FR_CUDA_LAUNCH_KERNEL: case FR_CUDA_STREAM_SYNC: case FR_CU_MEM_ALLOC_ASYNC:
	case FR_CU_MEM_FREE_ASYNC: case FR_CU_LAUNCH_KERNEL: case FR_CU_LAUNCH_KERNEL_EX:
	case FR_CU_MEMCPY_ASYNC: case FR_CUDA_EVENT_RECORD: case FR_CUDA_STREAM_WAIT_EVENT:
	case FR_CUDA_GRAPH_LAUNCH: case FR_CU_EVENT_RECORD: case FR_CU_STREAM_WAIT_EVENT:
	case FR_CU_GRAPH_LAUNCH:
		return "_ptsz";
	}
	return "_ptds";
}

struct code_name {
	int code;
	const char *name;
};

static const struct code_name runtime_errors[] = {
	{ 1, "cudaErrorInvalidValue" }, { 2, "cudaErrorMemoryAllocation" },
	{ 3, "cudaErrorInitializationError" }, { 4, "cudaErrorCudartUnloading" },
	{ 9, "cudaErrorInvalidConfiguration" }, { 12, "cudaErrorInvalidPitchValue" },
	{ 13, "cudaErrorInvalidSymbol" }, { 16, "cudaErrorInvalidHostPointer" },
	{ 17, "cudaErrorInvalidDevicePointer" }, { 21, "cudaErrorInvalidMemcpyDirection" },
	{ 34, "cudaErrorStubLibrary" }, { 35, "cudaErrorInsufficientDriver" },
	{ 36, "cudaErrorCallRequiresNewerDriver" }, { 46, "cudaErrorDevicesUnavailable" },
	{ 98, "cudaErrorInvalidDeviceFunction" }, { 100, "cudaErrorNoDevice" },
	{ 101, "cudaErrorInvalidDevice" }, { 200, "cudaErrorInvalidKernelImage" },
	{ 201, "cudaErrorDeviceUninitialized" }, { 209, "cudaErrorNoKernelImageForDevice" },
	{ 214, "cudaErrorECCUncorrectable" }, { 400, "cudaErrorInvalidResourceHandle" },
	{ 500, "cudaErrorSymbolNotFound" }, { 600, "cudaErrorNotReady" },
	{ 700, "cudaErrorIllegalAddress" }, { 701, "cudaErrorLaunchOutOfResources" },
	{ 702, "cudaErrorLaunchTimeout" }, { 709, "cudaErrorContextIsDestroyed" },
	{ 710, "cudaErrorAssert" }, { 712, "cudaErrorHostMemoryAlreadyRegistered" },
	{ 713, "cudaErrorHostMemoryNotRegistered" }, { 719, "cudaErrorLaunchFailure" },
	{ 999, "cudaErrorUnknown" },
};

static const struct code_name driver_errors[] = {
	{ 1, "CUDA_ERROR_INVALID_VALUE" }, { 2, "CUDA_ERROR_OUT_OF_MEMORY" },
	{ 3, "CUDA_ERROR_NOT_INITIALIZED" }, { 4, "CUDA_ERROR_DEINITIALIZED" },
	{ 34, "CUDA_ERROR_STUB_LIBRARY" }, { 46, "CUDA_ERROR_DEVICE_UNAVAILABLE" },
	{ 100, "CUDA_ERROR_NO_DEVICE" }, { 101, "CUDA_ERROR_INVALID_DEVICE" },
	{ 200, "CUDA_ERROR_INVALID_IMAGE" }, { 201, "CUDA_ERROR_INVALID_CONTEXT" },
	{ 209, "CUDA_ERROR_NO_BINARY_FOR_GPU" }, { 214, "CUDA_ERROR_ECC_UNCORRECTABLE" },
	{ 400, "CUDA_ERROR_INVALID_HANDLE" }, { 500, "CUDA_ERROR_NOT_FOUND" },
	{ 600, "CUDA_ERROR_NOT_READY" }, { 700, "CUDA_ERROR_ILLEGAL_ADDRESS" },
	{ 701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES" }, { 702, "CUDA_ERROR_LAUNCH_TIMEOUT" },
	{ 709, "CUDA_ERROR_CONTEXT_IS_DESTROYED" }, { 710, "CUDA_ERROR_ASSERT" },
	{ 712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED" },
	{ 713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED" }, { 719, "CUDA_ERROR_LAUNCH_FAILED" },
	{ 999, "CUDA_ERROR_UNKNOWN" },
};

const char *cuda_error_name(uint16_t func, int64_t code)
{
	int driver = func >= FR_CU_MEM_ALLOC;
	const struct code_name *t = driver ? driver_errors : runtime_errors;
	size_t n = driver ? sizeof(driver_errors) / sizeof(*t) : sizeof(runtime_errors) / sizeof(*t);
	for (size_t i = 0; i < n; i++)
		if (t[i].code == code)
			return t[i].name;
	return NULL;
}

const char *cuda_dir_name(enum cuda_dir d)
{
	static const char *const names[] = { "H2D", "D2H", "D2D", "H2H", "unknown" };
	return (unsigned)d < CUDA_DIRS ? names[d] : "?";
}

const char *cuda_host_name(enum cuda_host h)
{
	static const char *const names[] = { "pinned", "pageable", "-" };
	return (unsigned)h < CUDA_HOSTS ? names[h] : "?";
}

/* ---- address ranges: a treap keyed by (owner, start) ----------------------- */

struct rnode {
	uint64_t owner, start, end;
	uint32_t prio, left, right; /* 0: none (node 0 is unused) */
};

struct rset {
	struct rnode *n;
	uint32_t cap, next, used, root, free_list; /* next: nodes ever handed out */
	uint32_t seed;
};

static int key_lt(uint64_t oa, uint64_t sa, uint64_t ob, uint64_t sb)
{
	return oa < ob || (oa == ob && sa < sb);
}

/* Splits t into keys < (o, s) and keys >= (o, s) (le: <= and >). */
static void rsplit(struct rset *r, uint32_t t, uint64_t o, uint64_t s, int le, uint32_t *a,
		   uint32_t *b)
{
	if (!t) {
		*a = *b = 0;
		return;
	}
	struct rnode *x = &r->n[t];
	int goes_left = le ? !key_lt(o, s, x->owner, x->start) : key_lt(x->owner, x->start, o, s);
	if (goes_left) {
		rsplit(r, x->right, o, s, le, &r->n[t].right, b);
		*a = t;
	} else {
		rsplit(r, x->left, o, s, le, a, &r->n[t].left);
		*b = t;
	}
}

static uint32_t rmerge(struct rset *r, uint32_t a, uint32_t b)
{
	if (!a || !b)
		return a ? a : b;
	if (r->n[a].prio > r->n[b].prio) {
		r->n[a].right = rmerge(r, r->n[a].right, b);
		return a;
	}
	r->n[b].left = rmerge(r, a, r->n[b].left);
	return b;
}

/* Removes the range starting at (o, s), if any. */
static void rset_remove(struct rset *r, uint64_t o, uint64_t s)
{
	uint32_t a, b, mid, c;
	rsplit(r, r->root, o, s, 0, &a, &b);
	rsplit(r, b, o, s, 1, &mid, &c);
	if (mid) { /* one node at most: keys are unique */
		r->n[mid].left = r->free_list;
		r->free_list = mid;
		r->used--;
	}
	r->root = rmerge(r, a, c);
}

static int rset_add(struct rset *r, uint64_t o, uint64_t s, uint64_t end)
{
	rset_remove(r, o, s);
	uint32_t id = r->free_list;
	if (id) {
		r->free_list = r->n[id].left;
	} else {
		if (r->next + 1 >= r->cap) {
			uint32_t cap = r->cap ? r->cap * 2 : 256;
			if (cap <= r->cap)
				return -1;
			struct rnode *grown = realloc(r->n, (size_t)cap * sizeof(*grown));
			if (!grown)
				return -1;
			r->n = grown;
			r->cap = cap;
		}
		id = ++r->next; /* node 0 is "none" */
	}
	r->used++;
	/* xorshift32: balanced in expectation whatever the insertion order */
	uint32_t x = r->seed ? r->seed : 2463534242u;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	r->seed = x;
	r->n[id] = (struct rnode){ .owner = o, .start = s, .end = end, .prio = x };
	uint32_t a, b;
	rsplit(r, r->root, o, s, 0, &a, &b);
	r->root = rmerge(r, rmerge(r, a, id), b);
	return 0;
}

/* True when p lies inside a range of owner o. */
static bool rset_contains(const struct rset *r, uint64_t o, uint64_t p)
{
	uint32_t t = r->root, best = 0;
	while (t) {
		const struct rnode *x = &r->n[t];
		if (key_lt(o, p, x->owner, x->start)) {
			t = x->left;
		} else {
			best = t;
			t = x->right;
		}
	}
	return best && r->n[best].owner == o && p < r->n[best].end;
}

/* ---- model state ------------------------------------------------------------ */

#define CUDA_NEST_WINDOW 32
#define N_FUNCS CUDA_FUNC_LIMIT
#define ROW_UNKNOWN (2 * N_FUNCS)
#define N_ROWS (2 * N_FUNCS + 1)
#define N_CELLS (CUDA_DIRS * CUDA_HOSTS * CUDA_MODES)
#define CUDA_LATENCY_BITS 7u /* what model_cuda.h promises: within 0.4%, exact < 128 ns */

struct open_call {
	uint64_t start, end, dur, bytes;
	int32_t cell;     /* copy cell counted for this call, -1 none */
	int32_t inferred;
};

struct tstate {
	struct open_call win[CUDA_NEST_WINDOW]; /* circular */
	uint32_t head, n;
	int lost;         /* entries fell off the window since it was last empty */
	int pending;      /* an async copy waits for the thread's next call */
	uint64_t p_start, p_end, p_bytes;
	uint32_t p_pid, p_stack;
};

struct row_state {
	struct lat_hist lat;  /* durations: count, total (sum_ns), min, max, percentiles */
	uint64_t self_ns, errors, other_codes;
	struct cuda_error_count codes[CUDA_MAX_ERROR_CODES];
	size_t n_codes;
};

struct model_cuda {
	struct model_opts opts;
	struct row_state rows[N_ROWS];
	struct cuda_copy_row cells[N_CELLS];
	struct rset ranges;
	struct tstate *threads;
	size_t n_threads, cap_threads;
	struct hmap thread_index;  /* (file, tid) */
	struct cuda_sync_stack *sync;
	size_t n_sync, cap_sync;
	struct hmap sync_index;    /* (file << 32 | pid, stack) */
	struct cuda_result result;
	cuda_copy_fn on_copy;
	void *on_copy_ctx;
};

enum { RK_DEV = 0, RK_PINNED = 1 };

static uint64_t range_owner(uint32_t file, uint32_t pid, int kind)
{
	return (uint64_t)file << 33 | (uint64_t)kind << 32 | pid;
}

static void *cuda_create(const struct model_opts *opts)
{
	struct model_cuda *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	if (opts)
		m->opts = *opts;
	hmap_init(&m->thread_index);
	hmap_init(&m->sync_index);
	for (size_t i = 0; i < N_ROWS; i++)
		lat_hist_init(&m->rows[i].lat, CUDA_LATENCY_BITS);
	for (size_t i = 0; i < N_CELLS; i++) {
		m->cells[i].mode = (enum cuda_mode)(i % CUDA_MODES);
		m->cells[i].host = (enum cuda_host)(i / CUDA_MODES % CUDA_HOSTS);
		m->cells[i].dir = (enum cuda_dir)(i / CUDA_MODES / CUDA_HOSTS);
	}
	return m;
}

static struct tstate *thread_get(struct model_cuda *m, uint32_t file, uint32_t tid)
{
	int created;
	uint64_t *v = hmap_slot(&m->thread_index, file, tid, &created);
	if (!v)
		return NULL;
	if (created) {
		if (m->n_threads == m->cap_threads) {
			size_t cap = m->cap_threads ? m->cap_threads * 2 : 16;
			struct tstate *grown = realloc(m->threads, cap * sizeof(*grown));
			if (!grown)
				return NULL;
			m->threads = grown;
			m->cap_threads = cap;
		}
		memset(&m->threads[m->n_threads], 0, sizeof(m->threads[0]));
		*v = m->n_threads++;
	}
	return &m->threads[*v];
}

static int is_copy(uint16_t f)
{
	return fr_func_class_of(FR_PROBE_CUDA, f) == FR_FN_COPY;
}

static int is_async_copy(uint16_t f)
{
	return f == FR_CUDA_MEMCPY_ASYNC || f == FR_CU_MEMCPY_ASYNC;
}

/* The host waits for the device (not an event query, not a stream waiting
 * for an event: neither blocks the host). */
static int is_sync(uint16_t f)
{
	return fr_func_class_of(FR_PROBE_CUDA, f) == FR_FN_SYNC;
}

/* Calls an async copy's "next call" looks past: they neither block the
 * host nor queue device work of their own (event records, stream waits on
 * an event, event queries), so a copy, an event recorded after it and a
 * synchronize at once still bought no overlap. */
static int is_transparent(uint16_t f)
{
	enum fr_func_class c = fr_func_class_of(FR_PROBE_CUDA, f);
	return c == FR_FN_EVENT || c == FR_FN_QUERY;
}

/* Keeps the address ranges that copies are classified against. */
static int track_ranges(struct model_cuda *m, uint32_t file, const struct fr_ev_cuda *ev)
{
	if (ev->result != 0 || !ev->ptr)
		return 0;
	enum mem_class cls = mem_func_class(ev->func);
	uint64_t dev = range_owner(file, ev->c.pid, RK_DEV);
	uint64_t pin = range_owner(file, ev->c.pid, RK_PINNED);
	uint64_t end = ev->ptr + ev->bytes < ev->ptr ? UINT64_MAX : ev->ptr + ev->bytes;
	switch (cls) {
	case MEM_DEV_ALLOC:
		return ev->bytes ? rset_add(&m->ranges, dev, ev->ptr, end) : 0;
	case MEM_DEV_FREE:
		rset_remove(&m->ranges, dev, ev->ptr);
		return 0;
	case MEM_HOST_ALLOC:
		return ev->bytes ? rset_add(&m->ranges, pin, ev->ptr, end) : 0;
	case MEM_HOST_FREE:
		rset_remove(&m->ranges, pin, ev->ptr);
		return 0;
	default:
		break;
	}
	if (ev->func == FR_CU_MEM_MAP)
		return ev->bytes ? rset_add(&m->ranges, dev, ev->ptr, end) : 0;
	if (ev->func == FR_CU_MEM_UNMAP)
		rset_remove(&m->ranges, dev, ev->ptr);
	return 0;
}

/* The copy cell of a successful copy, and whether its direction was
 * inferred. */
static int32_t copy_cell(const struct model_cuda *m, uint32_t file, const struct fr_ev_cuda *ev,
			 int32_t *inferred)
{
	uint64_t dev = range_owner(file, ev->c.pid, RK_DEV);
	uint64_t pin = range_owner(file, ev->c.pid, RK_PINNED);
	enum cuda_dir dir;
	*inferred = 0;
	switch (ev->kind) {
	case FR_COPY_H2H: dir = CUDA_DIR_H2H; break;
	case FR_COPY_H2D: dir = CUDA_DIR_H2D; break;
	case FR_COPY_D2H: dir = CUDA_DIR_D2H; break;
	case FR_COPY_D2D: dir = CUDA_DIR_D2D; break;
	case FR_COPY_DEFAULT: {
		int src_dev = rset_contains(&m->ranges, dev, ev->src);
		int dst_dev = rset_contains(&m->ranges, dev, ev->ptr);
		dir = src_dev ? (dst_dev ? CUDA_DIR_D2D : CUDA_DIR_D2H)
			      : (dst_dev ? CUDA_DIR_H2D : CUDA_DIR_H2H);
		*inferred = 1;
		break;
	}
	default: dir = CUDA_DIR_UNKNOWN; break;
	}
	enum cuda_host host = CUDA_HOST_NA;
	if (dir == CUDA_DIR_H2D)
		host = rset_contains(&m->ranges, pin, ev->src) ? CUDA_HOST_PINNED : CUDA_HOST_PAGEABLE;
	else if (dir == CUDA_DIR_D2H)
		host = rset_contains(&m->ranges, pin, ev->ptr) ? CUDA_HOST_PINNED : CUDA_HOST_PAGEABLE;
	else if (dir == CUDA_DIR_H2H)
		host = rset_contains(&m->ranges, pin, ev->src) && rset_contains(&m->ranges, pin, ev->ptr)
			? CUDA_HOST_PINNED : CUDA_HOST_PAGEABLE;
	enum cuda_mode mode = is_async_copy(ev->func) ? CUDA_MODE_ASYNC : CUDA_MODE_SYNC;
	return (int32_t)(((unsigned)dir * CUDA_HOSTS + (unsigned)host) * CUDA_MODES + (unsigned)mode);
}

static void count_error(struct row_state *r, int64_t code)
{
	r->errors++;
	for (size_t i = 0; i < r->n_codes; i++) {
		if (r->codes[i].code == code) {
			r->codes[i].count++;
			return;
		}
	}
	if (r->n_codes < CUDA_MAX_ERROR_CODES)
		r->codes[r->n_codes++] = (struct cuda_error_count){ code, 1 };
	else
		r->other_codes++;
}

static int add_sync_finding(struct model_cuda *m, uint32_t file, const struct tstate *t,
			    uint64_t sync_ns)
{
	int created;
	uint64_t *v = hmap_slot(&m->sync_index, (uint64_t)file << 32 | t->p_pid, t->p_stack, &created);
	if (!v)
		return -1;
	if (created) {
		if (m->n_sync == m->cap_sync) {
			size_t cap = m->cap_sync ? m->cap_sync * 2 : 16;
			struct cuda_sync_stack *grown = realloc(m->sync, cap * sizeof(*grown));
			if (!grown)
				return -1;
			m->sync = grown;
			m->cap_sync = cap;
		}
		m->sync[m->n_sync] = (struct cuda_sync_stack){ .file = file, .pid = t->p_pid,
							       .stack_id = t->p_stack };
		*v = m->n_sync++;
	}
	struct cuda_sync_stack *s = &m->sync[*v];
	s->count++;
	s->sync_ns += sync_ns;
	s->bytes += t->p_bytes;
	m->result.async_then_sync++;
	m->result.async_then_sync_ns += sync_ns;
	return 0;
}

static int cuda_feed(void *state, uint32_t file_index, const struct fr_rec_hdr *rec)
{
	struct model_cuda *m = state;
	uint16_t type;
	memcpy(&type, (const uint8_t *)rec + offsetof(struct fr_rec_hdr, type), sizeof(type));
	if (type != FR_EV_CUDA)
		return 0;
	struct fr_ev_cuda ev;
	memcpy(&ev, rec, sizeof(ev)); /* size checked by the decoder */
	if (m->opts.filter_pid && ev.c.pid != m->opts.pid)
		return 0;
	m->result.events++;
	if (is_copy(ev.func)) {
		struct cuda_kind_count *k = &m->result.kinds[ev.kind < CUDA_KINDS - 1 ? ev.kind
										  : CUDA_KINDS - 1];
		k->calls++;
		k->bytes += ev.bytes;
		k->total_ns += ev.duration_ns;
	}
	uint64_t start = ev.c.ts_ns, dur = ev.duration_ns;
	uint64_t end = start + dur < start ? UINT64_MAX : start + dur;
	if (track_ranges(m, file_index, &ev))
		return -1;
	struct tstate *t = thread_get(m, file_index, ev.c.tid);
	if (!t)
		return -1;

	/* Claim the nested calls: the top run of the window inside [start, end]. */
	uint64_t children_ns = 0;
	int copy_ok = is_copy(ev.func) && ev.result == 0;
	while (t->n) {
		struct open_call *c = &t->win[(t->head + t->n - 1) % CUDA_NEST_WINDOW];
		if (c->start < start || c->end > end)
			break;
		children_ns += c->dur;
		if (copy_ok && c->cell >= 0) { /* the outer copy is counted instead */
			struct cuda_copy_row *cell = &m->cells[c->cell];
			cell->count--;
			cell->bytes -= c->bytes;
			cell->time_ns -= c->dur;
			cell->inferred -= (uint64_t)c->inferred;
			m->result.nested_copies++;
		}
		t->n--;
		if (!t->n && t->lost) {
			m->result.nesting_overflow++;
			t->lost = 0;
		}
	}

	size_t ri = ev.func < N_FUNCS && cuda_func_name(ev.func)
		? (size_t)ev.func * 2 + ((ev.flags & FR_CUDAF_PTSZ) ? 1 : 0) : ROW_UNKNOWN;
	struct row_state *r = &m->rows[ri];
	if (lat_hist_add(&r->lat, dur))
		return -1;
	r->self_ns += dur > children_ns ? dur - children_ns : 0;
	if (ev.result != 0)
		count_error(r, ev.result);

	struct open_call call = { .start = start, .end = end, .dur = dur, .cell = -1 };
	if (copy_ok) {
		call.cell = copy_cell(m, file_index, &ev, &call.inferred);
		call.bytes = ev.bytes;
		struct cuda_copy_row *cell = &m->cells[call.cell];
		cell->count++;
		cell->bytes += ev.bytes;
		cell->time_ns += dur;
		cell->inferred += (uint64_t)call.inferred;
		if (m->on_copy) {
			struct cuda_copy_seen seen = {
				.file = file_index, .pid = ev.c.pid, .tid = ev.c.tid,
				.stack_id = ev.stack_id, .func = ev.func, .flags = ev.flags,
				.device = ev.device, .dir = cell->dir,
				.host = cell->host, .mode = cell->mode, .start_ns = start,
				.duration_ns = dur, .bytes = ev.bytes, .stream = ev.stream,
			};
			if (m->on_copy(m->on_copy_ctx, &seen))
				return -1;
		}
	}

	/* Async copy, then the thread's next call. */
	if (is_async_copy(ev.func) && ev.result == 0) {
		t->pending = 1; /* an outer copy replaces the nested one it holds */
		t->p_start = start;
		t->p_end = end;
		t->p_bytes = ev.bytes;
		t->p_pid = ev.c.pid;
		t->p_stack = ev.stack_id;
	} else if (t->pending && !is_transparent(ev.func)) {
		if (start >= t->p_end && is_sync(ev.func) && start - t->p_end < CUDA_SYNC_GAP_NS &&
		    add_sync_finding(m, file_index, t, dur))
			return -1;
		t->pending = 0;
	}

	if (t->n == CUDA_NEST_WINDOW) {
		t->head = (t->head + 1) % CUDA_NEST_WINDOW;
		t->n--;
		t->lost = 1;
	}
	t->win[(t->head + t->n) % CUDA_NEST_WINDOW] = call;
	t->n++;
	return 0;
}

/* ---- finish ------------------------------------------------------------------ */

static int row_cmp(const void *a, const void *b)
{
	const struct cuda_api_row *x = a, *y = b;
	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int code_cmp(const void *a, const void *b)
{
	const struct cuda_error_count *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->code < y->code ? -1 : x->code > y->code;
}

static int copy_cmp(const void *a, const void *b)
{
	const struct cuda_copy_row *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return (int)x->dir - (int)y->dir ? (int)x->dir - (int)y->dir
		: (int)x->host - (int)y->host ? (int)x->host - (int)y->host
		: (int)x->mode - (int)y->mode;
}

static int sync_cmp(const void *a, const void *b)
{
	const struct cuda_sync_stack *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

static int cuda_finish(void *state, struct trace_set *ts, struct frec_error *err)
{
	(void)ts;
	struct model_cuda *m = state;
	struct cuda_result *res = &m->result;
	res->rows = calloc(N_ROWS, sizeof(*res->rows));
	res->copies = calloc(N_CELLS, sizeof(*res->copies));
	if (!res->rows || !res->copies) {
		frec_error_set(err, "flightrec-analyze", -1, ENOMEM, "out of memory building the CUDA API table");
		return -1;
	}
	for (size_t i = 0; i < N_ROWS; i++) {
		struct row_state *r = &m->rows[i];
		if (!r->lat.count)
			continue;
		struct cuda_api_row *o = &res->rows[res->n_rows++];
		o->func = i == ROW_UNKNOWN ? 0 : (uint16_t)(i / 2);
		o->ptsz = i != ROW_UNKNOWN && (i & 1);
		if (i == ROW_UNKNOWN)
			snprintf(o->name, sizeof(o->name), "[unknown function]");
		else
			snprintf(o->name, sizeof(o->name), "%s%s", cuda_func_name((uint16_t)(i / 2)),
				 o->ptsz ? cuda_variant_suffix(o->func) : "");
		o->count = r->lat.count;
		o->total_ns = r->lat.sum_ns;
		o->self_ns = r->self_ns;
		o->max_ns = r->lat.max_ns;
		o->min_ns = r->lat.min_ns;
		if (i != ROW_UNKNOWN) {
			o->p50_ns = lat_hist_quantile(&r->lat, 0.50);
			o->p99_ns = lat_hist_quantile(&r->lat, 0.99);
		}
		o->errors = r->errors;
		memcpy(o->codes, r->codes, sizeof(o->codes));
		o->n_codes = r->n_codes;
		o->other_codes = r->other_codes;
		qsort(o->codes, o->n_codes, sizeof(o->codes[0]), code_cmp);
	}
	qsort(res->rows, res->n_rows, sizeof(*res->rows), row_cmp);
	for (size_t i = 0; i < N_CELLS; i++)
		if (m->cells[i].count)
			res->copies[res->n_copies++] = m->cells[i];
	qsort(res->copies, res->n_copies, sizeof(*res->copies), copy_cmp);
	if (m->n_sync)
		qsort(m->sync, m->n_sync, sizeof(*m->sync), sync_cmp);
	res->sync_stacks = m->sync;
	res->n_sync_stacks = m->n_sync;
	res->threads = m->n_threads;
	return 0;
}

static void cuda_destroy(void *state)
{
	struct model_cuda *m = state;
	if (!m)
		return;
	for (size_t i = 0; i < N_ROWS; i++)
		lat_hist_free(&m->rows[i].lat);
	free(m->ranges.n);
	free(m->threads);
	hmap_free(&m->thread_index);
	free(m->sync);
	hmap_free(&m->sync_index);
	free(m->result.rows);
	free(m->result.copies);
	free(m);
}

const struct cuda_result *model_cuda_result(const void *state)
{
	return &((const struct model_cuda *)state)->result;
}

void model_cuda_on_copy(void *state, cuda_copy_fn fn, void *ctx)
{
	struct model_cuda *m = state;
	m->on_copy = fn;
	m->on_copy_ctx = ctx;
}

const struct model_ops model_cuda_ops = {
	.name = "cuda",
	.create = cuda_create,
	.feed = cuda_feed,
	.finish = cuda_finish,
	.destroy = cuda_destroy,
};
