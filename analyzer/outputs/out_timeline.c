/* The timeline writer (see out_timeline.h for the layout): what goes on
 * the timeline, handed to the emitter of the format asked for
 * (out_timeline_emit.h).  The only strings from the trace it passes on are
 * process names, host names and command lines, in the metadata.  Not for
 * analyses. */
#include "out_timeline.h"
#include "out_timeline_emit.h"
#include "cuda_funcs.h"
#include "model_findings.h"
#include "model_gpu.h"
#include "model_mem.h"
#include "hmap.h"
#include "model_events.h"
#include "out_common.h"
#include "syscall_names.h"
#include "trace_set.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Recent X slices kept per thread for the nesting check. */
#define RECENT 32
#define PID_BITS 22 /* Linux pid_max is at most 2^22 */
#define STEPS_TID_BIT TL_STEPS_TID_BIT
#define IDLE_TID_BIT TL_IDLE_TID_BIT /* the "GPU idle" track of a process */

struct thread_state {
	int64_t start[RECENT], end[RECENT]; /* ns from the origin */
	uint32_t n, next;
	int64_t forgot_max_end;  /* latest end among slices evicted from the ring */
	int forgot;
};

struct out_timeline {
	void *em;                  /* the format's emitter */
	const struct tl_emit *ops;
	struct trace_set *ts;
	int64_t origin_ns;
	int64_t *offsets;
	size_t n_files;
	int clock_set;             /* origin and offsets taken (set_clock) */
	uint64_t next_async_id;
	struct hmap thread_idx;    /* (file << 32 | pid, tid) -> index + 1 */
	struct thread_state *threads;
	size_t n_threads, cap_threads;
	struct hmap inuse_ts;      /* same key -> last ts written (ns from origin) + 1 */
	struct hmap step_start;    /* (file, pid) -> start (ns from origin) + 1 */
	struct hmap step_no;       /* (file, pid) -> steps seen */
	struct hmap step_tid;      /* (file, pid) -> tid of the last step mark */
	const void *findings;      /* model_findings state: the GPU-idle intervals */
	struct out_timeline_filter filter;
	struct hmap before_from;   /* counter track -> bytes + 1 of its last value before the
				      window, until the window's first value is written */
	struct out_timeline_stats stats;
};

static uint64_t jpid(uint32_t fi, uint32_t pid)
{
	return (uint64_t)fi << PID_BITS | (pid & ((1u << PID_BITS) - 1));
}

/* The files' offsets and the origin, at the first event: the decoder has
 * made the offsets final by then (align.h), and the origin is the earliest
 * event of all files, from the EVENTS chunk headers of its metadata pass
 * (the earliest recording start when no file has events). */
static void set_clock(struct out_timeline *t)
{
	t->clock_set = 1;
	t->origin_ns = INT64_MAX;
	for (size_t i = 0; i < t->n_files; i++) {
		const struct trace_file *f = trace_set_file(t->ts, i);
		t->offsets[i] = out_clock_offset_ns(t->ts, i);
		if (!f->first_chunk_event_ns)
			continue;
		int64_t first = (int64_t)(f->first_chunk_event_ns + (uint64_t)t->offsets[i]);
		if (first < t->origin_ns)
			t->origin_ns = first;
	}
	if (t->origin_ns != INT64_MAX)
		return;
	for (size_t i = 0; i < t->n_files; i++) {
		int64_t start = (int64_t)trace_set_file(t->ts, i)->hdr.start_real_ns;
		if (start < t->origin_ns)
			t->origin_ns = start;
	}
}

static int64_t rel(struct out_timeline *t, uint32_t fi, uint64_t ts_ns)
{
	if (!t->clock_set)
		set_clock(t);
	int64_t off = fi < t->n_files ? t->offsets[fi] : 0;
	/* wrapping, then clamped: times in a hostile file may be anything, and
	 * callers add durations (capped at INT64_MAX / 2) and subtract these */
	int64_t r = (int64_t)(ts_ns + (uint64_t)off - (uint64_t)t->origin_ns);
	return r > INT64_MAX / 4 ? INT64_MAX / 4 : r < -(INT64_MAX / 4) ? -(INT64_MAX / 4) : r;
}

/* The process filter: 1 when (fi, pid)'s events are kept. */
static int keep_proc(struct out_timeline *t, uint32_t fi, uint32_t pid)
{
	const struct out_timeline_filter *q = &t->filter;
	if (q->filter_pid && pid != q->pid)
		return 0;
	if (q->filter_rank) {
		const struct trace_file *f = trace_set_file(t->ts, fi);
		int64_t rank;
		if (!f || !out_process_rank(f, pid, &rank) || rank != q->rank)
			return 0;
	}
	return 1;
}

/* 1 when [s, e] (ns from the origin) meets the window. */
static int keep_time(const struct out_timeline *t, int64_t s, int64_t e)
{
	return !t->filter.window || (e >= t->filter.from_ns && s <= t->filter.to_ns);
}

static int keep(struct out_timeline *t, uint32_t fi, uint32_t pid, int64_t s, int64_t e)
{
	if (keep_proc(t, fi, pid) && keep_time(t, s, e))
		return 1;
	t->stats.filtered++;
	return 0;
}

/* tid: a thread, or a GPU stream's TL_GPU_TID */
static struct thread_state *thread_of(struct out_timeline *t, uint32_t fi, uint32_t pid,
				      uint64_t tid)
{
	int created;
	uint64_t *v = hmap_slot(&t->thread_idx, (uint64_t)fi << 32 | pid, tid, &created);
	if (!v)
		return NULL;
	if (created) {
		if (t->n_threads == t->cap_threads) {
			size_t cap = t->cap_threads ? t->cap_threads * 2 : 64;
			struct thread_state *g = realloc(t->threads, cap * sizeof(*g));
			if (!g)
				return NULL;
			t->threads = g;
			t->cap_threads = cap;
		}
		memset(&t->threads[t->n_threads], 0, sizeof(t->threads[0]));
		*v = ++t->n_threads;
	}
	return &t->threads[*v - 1];
}

static int nests(int64_t s, int64_t e, int64_t s2, int64_t e2)
{
	return e <= s2 || e2 <= s || (s2 <= s && e <= e2) || (s <= s2 && e2 <= e);
}

/* 1 when [s, e) nests with every slice the thread has as X: it is then
 * remembered.  Slices evicted from the ring end at or before forgot_max_end,
 * so a slice starting there or later cannot cross them; an earlier one
 * cannot be checked and is not an X. */
static int claim_x(struct thread_state *th, int64_t s, int64_t e)
{
	if (th->forgot && s < th->forgot_max_end)
		return 0;
	for (uint32_t k = 0; k < th->n; k++)
		if (!nests(s, e, th->start[k], th->end[k]))
			return 0;
	if (th->n == RECENT) {
		if (!th->forgot || th->end[th->next] > th->forgot_max_end)
			th->forgot_max_end = th->end[th->next];
		th->forgot = 1;
	} else {
		th->n++;
	}
	th->start[th->next] = s;
	th->end[th->next] = e;
	th->next = (th->next + 1) % RECENT;
	return 1;
}

/* A slice on thread (fi, pid, tid): X when it nests, else an async pair. */
static int slice(struct out_timeline *t, uint32_t fi, uint32_t pid, uint32_t tid,
		 const char *name, const char *cat, uint64_t ts_ns, uint64_t dur_ns,
		 const char *args)
{
	int64_t s = rel(t, fi, ts_ns);
	int64_t e = s + (int64_t)(dur_ns > INT64_MAX / 2 ? INT64_MAX / 2 : dur_ns);
	if (!keep(t, fi, pid, s, e))
		return 0;
	struct thread_state *th = thread_of(t, fi, pid, tid);
	if (!th)
		return -1;
	if (claim_x(th, s, e)) {
		t->ops->slice(t->em, cat, name, jpid(fi, pid), jpid(fi, tid), s, e - s, args);
		t->stats.slices++;
		return 0;
	}
	char ocat[48], id[24], oargs[256];
	snprintf(ocat, sizeof(ocat), "%s.overlap", cat);
	snprintf(id, sizeof(id), "0x%" PRIx64, ++t->next_async_id);
	snprintf(oargs, sizeof(oargs), "%s%s\"tid\":%u", args, args[0] ? "," : "", tid);
	t->ops->async(t->em, 1, ocat, name, id, jpid(fi, pid), jpid(fi, tid), s, oargs);
	t->ops->async(t->em, 0, ocat, name, id, jpid(fi, pid), jpid(fi, tid), e, NULL);
	t->stats.demoted++;
	return 0;
}

/* A kernel's run on its GPU stream's track; a stream's kernels run one
 * after another, so they nest, and one that overlaps (a damaged file, a
 * merged one) is an async slice as a thread's would be. */
static int gpu_kernel(struct out_timeline *t, uint32_t fi, const struct fr_rec_hdr *rec)
{
	struct fr_ev_gpu_kernel ev;
	memcpy(&ev, rec, sizeof(ev));
	uint64_t dur = ev.end_ns > ev.start_ns ? ev.end_ns - ev.start_ns : 0;
	int64_t s = rel(t, fi, ev.start_ns);
	int64_t e = s + (int64_t)(dur > INT64_MAX / 2 ? INT64_MAX / 2 : dur);
	if (!keep(t, fi, ev.c.pid, s, e))
		return 0;
	uint64_t tid = TL_GPU_TID(ev.device, ev.stream);
	struct thread_state *th = thread_of(t, fi, ev.c.pid, tid);
	if (!th)
		return -1;
	char buf[FR_GPU_KERNEL_NAME + 1], *demangled, args[192];
	const char *name = gpu_kernel_name(ev.name, buf, &demangled);
	if (!name)
		return -1;
	snprintf(args, sizeof(args), "\"correlation_id\":%" PRIu64 ",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u]"
		 ",\"shared_bytes\":%u,\"registers\":%u", ev.correlation_id, ev.grid[0], ev.grid[1],
		 ev.grid[2], ev.block[0], ev.block[1], ev.block[2], ev.shared_bytes, ev.registers);
	if (claim_x(th, s, e)) {
		t->ops->slice(t->em, "gpu", name, jpid(fi, ev.c.pid), tid, s, e - s, args);
		t->stats.gpu_kernels++;
	} else {
		char id[24];
		snprintf(id, sizeof(id), "0x%" PRIx64, ++t->next_async_id);
		t->ops->async(t->em, 1, "gpu.overlap", name, id, jpid(fi, ev.c.pid), tid, s, args);
		t->ops->async(t->em, 0, "gpu.overlap", name, id, jpid(fi, ev.c.pid), tid, e, NULL);
		t->stats.demoted++;
	}
	free(demangled);
	return 0;
}

static int kind_code(const char *kind)
{
	return kind[0] == 'd' ? 0 : kind[0] == 'm' ? 1 : 2;
}

static int counter_value(struct out_timeline *t, uint32_t fi, uint32_t pid, int32_t device,
			 const char *kind, uint64_t ka, uint64_t kb, int64_t ts, uint64_t bytes);

/* Memory in use of (fi, pid, device, kind) is bytes from ts_ns on;
 * counter timestamps never go back on one track. */
static int counter(struct out_timeline *t, uint32_t fi, uint32_t pid, int32_t device,
		   const char *kind, uint64_t ts_ns, uint64_t bytes)
{
	uint64_t ka = (uint64_t)fi << 32 | pid;
	uint64_t kb = (uint64_t)(uint32_t)device << 8 | (uint64_t)kind_code(kind);
	int64_t ts = rel(t, fi, ts_ns);
	if (!keep_proc(t, fi, pid)) {
		t->stats.filtered++;
		return 0;
	}
	if (t->filter.window && (ts < t->filter.from_ns || ts > t->filter.to_ns)) {
		/* before the window: the track's value at its start, written
		 * with its first value inside (or at the end) */
		t->stats.filtered++;
		return ts < t->filter.from_ns ? hmap_put(&t->before_from, ka, kb, bytes + 1) : 0;
	}
	uint64_t *pending = hmap_slot(&t->before_from, ka, kb, NULL);
	if (!pending)
		return -1;
	uint64_t at_from = *pending;
	*pending = 0;
	if (at_from && ts > t->filter.from_ns &&
	    counter_value(t, fi, pid, device, kind, ka, kb, t->filter.from_ns, at_from - 1))
		return -1;
	return counter_value(t, fi, pid, device, kind, ka, kb, ts, bytes);
}

static int counter_value(struct out_timeline *t, uint32_t fi, uint32_t pid, int32_t device,
			 const char *kind, uint64_t ka, uint64_t kb, int64_t ts, uint64_t bytes)
{
	uint64_t *last = hmap_slot(&t->inuse_ts, ka, kb, NULL);
	if (!last)
		return -1;
	if (*last && ts < (int64_t)(*last - 1))
		ts = (int64_t)(*last - 1);
	*last = (uint64_t)ts + 1;
	char name[64];
	snprintf(name, sizeof(name), "GPU memory in use (%s %d)", kind, device);
	t->ops->counter(t->em, name, jpid(fi, pid), ts, bytes);
	t->stats.counters++;
	return 0;
}

static int feed_cuda(struct out_timeline *t, uint32_t fi, const struct fr_rec_hdr *rec)
{
	struct fr_ev_cuda ev;
	memcpy(&ev, rec, sizeof(ev));
	const char *name = cuda_func_name((uint16_t)ev.func);
	char unknown[32], args[256];
	if (!name) {
		snprintf(unknown, sizeof(unknown), "cuda_func_%u", ev.func);
		name = unknown;
	}
	int n = snprintf(args, sizeof(args), "\"result\":%" PRId64 ",\"device\":%d", ev.result,
			 ev.device);
	if (ev.bytes)
		n += snprintf(args + n, sizeof(args) - (size_t)n, ",\"bytes\":%" PRIu64, ev.bytes);
	if (ev.ptr)
		n += snprintf(args + n, sizeof(args) - (size_t)n, ",\"ptr\":\"0x%" PRIx64 "\"", ev.ptr);
	if ((ev.func == FR_CUDA_MEMCPY || ev.func == FR_CUDA_MEMCPY_ASYNC ||
	     ev.func == FR_CU_MEMCPY || ev.func == FR_CU_MEMCPY_ASYNC) && out_copy_kind_name(ev.kind))
		snprintf(args + n, sizeof(args) - (size_t)n, ",\"kind\":\"%s\"", out_copy_kind_name(ev.kind));
	if (slice(t, fi, ev.c.pid, ev.c.tid, name, "cuda", ev.c.ts_ns, ev.duration_ns, args))
		return -1;
	return 0; /* memory counters: timeline_mem_change */
}

/* The GPU memory model's ledger changes: one counter value per change. */
static int timeline_mem_change(void *ctx, const struct mem_change *c)
{
	struct out_timeline *t = ctx;
	if (c->kind != MEM_ALLOCATED && c->kind != MEM_FREED)
		return 0;
	return counter(t, c->file, c->pid, c->device,
		       c->space == MEM_SPACE_PINNED_HOST ? "host_pinned" : "device", c->t_ns,
		       c->inuse_bytes);
}

static int feed_step(struct out_timeline *t, uint32_t fi, uint32_t pid, uint32_t tid, uint64_t ts_ns)
{
	uint64_t key = (uint64_t)fi << 32 | pid;
	uint64_t *start = hmap_slot(&t->step_start, key, 0, NULL);
	if (!start)
		return -1;
	int64_t now = rel(t, fi, ts_ns);
	if (*start) {
		int64_t s = (int64_t)(*start - 1);
		if (now < s)
			return 0; /* out of order: the current step keeps going */
		uint64_t *no = hmap_slot(&t->step_no, key, 0, NULL);
		if (!no)
			return -1;
		if (!keep(t, fi, pid, s, now)) {
			++*no;
			*start = (uint64_t)now + 1;
			return 0;
		}
		char name[32];
		snprintf(name, sizeof(name), "step %" PRIu64, *no);
		t->ops->slice(t->em, "step", name, jpid(fi, pid), STEPS_TID_BIT | jpid(fi, pid), s,
			      now - s, "");
		++*no;
		t->stats.steps++;
	}
	*start = (uint64_t)now + 1;
	(void)tid;
	return 0;
}

/* One event of the event stream model (model_events.h). */
static int on_event(void *ctx, const struct ev_item *e)
{
	struct out_timeline *t = ctx;
	uint32_t fi = e->file;
	const struct fr_rec_hdr *rec = e->rec;
	uint16_t type = e->type;
	char args[192];
	switch (type) {
	case FR_EV_SYSCALL: {
		struct fr_ev_syscall ev;
		memcpy(&ev, rec, sizeof(ev));
		char unknown[32];
		const char *name = ev.nr < 1024 ? syscall_name(ev.nr) : NULL;
		if (!name) {
			snprintf(unknown, sizeof(unknown), "syscall_%u", ev.nr);
			name = unknown;
		}
		int n = snprintf(args, sizeof(args), "\"ret\":%" PRId64, ev.ret);
		if (ev.sc_flags & FR_SYSCALL_HAS_FD)
			n += snprintf(args + n, sizeof(args) - (size_t)n, ",\"fd\":%" PRId64, ev.fd);
		if (ev.sc_flags & FR_SYSCALL_HAS_BYTES)
			snprintf(args + n, sizeof(args) - (size_t)n, ",\"bytes\":%" PRIu64, ev.count);
		return slice(t, fi, ev.c.pid, ev.c.tid, name, "syscall", ev.c.ts_ns, ev.duration_ns, args);
	}
	case FR_EV_CUDA:
		return feed_cuda(t, fi, rec);
	case FR_EV_NCCL: {
		struct fr_ev_nccl ev;
		memcpy(&ev, rec, sizeof(ev));
		const char *name = e->func_name;
		char unknown[32];
		if (!name) {
			snprintf(unknown, sizeof(unknown), "nccl_func_%u", ev.func);
			name = unknown;
		}
		snprintf(args, sizeof(args), "\"count\":%" PRIu64 ",\"datatype\":%u,\"comm\":\"0x%" PRIx64
			 "\",\"peer\":%d,\"result\":%" PRId64, ev.count, ev.datatype, ev.comm, ev.peer,
			 ev.result);
		return slice(t, fi, ev.c.pid, ev.c.tid, name, "nccl", ev.c.ts_ns, ev.duration_ns, args);
	}
	case FR_EV_RDMA_POST: {
		struct fr_ev_rdma_post ev;
		memcpy(&ev, rec, sizeof(ev));
		int completes = (ev.flags & (FR_RDMA_POST_RECV | FR_RDMA_POST_SIGNALED)) &&
				!(ev.flags & FR_RDMA_POST_FAILED);
		int64_t at = rel(t, fi, ev.c.ts_ns);
		if (!keep(t, fi, ev.c.pid, at, at))
			return 0;
		char name[64], id[64];
		snprintf(args, sizeof(args), "\"wr_id\":\"0x%" PRIx64 "\",\"opcode\":%u,\"bytes\":%" PRIu64
			 ",\"recv\":%s,\"result\":%d", ev.wr_id, ev.opcode, ev.bytes,
			 ev.flags & FR_RDMA_POST_RECV ? "true" : "false", ev.result);
		if (completes) {
			snprintf(name, sizeof(name), "qp %u", ev.qp_num);
			snprintf(id, sizeof(id), "%u:%u:0x%" PRIx64, fi, ev.qp_num, ev.wr_id);
			t->ops->async(t->em, 1, "rdma", name, id, jpid(fi, ev.c.pid), jpid(fi, ev.c.tid),
				      at, args);
			t->stats.async++;
		} else {
			snprintf(name, sizeof(name), "qp %u %s", ev.qp_num,
				 ev.flags & FR_RDMA_POST_FAILED ? "post failed" : "unsignaled post");
			t->ops->instant(t->em, "rdma", name, jpid(fi, ev.c.pid), jpid(fi, ev.c.tid), at,
					args);
			t->stats.instants++;
		}
		return 0;
	}
	case FR_EV_RDMA_CQE: {
		struct fr_ev_rdma_cqe ev;
		memcpy(&ev, rec, sizeof(ev));
		const char *status = out_wc_status_name(ev.status);
		int64_t at = rel(t, fi, ev.c.ts_ns);
		if (!keep(t, fi, ev.c.pid, at, at))
			return 0;
		char name[32], id[64];
		snprintf(name, sizeof(name), "qp %u", ev.qp_num);
		snprintf(id, sizeof(id), "%u:%u:0x%" PRIx64, fi, ev.qp_num, ev.wr_id);
		snprintf(args, sizeof(args), "\"status\":\"%s\",\"byte_len\":%u",
			 status ? status : "unknown", ev.byte_len);
		t->ops->async(t->em, 0, "rdma", name, id, jpid(fi, ev.c.pid), jpid(fi, ev.c.tid), at,
			      args);
		t->stats.async++;
		return 0;
	}
	case FR_EV_STEP: {
		struct fr_ev_step ev;
		memcpy(&ev, rec, sizeof(ev));
		return feed_step(t, fi, ev.c.pid, ev.c.tid, ev.c.ts_ns);
	}
	case FR_EV_GPU_KERNEL:
		return gpu_kernel(t, fi, rec);
	case FR_EV_GPU_LAUNCH: /* the launch call's slice is the cuda family's */
	case FR_EV_CPU_SAMPLE: case FR_EV_PROC_FORK: case FR_EV_PROC_EXEC: case FR_EV_PROC_EXIT:
		return 0; /* not on the timeline: the flame graph and the report show them */
	}
	/* Any other call with a duration or a function (a family without a
	 * case above): a slice named by its descriptor. */
	if (!e->family || (!e->duration_ns && !e->func_name))
		return 0;
	char unknown[48];
	const char *name = e->func_name;
	if (!name) {
		const struct fr_family_record *r = fr_family_record(type);
		snprintf(unknown, sizeof(unknown), "%s", r ? r->name : "event");
		name = unknown;
	}
	return slice(t, fi, e->pid, e->tid, name, e->family->name, e->ts_ns, e->duration_ns, "");
}

int out_timeline_begin(struct trace_set *ts, FILE *out, enum out_timeline_format format,
		       const struct out_timeline_filter *filter, struct out_timeline **tp,
		       struct frec_error *err)
{
	struct out_timeline *t = calloc(1, sizeof(*t));
	if (!t)
		goto oom;
	if (filter)
		t->filter = *filter;
	hmap_init(&t->before_from);
	t->ts = ts;
	t->n_files = trace_set_count(ts);
	hmap_init(&t->thread_idx);
	hmap_init(&t->inuse_ts);
	hmap_init(&t->step_start);
	hmap_init(&t->step_no);
	hmap_init(&t->step_tid);
	t->offsets = calloc(t->n_files ? t->n_files : 1, sizeof(*t->offsets));
	/* events from the event stream; memory counters from the one
	 * allocation ledger; the nccl model aligns the files' clocks (the
	 * decoder's align stage runs it) */
	void *events = trace_set_use_model(ts, "events", NULL);
	void *mem = trace_set_use_model(ts, "mem", NULL);
	/* the GPU-idle intervals with their cause, drawn at the end */
	const struct model_opts keep_intervals = { .idle_intervals = 1 };
	t->findings = trace_set_use_model(ts, "findings", &keep_intervals);
	if (!t->offsets || !events || !mem || !t->findings || !trace_set_use_model(ts, "nccl", NULL) ||
	    model_events_subscribe(events, ts, on_event, t)) {
		out_timeline_free(t);
		goto oom;
	}
	model_mem_on_change(mem, timeline_mem_change, t);
	t->em = format == OUT_TIMELINE_PERFETTO ? tl_perfetto_new(out, &t->ops) : tl_json_new(out, &t->ops);
	if (!t->em) {
		out_timeline_free(t);
		goto oom;
	}
	*tp = t;
	return 0;
oom:
	frec_error_set(err, "timeline", -1, ENOMEM, "out of memory");
	return -1;
}

static void meta_event(struct out_timeline *t, const char *what, uint64_t pid, uint64_t tid,
		       const char *key, const char *value, int64_t number, int is_number)
{
	t->ops->meta(t->em, what, pid, tid, key, value, number, is_number);
}

static void name_process(struct out_timeline *t, uint32_t fi, const struct trace_file *f,
			 uint32_t pid)
{
	const struct ts_process *p = trace_file_process(f, pid);
	char name[256];
	int64_t rank;
	int has_rank = out_process_rank(f, pid, &rank);
	int n = snprintf(name, sizeof(name), "%s (pid %u) %s", p && p->comm[0] ? p->comm : "process",
			 pid, f->hdr.host[0] ? f->hdr.host : "?");
	if (has_rank)
		snprintf(name + n, sizeof(name) - (size_t)n, " rank %" PRId64, rank);
	meta_event(t, "process_name", jpid(fi, pid), 0, "name", name, 0, 0);
	if (p && p->cmdline[0])
		meta_event(t, "process_labels", jpid(fi, pid), 0, "labels", p->cmdline, 0, 0);
	meta_event(t, "process_sort_index", jpid(fi, pid), 0, "sort_index", NULL,
		   has_rank ? rank : (int64_t)jpid(fi, pid) + 1000000, 1);
}

/* The findings model's idle intervals: one X slice each on the "GPU idle"
 * track of its process, named by the cause that holds most of it (a
 * finding kind, or "unexplained"), with every cause's ms in args. */
static void gpu_idle_slices(struct out_timeline *t)
{
	const struct findings_result *r = model_findings_result(t->findings);
	for (size_t i = 0; i < r->n_procs; i++) {
		const struct findings_proc *p = &r->procs[i];
		for (size_t k = 0; k < p->n_idle; k++) {
			const struct findings_idle_interval *iv = &p->idle[k];
			enum finding_kind cause = findings_idle_cause(iv);
			int64_t s = rel(t, p->file, iv->start_ns), e = rel(t, p->file, iv->end_ns);
			if (!keep(t, p->file, p->pid, s, e))
				continue;
			char args[64 * (FIND_IDLE_KINDS + 1)];
			size_t n = 0;
			for (int c = 0; c < FIND_IDLE_KINDS; c++)
				if (iv->kind_ns[c] && n < sizeof(args))
					n += (size_t)snprintf(args + n, sizeof(args) - n, "\"%s_ms\":%.3f,",
							      finding_kind_name((enum finding_kind)c),
							      (double)iv->kind_ns[c] / 1e6);
			if (n < sizeof(args))
				snprintf(args + n, sizeof(args) - n, "\"unexplained_ms\":%.3f",
					 (double)iv->unexplained_ns / 1e6);
			t->ops->slice(t->em, "gpu_idle",
				      cause == FIND_KINDS ? "unexplained" : finding_kind_name(cause),
				      jpid(p->file, p->pid), IDLE_TID_BIT | jpid(p->file, p->pid), s, e - s,
				      args);
			t->stats.gpu_idle++;
		}
	}
}

int out_timeline_end(struct out_timeline *t, struct trace_set *ts, struct frec_error *err)
{
	/* the last step of each process runs to its file's last event */
	for (size_t k = 0; k < t->step_start.cap; k++) {
		const struct hmap_slot *s = &t->step_start.slots[k];
		if (!s->used || !s->value)
			continue;
		uint32_t fi = (uint32_t)(s->key_a >> 32);
		const struct trace_file *f = trace_set_file(ts, fi);
		if (f && f->last_event_ns)
			feed_step(t, fi, (uint32_t)s->key_a, 0, f->last_event_ns);
	}
	gpu_idle_slices(t);
	/* counters with no value inside the window: their value at its start */
	for (size_t k = 0; k < t->before_from.cap; k++) {
		const struct hmap_slot *s = &t->before_from.slots[k];
		if (!s->used || !s->value)
			continue;
		int kind = (int)(s->key_b & 0xff);
		if (counter_value(t, (uint32_t)(s->key_a >> 32), (uint32_t)s->key_a,
				  (int32_t)(uint32_t)(s->key_b >> 8),
				  kind == 0 ? "device" : kind == 1 ? "managed" : "host_pinned", s->key_a,
				  s->key_b, t->filter.from_ns, s->value - 1))
			break;
	}
	/* names: every process of the files kept, every thread that had a slice */
	for (size_t i = 0; i < trace_set_count(ts); i++) {
		const struct trace_file *f = trace_set_file(ts, i);
		for (size_t k = 0; k < f->n_procs; k++)
			if (keep_proc(t, (uint32_t)i, f->procs[k].pid))
				name_process(t, (uint32_t)i, f, f->procs[k].pid);
	}
	for (size_t k = 0; k < t->thread_idx.cap; k++) {
		const struct hmap_slot *s = &t->thread_idx.slots[k];
		if (!s->used)
			continue;
		uint32_t fi = (uint32_t)(s->key_a >> 32), pid = (uint32_t)s->key_a;
		const struct trace_file *f = trace_set_file(ts, fi);
		if (!f)
			continue;
		if (!trace_file_process(f, pid))
			name_process(t, fi, f, pid);
		if (s->key_b & TL_GPU_TID_BIT) {
			char name[48];
			snprintf(name, sizeof(name), "GPU %u stream %u", (unsigned)(s->key_b >> 24 & 0xff),
				 (unsigned)(s->key_b & 0xffffff));
			meta_event(t, "thread_name", jpid(fi, pid), s->key_b, "name", name, 0, 0);
			/* below the process's threads, in device and stream order */
			meta_event(t, "thread_sort_index", jpid(fi, pid), s->key_b, "sort_index", NULL,
				   (int64_t)(s->key_b & 0xffffffff) + 0x40000000, 1);
			continue;
		}
		uint32_t tid = (uint32_t)s->key_b;
		const struct ts_process *p = trace_file_process(f, pid);
		char name[64];
		/* a thread without a THREAD record: the main thread takes the
		 * process's comm, the others their tid */
		const char *tname = trace_file_thread_name(f, pid, tid);
		if (tname && tname[0])
			snprintf(name, sizeof(name), "%s", tname);
		else if (tid == pid && p && p->comm[0])
			snprintf(name, sizeof(name), "%s", p->comm);
		else
			snprintf(name, sizeof(name), "tid %u", tid);
		meta_event(t, "thread_name", jpid(fi, pid), jpid(fi, tid), "name", name, 0, 0);
	}
	for (size_t k = 0; k < t->step_no.cap; k++) {
		const struct hmap_slot *s = &t->step_no.slots[k];
		if (!s->used)
			continue;
		uint32_t fi = (uint32_t)(s->key_a >> 32), pid = (uint32_t)s->key_a;
		meta_event(t, "thread_name", jpid(fi, pid), STEPS_TID_BIT | jpid(fi, pid), "name",
			   "steps", 0, 0);
		meta_event(t, "thread_sort_index", jpid(fi, pid), STEPS_TID_BIT | jpid(fi, pid),
			   "sort_index", NULL, -1, 1);
	}
	const struct findings_result *fr = model_findings_result(t->findings);
	for (size_t i = 0; i < fr->n_procs; i++) {
		const struct findings_proc *p = &fr->procs[i];
		if (!p->n_idle || !keep_proc(t, p->file, p->pid))
			continue;
		meta_event(t, "thread_name", jpid(p->file, p->pid), IDLE_TID_BIT | jpid(p->file, p->pid),
			   "name", "GPU idle", 0, 0);
		meta_event(t, "thread_sort_index", jpid(p->file, p->pid),
			   IDLE_TID_BIT | jpid(p->file, p->pid), "sort_index", NULL, -2, 1);
	}
	errno = 0;
	if (t->ops->end(t->em)) {
		frec_error_set(err, "timeline", -1, EIO, "write failed: %s", strerror(errno ? errno : EIO));
		return -1;
	}
	return 0;
}

const struct out_timeline_stats *out_timeline_stats(const struct out_timeline *t)
{
	return &t->stats;
}

void out_timeline_free(struct out_timeline *t)
{
	if (!t)
		return;
	hmap_free(&t->thread_idx);
	hmap_free(&t->inuse_ts);
	hmap_free(&t->step_start);
	hmap_free(&t->step_no);
	hmap_free(&t->step_tid);
	hmap_free(&t->before_from);
	free(t->threads);
	free(t->offsets);
	if (t->em)
		t->ops->free(t->em);
	free(t);
}


