/* The GPU memory model: a ledger of CUDA allocations fed one event at a
 * time, in a single pass.  Not for CUDA call timing (model_cuda.c) nor for
 * output (cmd_memory.c, cmd_flame.c; stacks as text or JSON:
 * out_mem_stacks.c).
 *
 * What counts.  Device memory: cudaMalloc, cudaMallocAsync,
 * cudaMallocManaged (also tracked as "managed"), cuMemAlloc(_Async), and
 * cuMemCreate (physical memory: counted at create, released at
 * cuMemRelease; cuMemMap/cuMemUnmap only map it and are not counted
 * again).  Pinned host memory (cudaMallocHost, cudaHostAlloc,
 * cuMemHostAlloc, cudaHostRegister) goes to separate "pinned host" series:
 * it is not device memory and never enters the device totals or flame
 * graphs.  Only calls that returned 0 allocate; a failed allocation is kept
 * (time, size, error, stack, and the top 5 holders of that process's memory
 * on that device right then); the first MEM_MAX_FAILURES are kept in detail,
 * all are counted.  A free whose address the ledger does not know counts
 * into the "before recording" bucket of its series (count only: the size
 * was never seen), because a flight recorder usually starts after the
 * program allocated.  free(NULL) is a valid no-op and counted apart.  A free
 * that returned an error is not applied.  Events are applied in stream
 * order (the recorder writes each call at its return), at the call's
 * return time, ts_ns + duration_ns; a time earlier than the series' last
 * one is clamped to it.
 *
 * One allocation seen twice.  A runtime call calls the driver (cudaMalloc
 * -> cuMemAlloc_v2, cudaFree -> cuMemFree_v2, cudaMallocHost ->
 * cuMemHostAlloc); with both probed, the nested driver call arrives first
 * (it returns first), then the runtime call with the same address and an
 * interval around it.  A small direct-mapped cache of each thread's last
 * memory call (file, tid) recognises the outer call and drops it
 * (nested_dups): the allocation keeps the inner call's stack, which holds
 * the outer one's frames too.  A cache collision only loses this
 * recognition, and the outer call then reads as a missed free or a
 * before-recording free.
 *
 * Memory is bounded by the live allocations and the distinct stacks, never
 * by the number of events: the live table is an open-addressing hash
 * (linear probing, backward-shift deletion, load <= 1/2) from (file, pid,
 * kind, address) to (bytes, stack); its capacity follows the high-water
 * mark of live allocations (live_entries_max in the result).  Per stack
 * (file, pid, device, space, stack id) the model keeps live and allocated
 * bytes and counts.
 *
 * Bytes per stack at the peak, in one pass, O(1) per event.  Each ledger
 * (the file's device total, and each series) carries an epoch, bumped every
 * time its total reaches a new maximum.  Each stack remembers the epoch in
 * which it last changed (mark) and its live bytes just before that first
 * change (before).  When a stack changes and its mark differs from the
 * current epoch, it has not changed since the latest peak, so its live
 * bytes are its bytes at that peak: save them in before, set mark.  At the
 * end, bytes at the latest peak = mark == epoch ? before : live.  No list,
 * no copy at a new peak.  --at T is the same trick with one epoch: the
 * first event later than T freezes the instant, and each stack saves its
 * bytes at its first change after that.  Peaks are per file (one node's
 * clock): with several files the in-use graph holds each file at its own
 * peak.
 *
 * In use over time, bounded (mem_curve.c): per series at most 1024 time buckets of
 * equal width (a power of two nanoseconds), each holding the minimum and
 * maximum in-use value reached in it and their times; when the recording
 * outgrows the buckets the width doubles and neighbours merge.  So a
 * series has at most 2 * 1024 = 2048 points, every local extreme
 * wider than a bucket survives, and the exact peak is kept apart.
 *
 * Caching allocators.  PyTorch's CUDACachingAllocator (and JAX's BFC, and
 * others) cudaMalloc big segments and keep them: what the ledger sees is
 * reserved memory, not tensors.  A process is labelled "caching allocator"
 * when, over its device memory, it made at least 4 allocations, freed at
 * most one in ten of them (frees are rare compared to mallocs), and at
 * least half of them are still held at the end.  "pytorch-like" adds that
 * >= 90% of the allocation sizes are multiples of 2 MiB (how the PyTorch
 * allocator sizes segments).  Leaks of such a process are cached segments,
 * not lost memory; outputs say so.
 *
 * Performance target: >= 10 M alloc/free events per second per core for
 * mem-inuse (the model alone; one hash operation, one stack lookup per
 * allocation, a handful of compares per event), memory bounded by the live
 * allocations. */
#include "model_mem.h"
#include "mem_curve.h"
#include "mem_live.h"
#include "grow.h"
#include "hmap.h"
#include "symbolize.h"
#include "trace_set.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define TWO_MIB (2ull << 20)

/* Address kinds: device pointers, pinned host pointers and cuMemCreate
 * handles live in different namespaces of the live table (its owner key is
 * file << 34 | kind << 32 | pid). */
enum { SLOT_USED = MEM_LIVE_USED, SLOT_MANAGED = 2 };

/* ---- model state ---------------------------------------------------------- */

struct mstack {
	uint64_t live_bytes, live_count, alloc_bytes, alloc_count;
	uint64_t pk_before, pk_mark;   /* file-level peak snapshot (device only) */
	uint64_t spk_before, spk_mark; /* series peak snapshot */
	uint64_t at_before;
	uint32_t series, stack_id;
	uint16_t func;                 /* the allocating call, shown as the leaf frame */
	uint8_t at_mark;
};

struct mseries {
	struct mem_series pub;
	uint64_t inuse, live_count, managed_inuse, epoch, seg_2mib;
	struct mem_curve curve;        /* in use over time, bounded */
};

struct mfile {
	struct mem_file pub;
	uint64_t total, epoch;
	uint64_t start_ns;             /* the recording's start_mono_ns (set at finish) */
	uint64_t at_abs;
	int at_enabled, at_frozen;
};

/* The last memory call of a thread, to recognise the same call seen at two
 * layers (runtime around driver). */
#define LAST_CALLS 1024
struct last_call {
	uint64_t start, end, ptr;
	uint32_t file_plus1, tid; /* file_plus1 0: empty */
	int alloc, failed;
};

struct model_mem {
	struct model_opts opts;
	struct stack_profile inuse_prof, alloc_prof;
	const char *func_names[CUDA_FUNC_LIMIT];
	struct last_call last[LAST_CALLS];
	struct mem_live_table live;
	struct mstack *stacks;
	size_t n_stacks, cap_stacks;
	struct hmap stack_index;       /* (space << 62 | file << 32 | pid, device << 32 | stack) */
	struct mseries *series;
	size_t n_series, cap_series;
	struct hmap series_index;      /* (space << 62 | file << 32 | pid, device) */
	struct mfile *files;
	size_t n_files;
	struct mem_result result;
	mem_change_fn on_change;
	void *on_change_ctx;
};

void model_mem_on_change(void *state, mem_change_fn fn, void *ctx)
{
	struct model_mem *m = state;
	m->on_change = fn;
	m->on_change_ctx = ctx;
}

/* Tells the observer about the allocation in slot s (stack si). */
static int changed(struct model_mem *m, enum mem_change_kind kind, const struct mem_live_slot *s,
		   uint32_t si, uint32_t end_tid, uint64_t t)
{
	if (!m->on_change)
		return 0;
	const struct mstack *st = &m->stacks[si];
	const struct mseries *se = &m->series[st->series];
	struct mem_change c = {
		.kind = kind, .file = se->pub.file, .pid = se->pub.pid, .device = se->pub.device,
		.space = se->pub.space, .func = s->func, .managed = (s->used & SLOT_MANAGED) != 0,
		.alloc_tid = s->tid, .end_tid = end_tid, .ptr = s->ptr, .bytes = s->bytes,
		.stack_id = st->stack_id, .alloc_ns = s->alloc_ns, .t_ns = t,
		.inuse_bytes = se->inuse,
	};
	return m->on_change(m->on_change_ctx, &c) ? -1 : 0;
}

static void *mem_create(const struct model_opts *opts)
{
	struct model_mem *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	if (opts)
		m->opts = *opts;
	hmap_init(&m->stack_index);
	hmap_init(&m->series_index);
	stack_profile_init(&m->inuse_prof);
	stack_profile_init(&m->alloc_prof);
	return m;
}

static struct mfile *mem_file_get(struct model_mem *m, uint32_t file_index)
{
	if (file_index >= m->n_files) {
		if (file_index >= (1u << 30))
			return NULL;
		size_t n = (size_t)file_index + 1;
		struct mfile *grown = realloc(m->files, n * sizeof(*grown));
		if (!grown)
			return NULL;
		memset(grown + m->n_files, 0, (n - m->n_files) * sizeof(*grown));
		for (size_t i = m->n_files; i < n; i++) {
			grown[i].epoch = 1;
			grown[i].pub.at_t_ns = UINT64_MAX;
		}
		m->files = grown;
		m->n_files = n;
	}
	return &m->files[file_index];
}

int model_mem_set_at(void *state, struct trace_set *ts, uint64_t at_ns_from_start)
{
	struct model_mem *m = state;
	for (size_t i = 0; i < trace_set_count(ts); i++) {
		struct mfile *f = mem_file_get(m, (uint32_t)i);
		if (!f)
			return -1;
		uint64_t start = trace_set_file(ts, i)->hdr.start_mono_ns;
		f->at_enabled = 1;
		f->at_abs = start + at_ns_from_start < start ? UINT64_MAX : start + at_ns_from_start;
		f->pub.at_t_ns = at_ns_from_start;
	}
	return 0;
}

static uint64_t space_key(enum mem_space space, uint32_t file, uint32_t pid)
{
	return (uint64_t)space << 62 | (uint64_t)file << 32 | pid;
}

static struct mseries *series_get(struct model_mem *m, uint32_t file, uint32_t pid,
				  int32_t device, enum mem_space space, uint32_t *index)
{
	if (space == MEM_SPACE_PINNED_HOST)
		device = -1;
	int created;
	uint64_t *v = hmap_slot(&m->series_index, space_key(space, file, pid), (uint32_t)device,
				&created);
	if (!v)
		return NULL;
	if (created) {
		if (grow_array((void **)&m->series, &m->cap_series, m->n_series + 1,
			       sizeof(*m->series), 8))
			return NULL;
		struct mseries *se = &m->series[m->n_series];
		memset(se, 0, sizeof(*se));
		se->pub.file = file;
		se->pub.pid = pid;
		se->pub.device = device;
		se->pub.space = space;
		se->epoch = 1;
		mem_curve_init(&se->curve, 10);
		*v = m->n_series++;
	}
	if (index)
		*index = (uint32_t)*v;
	return &m->series[*v];
}

/* Index of the stack entry, or UINT32_MAX when memory runs out. */
static uint32_t stack_get(struct model_mem *m, uint32_t file, uint32_t pid, int32_t device,
			  enum mem_space space, uint32_t stack_id, uint16_t func)
{
	if (space == MEM_SPACE_PINNED_HOST)
		device = -1;
	int created;
	uint64_t *v = hmap_slot(&m->stack_index, space_key(space, file, pid),
				(uint64_t)(uint32_t)device << 32 | stack_id, &created);
	if (!v)
		return UINT32_MAX;
	if (!created)
		return (uint32_t)*v;
	uint32_t si;
	if (!series_get(m, file, pid, device, space, &si) || m->n_stacks >= UINT32_MAX - 1)
		return UINT32_MAX;
	/* series_get may have inserted into another map only: v is still valid. */
	if (grow_array((void **)&m->stacks, &m->cap_stacks, m->n_stacks + 1, sizeof(*m->stacks), 64))
		return UINT32_MAX;
	struct mstack *st = &m->stacks[m->n_stacks];
	memset(st, 0, sizeof(*st));
	st->series = si;
	st->stack_id = stack_id;
	st->func = func;
	*v = m->n_stacks;
	return (uint32_t)m->n_stacks++;
}

static void series_point(struct mseries *se, uint64_t t)
{
	int first = !se->curve.buckets;
	if (t < se->pub.last_t_ns)
		t = se->pub.last_t_ns;
	if (mem_curve_add(&se->curve, t, se->inuse))
		return; /* the curve is lost, never the ledger */
	if (first)
		se->pub.first_t_ns = t;
	se->pub.last_t_ns = t;
}

/* Applies +bytes (grow) or -bytes to stack si at time t. */
static void apply(struct model_mem *m, struct mfile *f, uint32_t si, uint64_t bytes, int grow,
		  uint64_t t)
{
	struct mstack *st = &m->stacks[si];
	struct mseries *se = &m->series[st->series];
	int device = se->pub.space == MEM_SPACE_DEVICE;
	if (device && st->pk_mark != f->epoch) {
		st->pk_before = st->live_bytes;
		st->pk_mark = f->epoch;
	}
	if (st->spk_mark != se->epoch) {
		st->spk_before = st->live_bytes;
		st->spk_mark = se->epoch;
	}
	if (f->at_frozen && !st->at_mark) {
		st->at_before = st->live_bytes;
		st->at_mark = 1;
	}
	/* Unsigned arithmetic wraps: hostile sizes give odd totals, never UB. */
	if (grow) {
		st->live_bytes += bytes;
		st->live_count++;
		se->inuse += bytes;
		se->live_count++;
		if (device)
			f->total += bytes;
	} else {
		st->live_bytes -= bytes;
		st->live_count--;
		se->inuse -= bytes;
		se->live_count--;
		if (device)
			f->total -= bytes;
	}
	series_point(se, t);
	if (se->inuse > se->pub.peak_bytes) {
		se->pub.peak_bytes = se->inuse;
		se->pub.peak_t_ns = t;
		se->epoch++;
	}
	if (device && f->total > f->pub.peak_bytes) {
		f->pub.peak_bytes = f->total;
		f->pub.peak_t_ns = t;
		f->epoch++;
	}
}

/* Top MEM_TOP insertion by bytes (ties: smaller stack id first). */
static void top_insert(struct mem_stack_bytes *top, size_t *n, uint32_t stack_id, uint64_t bytes,
		       uint64_t count)
{
	if (!bytes)
		return;
	size_t i = *n;
	if (i == MEM_TOP) {
		if (bytes < top[MEM_TOP - 1].bytes ||
		    (bytes == top[MEM_TOP - 1].bytes && stack_id > top[MEM_TOP - 1].stack_id))
			return;
		i = MEM_TOP - 1;
	} else {
		(*n)++;
	}
	while (i > 0 && (top[i - 1].bytes < bytes ||
			 (top[i - 1].bytes == bytes && top[i - 1].stack_id > stack_id))) {
		top[i] = top[i - 1];
		i--;
	}
	top[i] = (struct mem_stack_bytes){ .stack_id = stack_id, .bytes = bytes, .count = count };
}

static int record_failure(struct model_mem *m, uint32_t file, const struct fr_ev_cuda *ev,
			  enum mem_space space, uint64_t t)
{
	uint32_t si;
	struct mseries *se = series_get(m, file, ev->c.pid, ev->device, space, &si);
	if (!se)
		return -1;
	se->pub.failed_allocs++;
	if (m->result.n_failures++ >= MEM_MAX_FAILURES)
		return 0;
	struct mem_failure *fl = &m->result.failures[m->result.n_failures_kept++];
	memset(fl, 0, sizeof(*fl));
	fl->file = file;
	fl->pid = ev->c.pid;
	fl->tid = ev->c.tid;
	fl->device = se->pub.device;
	fl->func = ev->func;
	fl->error = ev->result;
	fl->t_ns = t; /* made relative at finish */
	fl->bytes = ev->bytes;
	fl->stack_id = ev->stack_id;
	fl->inuse_bytes = se->inuse;
	for (size_t i = 0; i < m->n_stacks; i++)
		if (m->stacks[i].series == si)
			top_insert(fl->holders, &fl->n_holders, m->stacks[i].stack_id,
				   m->stacks[i].live_bytes, m->stacks[i].live_count);
	return 0;
}

static int failed_change(struct model_mem *m, uint32_t file, const struct fr_ev_cuda *ev,
			 enum mem_space space, uint64_t t)
{
	if (!m->on_change)
		return 0;
	const struct mseries *se = series_get(m, file, ev->c.pid, ev->device, space, NULL);
	if (!se)
		return -1;
	struct mem_change c = {
		.kind = MEM_FAILED, .file = file, .pid = ev->c.pid, .device = se->pub.device,
		.space = space, .func = ev->func, .managed = ev->func == FR_CUDA_MALLOC_MANAGED,
		.alloc_tid = ev->c.tid, .bytes = ev->bytes, .stack_id = ev->stack_id,
		.error = ev->result, .alloc_ns = t, .t_ns = t, .inuse_bytes = se->inuse,
	};
	return m->on_change(m->on_change_ctx, &c) ? -1 : 0;
}

static int mem_feed(void *state, uint32_t file_index, const struct fr_rec_hdr *rec)
{
	struct model_mem *m = state;
	uint16_t type;
	memcpy(&type, (const uint8_t *)rec + offsetof(struct fr_rec_hdr, type), sizeof(type));
	if (type != FR_EV_CUDA)
		return 0;
	struct fr_ev_cuda ev;
	memcpy(&ev, rec, sizeof(ev)); /* size checked by the decoder */
	m->result.cuda_events++;
	enum mem_class cls = mem_func_class(ev.func);
	if (cls == MEM_NONE || (m->opts.filter_pid && ev.c.pid != m->opts.pid))
		return 0;
	struct mfile *f = mem_file_get(m, file_index);
	if (!f)
		return -1;
	m->result.mem_events++;
	uint64_t t = ev.c.ts_ns + ev.duration_ns;
	if (t < ev.c.ts_ns)
		t = UINT64_MAX;
	if (f->at_enabled && !f->at_frozen && t > f->at_abs)
		f->at_frozen = 1;

	/* The outer half of a runtime-around-driver pair: already counted. */
	int is_alloc = mem_class_is_alloc(cls);
	struct last_call *lc = &m->last[(ev.c.tid * 0x9e3779b1u + file_index) % LAST_CALLS];
	int dup = lc->file_plus1 == file_index + 1 && lc->tid == ev.c.tid && lc->alloc == is_alloc &&
		  lc->start >= ev.c.ts_ns && lc->end <= t && lc->failed == (ev.result != 0) &&
		  (ev.result != 0 || lc->ptr == ev.ptr);
	*lc = (struct last_call){ .start = ev.c.ts_ns, .end = t, .ptr = ev.ptr,
				  .file_plus1 = file_index + 1, .tid = ev.c.tid, .alloc = is_alloc,
				  .failed = ev.result != 0 };
	if (dup) {
		f->pub.nested_dups++;
		return 0;
	}

	enum mem_space space = (cls == MEM_HOST_ALLOC || cls == MEM_HOST_FREE) ?
		MEM_SPACE_PINNED_HOST : MEM_SPACE_DEVICE;
	uint64_t owner = mem_ledger_owner(file_index, mem_class_kind(cls), ev.c.pid);

	if (is_alloc) {
		if (space == MEM_SPACE_DEVICE)
			m->result.device_allocs++;
		if (ev.result != 0)
			return record_failure(m, file_index, &ev, space, t) ||
			       failed_change(m, file_index, &ev, space, t) ? -1 : 0;
		if (!mem_alloc_holds(ev.ptr, ev.bytes)) {
			/* cudaMalloc(&p, 0) succeeds with p = NULL: nothing held. */
			if (ev.bytes)
				f->pub.implausible++;
			return 0;
		}
		uint32_t si = stack_get(m, file_index, ev.c.pid, ev.device, space, ev.stack_id, ev.func);
		if (si == UINT32_MAX)
			return -1;
		if ((m->live.count + 1) * 2 > m->live.cap && mem_live_grow(&m->live))
			return -1;
		struct mem_live_slot *s = mem_live_find(&m->live, owner, ev.ptr);
		if (s->used) {
			/* The address is live already: its free was not recorded. */
			struct mseries *old = &m->series[m->stacks[s->stack].series];
			old->pub.replaced++;
			if (s->used & SLOT_MANAGED)
				old->managed_inuse -= s->bytes;
			apply(m, f, s->stack, s->bytes, 0, t);
			if (changed(m, MEM_FREED, s, s->stack, 0, t))
				return -1;
		} else {
			s->used = 1;
			s->owner = owner;
			s->ptr = ev.ptr;
			if (++m->live.count > m->live.max_count)
				m->live.max_count = m->live.count;
		}
		s->bytes = ev.bytes;
		s->stack = si;
		s->used = SLOT_USED | (ev.func == FR_CUDA_MALLOC_MANAGED ? SLOT_MANAGED : 0);
		s->alloc_ns = t;
		s->tid = ev.c.tid;
		s->func = ev.func;
		struct mstack *st = &m->stacks[si];
		struct mseries *se = &m->series[st->series];
		st->alloc_bytes += ev.bytes;
		st->alloc_count++;
		se->pub.allocs++;
		se->pub.alloc_bytes += ev.bytes;
		if (ev.bytes % TWO_MIB == 0)
			se->seg_2mib++;
		if (ev.func == FR_CUDA_MALLOC_MANAGED) {
			se->managed_inuse += ev.bytes;
			if (se->managed_inuse > se->pub.managed_bytes_peak)
				se->pub.managed_bytes_peak = se->managed_inuse;
		}
		apply(m, f, si, ev.bytes, 1, t);
		return changed(m, MEM_ALLOCATED, s, si, 0, t);
	}

	/* A free of some kind. */
	if (!ev.ptr) {
		f->pub.null_frees++;
		return 0;
	}
	struct mem_live_slot *s = m->live.cap ? mem_live_find(&m->live, owner, ev.ptr) : NULL;
	if (ev.result != 0 || !s || !s->used) {
		struct mseries *se = series_get(m, file_index, ev.c.pid, ev.device, space, NULL);
		if (!se)
			return -1;
		if (ev.result != 0)
			se->pub.failed_frees++;
		else
			se->pub.before_frees++;
		return 0;
	}
	uint32_t si = s->stack;
	struct mem_live_slot gone = *s;
	uint64_t bytes = s->bytes;
	int managed = (s->used & SLOT_MANAGED) != 0;
	mem_live_delete(&m->live, s);
	struct mseries *se = &m->series[m->stacks[si].series];
	se->pub.frees++;
	se->pub.freed_bytes += bytes;
	if (managed)
		se->managed_inuse -= bytes;
	apply(m, f, si, bytes, 0, t);
	return changed(m, MEM_FREED, &gone, si, ev.c.tid, t);
}

/* ---- finish ---------------------------------------------------------------- */

static uint64_t rel(const struct mfile *f, uint64_t t)
{
	return t > f->start_ns ? t - f->start_ns : 0;
}

static int series_cmp(const void *a, const void *b)
{
	const struct mem_series *x = a, *y = b;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->space != y->space)
		return x->space < y->space ? -1 : 1;
	return x->device < y->device ? -1 : x->device > y->device;
}

const char **mem_stack_frames(struct trace_set *ts, uint32_t file, uint32_t stack_id, size_t *n)
{
	struct frec_error err = { .offset = -1 };
	struct symbolizer *sym = trace_set_symbolizer(ts, &err);
	const struct trace_file *f = trace_set_file(ts, file);
	const char **frames = NULL;
	size_t cap = 0;
	*n = sym && f ? symbolize_frames(sym, f, file, stack_id, &frames, &cap, NULL) : SIZE_MAX;
	if (*n == SIZE_MAX) {
		free(frames);
		*n = 0;
		return NULL;
	}
	return frames;
}

/* The caller's stack (the probe takes it at return) with the allocating
 * call itself as the leaf, as perf shows malloc under its caller. */
static int tree_add(struct flame_tree *t, struct trace_set *ts, uint32_t file, uint32_t stack_id,
		    uint16_t func, uint64_t value)
{
	size_t n;
	const char **frames = mem_stack_frames(ts, file, stack_id, &n);
	if (!frames)
		return -1;
	const char **with_leaf = realloc(frames, (n + 1) * sizeof(*frames));
	if (!with_leaf) {
		free(frames);
		return -1;
	}
	frames = with_leaf;
	frames[n++] = cuda_func_name(func);
	int rc = flame_tree_add(t, frames, n, value);
	free(frames);
	return rc ? -1 : 0;
}

/* pprof's names for Go's heap profile, which Pyroscope knows. */
static void finish_profiles(struct model_mem *m)
{
	struct stack_profile *in = &m->inuse_prof, *al = &m->alloc_prof;
	stack_profile_sort(in);
	stack_profile_sort(al);
	in->value_type = "inuse_space";
	al->count_type = "alloc_objects";
	al->count_unit = "count";
	al->value_type = "alloc_space";
	in->value_unit = al->value_unit = "bytes";
	in->period_type = al->period_type = "space";
	in->period_unit = al->period_unit = "bytes";
	in->period = al->period = 1; /* every allocation is traced */
	for (uint16_t f = 0; f < CUDA_FUNC_LIMIT; f++)
		m->func_names[f] = cuda_func_name(f);
	in->leaf_names = al->leaf_names = m->func_names;
	in->n_leaf_names = al->n_leaf_names = CUDA_FUNC_LIMIT;
	m->result.inuse_profile = in;
	m->result.alloc_profile = al;
}

static int live_by_time(const void *a, const void *b)
{
	const struct mem_live_slot *x = a, *y = b;
	if (x->alloc_ns != y->alloc_ns)
		return x->alloc_ns < y->alloc_ns ? -1 : 1;
	if (x->owner != y->owner)
		return x->owner < y->owner ? -1 : 1;
	return x->ptr < y->ptr ? -1 : x->ptr > y->ptr;
}

static int mem_finish(void *state, struct trace_set *ts, struct frec_error *err)
{
	struct model_mem *m = state;
	struct mem_result *r = &m->result;
	for (size_t i = 0; i < trace_set_count(ts); i++)
		if (!mem_file_get(m, (uint32_t)i))
			goto oom;
	for (size_t i = 0; i < m->n_files; i++) {
		struct mfile *f = &m->files[i];
		const struct trace_file *tf = trace_set_file(ts, i);
		f->start_ns = tf ? tf->hdr.start_mono_ns : 0;
		f->pub.peak_t_ns = rel(f, f->pub.peak_t_ns);
		f->pub.at_after_end = f->at_enabled && !f->at_frozen;
		f->pub.at_bytes = f->at_enabled ? 0 : f->pub.peak_bytes;
	}
	/* what is still live, in allocation order (the table's order is a
	 * hash's): leak candidates for the observer */
	if (m->on_change && m->live.count) {
		struct mem_live_slot *left = malloc(m->live.count * sizeof(*left));
		size_t n = 0;
		if (!left)
			goto oom;
		for (size_t k = 0; k < m->live.cap; k++)
			if (m->live.slots[k].used)
				left[n++] = m->live.slots[k];
		qsort(left, n, sizeof(*left), live_by_time);
		int bad = 0;
		for (size_t k = 0; k < n && !bad; k++)
			bad = changed(m, MEM_LIVE_AT_END, &left[k], left[k].stack,
				      0, m->series[m->stacks[left[k].stack].series].pub.last_t_ns);
		free(left);
		if (bad)
			goto oom;
	}
	r->inuse = flame_tree_new();
	r->alloc = flame_tree_new();
	if (!r->inuse || !r->alloc)
		goto oom;
	for (size_t i = 0; i < m->n_stacks; i++) {
		const struct mstack *st = &m->stacks[i];
		struct mseries *se = &m->series[st->series];
		struct mfile *f = &m->files[se->pub.file];
		uint64_t at_peak = st->spk_mark == se->epoch ? st->spk_before : st->live_bytes;
		top_insert(se->pub.top_at_peak, &se->pub.n_top_at_peak, st->stack_id, at_peak, 0);
		top_insert(se->pub.top_leaks, &se->pub.n_top_leaks, st->stack_id, st->live_bytes,
			   st->live_count);
		if (se->pub.space != MEM_SPACE_DEVICE)
			continue;
		uint64_t inuse;
		if (f->at_enabled) {
			inuse = st->at_mark ? st->at_before : st->live_bytes;
			f->pub.at_bytes += inuse;
		} else {
			inuse = st->pk_mark == f->epoch ? st->pk_before : st->live_bytes;
		}
		if (inuse && tree_add(r->inuse, ts, se->pub.file, st->stack_id, st->func, inuse))
			goto oom;
		if (st->alloc_bytes && tree_add(r->alloc, ts, se->pub.file, st->stack_id, st->func,
						st->alloc_bytes))
			goto oom;
		if (m->opts.profile &&
		    ((inuse && stack_profile_add(&m->inuse_prof, se->pub.file, se->pub.pid, 0,
						 st->stack_id, st->func, 0, inuse)) ||
		     (st->alloc_bytes &&
		      stack_profile_add(&m->alloc_prof, se->pub.file, se->pub.pid, 0, st->stack_id,
					st->func, st->alloc_count, st->alloc_bytes))))
			goto oom;
	}
	if (m->opts.profile)
		finish_profiles(m);
	r->series = calloc(m->n_series ? m->n_series : 1, sizeof(*r->series));
	r->procs = calloc(m->n_series ? m->n_series : 1, sizeof(*r->procs));
	if (!r->series || !r->procs)
		goto oom;
	for (size_t i = 0; i < m->n_series; i++) {
		struct mseries *se = &m->series[i];
		const struct mfile *f = &m->files[se->pub.file];
		se->pub.end_bytes = se->inuse;
		se->pub.end_count = se->live_count;
		se->pub.peak_t_ns = rel(f, se->pub.peak_t_ns);
		se->pub.first_t_ns = rel(f, se->pub.first_t_ns);
		se->pub.last_t_ns = rel(f, se->pub.last_t_ns);
		if (mem_curve_points(&se->curve, f->start_ns, &se->pub.points, &se->pub.n_points))
			goto oom;
		r->series[i] = se->pub;
		se->pub.points = NULL; /* owned by the result now */
		r->before_frees += se->pub.before_frees;
		if (se->pub.space != MEM_SPACE_DEVICE)
			continue;
		struct mem_process *p = NULL;
		for (size_t j = 0; j < r->n_procs; j++)
			if (r->procs[j].file == se->pub.file && r->procs[j].pid == se->pub.pid)
				p = &r->procs[j];
		if (!p) {
			p = &r->procs[r->n_procs++];
			p->file = se->pub.file;
			p->pid = se->pub.pid;
		}
		p->allocs += se->pub.allocs;
		p->frees += se->pub.frees;
		p->end_count += se->pub.end_count;
		p->seg_2mib += se->seg_2mib;
	}
	r->n_series = m->n_series;
	qsort(r->series, r->n_series, sizeof(*r->series), series_cmp);
	for (size_t j = 0; j < r->n_procs; j++) {
		struct mem_process *p = &r->procs[j];
		p->caching_allocator = p->allocs >= 4 && p->frees * 10 <= p->allocs &&
				       p->end_count * 2 >= p->allocs;
		p->pytorch_like = p->caching_allocator && p->seg_2mib * 10 >= p->allocs * 9;
	}
	for (size_t i = 0; i < r->n_failures_kept; i++) {
		struct mem_failure *fl = &r->failures[i];
		fl->t_ns = rel(&m->files[fl->file], fl->t_ns);
	}
	r->files = calloc(m->n_files ? m->n_files : 1, sizeof(*r->files));
	if (!r->files)
		goto oom;
	for (size_t i = 0; i < m->n_files; i++)
		r->files[i] = m->files[i].pub;
	r->n_files = m->n_files;
	r->live_entries_max = m->live.max_count;
	r->stacks = m->n_stacks;
	return 0;
oom:
	frec_error_set(err, "flightrec-analyze", -1, ENOMEM, "out of memory building the GPU memory model");
	return -1;
}

static void mem_destroy(void *state)
{
	struct model_mem *m = state;
	if (!m)
		return;
	free(m->live.slots);
	free(m->stacks);
	hmap_free(&m->stack_index);
	for (size_t i = 0; i < m->n_series; i++) {
		mem_curve_free(&m->series[i].curve);
		free(m->series[i].pub.points);
	}
	free(m->series);
	hmap_free(&m->series_index);
	free(m->files);
	for (size_t i = 0; i < m->result.n_series; i++)
		free(m->result.series[i].points);
	free(m->result.series);
	free(m->result.procs);
	free(m->result.files);
	flame_tree_free(m->result.inuse);
	flame_tree_free(m->result.alloc);
	stack_profile_free(&m->inuse_prof);
	stack_profile_free(&m->alloc_prof);
	free(m);
}

const struct mem_result *model_mem_result(const void *state)
{
	return &((const struct model_mem *)state)->result;
}

const struct model_ops model_mem_ops = {
	.name = "mem",
	.create = mem_create,
	.feed = mem_feed,
	.finish = mem_finish,
	.destroy = mem_destroy,
};
