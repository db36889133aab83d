/* GPU idle from host signals, per process, and what it was spent on.
 * Not the findings themselves (findings_kinds.c) nor output.
 *
 * The rule.  When a synchronizing call returns, the device has finished
 * everything queued before it: its streams are empty.  They stay empty
 * until the process queues new device work.  So, per process:
 *   opens   the return of a synchronize (class FR_FN_SYNC:
 *           cudaStreamSynchronize, cudaDeviceSynchronize,
 *           cudaEventSynchronize, cuEventSynchronize), of a synchronous
 *           copy (cudaMemcpy, cuMemcpy: not the Async ones), of an
 *           implicitly synchronizing call (cudaFree, cuMemFree,
 *           cudaFreeHost, cudaMallocHost, cudaHostAlloc, cuMemHostAlloc),
 *           of a blocking NCCL call (findings_nccl.c: a job whose calls
 *           return only once every rank entered)
 *   closes  the entry of a launch (FR_FN_LAUNCH), a graph launch
 *           (FR_FN_GRAPH_LAUNCH) or an async copy from pinned memory
 *           (queued: the host runs on while it moves); not a launch made
 *           inside an NCCL call (the collective's own kernel)
 *   neither a copy from pageable memory that starts while the device is
 *           empty: the host stages it synchronously (an async one too, on
 *           NVIDIA's driver), the compute waits for its data; its time is
 *           the pageable_copy cause and the interval goes on; nor an NCCL
 *           call: the GPU computes nothing while it moves data or waits
 *           for the other ranks, so an interval open at its entry goes on
 *           through it (an enqueued collective's span too, up to the
 *           synchronize that waited for it: findings_nccl.c)
 * An interval runs from the first opening return to the next closing
 * entry; every interval is GPU-idle time.  A process that queued no device
 * work the trace shows (no launch, no pinned async copy: the cuda probe
 * not attached, or a job whose compute is not on the GPU, as
 * samples/nccl_train's) has for intervals only the spans of its NCCL calls
 * (nccl_spans): what its GPU did between them is not known.
 *
 * Limits: one process drives one GPU (as usual) and a synchronize is taken
 * to empty the device (true of the legacy stream, of device and event
 * synchronizes after the last work, and of one-stream loops); processes
 * are analysed separately; idle before the first synchronize and after
 * the last launch is not counted.  The stand-in's fake GPU
 * (samples/cudart) runs work exactly as queued, so there the intervals are
 * exact; on a real GPU a launch takes a few microseconds to start.
 *
 * Attribution: the interval belongs to the thread whose call opened it
 * (the training thread); what that thread did inside [start, end):
 *   1. copies from pageable memory it started: pageable_copy, their
 *      duration inside the interval;
 *   1b. NCCL calls it made (their spans, findings_nccl.c, which also says
 *      how a span divides): the exchange after the last rank entered:
 *      nccl_exchange; the stretch of the wait for the other ranks that the
 *      stragglers model charges to its straggler: straggler (so the
 *      straggler's cost is GPU idle of the ranks that wait, counted once);
 *      the rest of the wait, a return after the collective had completed
 *      on another rank, and spans that cannot be split: unexplained.  The
 *      system calls and CPU samples inside a span are the library's and
 *      are not read in 2 and 3;
 *   2. system calls it made, minus what a copy already holds:
 *      read, pread64, readv, preadv(2), recvfrom, recvmsg, futex: dataloader
 *      (reading input, or waiting for loader workers);
 *      write, pwrite64, writev, pwritev(2) to a file descriptor that names
 *      a checkpoint (FR_EV_FD_PATH: *.pt, *.pth, *.ckpt, *.safetensors,
 *      *.pkl, *.distcp), or that is fsync'd (fsync, fdatasync,
 *      sync_file_range) in the same interval with >= 1 MiB written, or
 *      with >= 16 MiB written in it, the open that returned that
 *      descriptor and its close, and every fsync: sync_checkpoint (the
 *      evidence names the files when their opens were recorded);
 *      any other call: unexplained;
 *   3. the rest of the interval (on CPU, or in nothing recorded) split by
 *      the thread's CPU samples in it that fall outside 1 and 2: a sample
 *      whose stack has a function named like *load*, *decode*, *collate*
 *      or __next__ (Python's iterator protocol: a DataLoader's) counts for
 *      dataloader, *save*, *checkpoint*, *serializ* for sync_checkpoint,
 *      any other for host_sync when a synchronize (class FR_FN_SYNC) opened
 *      the interval -- the host's own work between the synchronize and
 *      the next launch, which the synchronize made the GPU wait for -- and
 *      for unexplained when an implicit synchronize or a copy opened it
 *      (a blocking NCCL call counts as a synchronize: host_sync).
 *      Without samples in the interval the rest goes to host_sync (or
 *      unexplained) alike; without any CPU samples in the recording it is
 *      unexplained.
 *
 * Launch-bound steps.  Between the launch that ends an idle interval and
 * the synchronize that opens the next, the GPU has work queued, and host
 * signals alone cannot say whether it ran all along: no kernel's GPU time
 * is recorded.  One case can be read.  When the host, not the GPU, sets
 * the pace, the synchronize that ends the run finds (almost) nothing left
 * to wait for.  So a run counts as launch-bound when
 *   - it has at least LB_MIN_LAUNCHES launches (many kernels; nested driver
 *     launches inside a runtime launch count once) and no graph launch;
 *   - every launch and pinned async copy of it went to one stream of one
 *     device, and the run ends with a synchronize of that stream (or a
 *     cudaDeviceSynchronize of that device): a synchronize of another
 *     stream, or an event synchronize, says nothing about these kernels;
 *   - that synchronize waited less than the median time between the run's
 *     launches (the queue held less than one launch's worth of work when
 *     the host reached it).
 * The synchronize proves that the run's last kernel ran within `bound` =
 * its return minus that launch's entry.  Assuming no kernel of the run ran
 * longer than that (the many small kernels of a launch-bound step; a run
 * that mixes long kernels with a short last one is overstated), the GPU is
 * replayed with every kernel taking `bound`, queued at its launch's entry
 * and started when the one before it ends: each stretch from a replayed
 * kernel's end to the next launch's entry is GPU idle, at least.  Each
 * such gap is attributed like an idle interval (pageable copies, system
 * calls, CPU samples of the thread that made the next launch), and what
 * step 3 would give host_sync goes to launch_bound (the host issuing
 * work: the launch calls and the dispatch code between them).  The run
 * before the first idle interval is not read: what the GPU held when the
 * recording began is not known.
 *
 * Streams and devices.  Idle intervals are read per process: a synchronize
 * of any stream is taken to empty the process's device(s), so time another
 * stream or device was still busy counts as idle (fx_streams_of counts the
 * streams and devices so the output can say so; an NCCL call's stream is
 * not counted: a data-parallel process always has one beside its compute
 * stream, and its collectives' time is read as said in 1b).  Only
 * launch-bound runs check the stream, as said above. */
#include "findings_private.h"
#include "fr_family.h"
#include "symbolize.h"
#include "trace_set.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define CKPT_FSYNCED_MIN_BYTES (1ull << 20)
#define CKPT_LARGE_BYTES (16ull << 20)
#define FDS_PER_INTERVAL 32

enum sc_class { SC_OTHER, SC_LOADER, SC_WRITE, SC_FSYNC, SC_OPEN, SC_CLOSE };

static enum sc_class sc_class_of(uint16_t nr)
{
	switch (nr) {
	case 0: case 17: case 19: case 295: case 327: case 45: case 47: case 202:
		return SC_LOADER; /* read pread64 readv preadv preadv2 recvfrom recvmsg futex */
	case 1: case 18: case 20: case 296: case 328:
		return SC_WRITE;  /* write pwrite64 writev pwritev pwritev2 */
	case 74: case 75: case 277:
		return SC_FSYNC;  /* fsync fdatasync sync_file_range */
	case 2: case 85: case 257: case 437:
		return SC_OPEN;   /* open creat openat openat2: the fd is the result */
	case 3:
		return SC_CLOSE;
	}
	return SC_OTHER;
}

/* ---- frame rules ------------------------------------------------------------ */

static int has_word(const char *name, size_t len, const char *word)
{
	size_t w = strlen(word);
	for (size_t i = 0; i + w <= len; i++) {
		size_t k = 0;
		while (k < w && tolower((unsigned char)name[i + k]) == word[k])
			k++;
		if (k == w)
			return 1;
	}
	return 0;
}

size_t fx_frame_match(const char *const *frames, size_t n, enum finding_kind kind)
{
	static const char *const loader[] = { "load", "decode", "collate", "__next__", NULL };
	static const char *const ckpt[] = { "save", "checkpoint", "serializ", NULL };
	const char *const *words = kind == FIND_DATALOADER ? loader
		: kind == FIND_SYNC_CHECKPOINT ? ckpt : NULL;
	if (!words)
		return SIZE_MAX;
	for (size_t i = n; i-- > 0;) {
		const char *f = frames[i];
		if (!f)
			continue;
		size_t len = strlen(f);
		if (len >= 4 && !strcmp(f + len - 4, "_[k]"))
			continue; /* kernel frames never name the job's code */
		const char *paren = strstr(f, " (");
		if (paren)
			len = (size_t)(paren - f); /* a Python frame: its function name */
		for (size_t w = 0; words[w]; w++)
			if (has_word(f, len, words[w]))
				return i;
	}
	return SIZE_MAX;
}

/* ---- sorting and intervals ---------------------------------------------------- */

static int ev_cmp(const void *a, const void *b)
{
	const struct fx_ev *x = a, *y = b;
	if (x->t0 != y->t0)
		return x->t0 < y->t0 ? -1 : 1;
	if (x->t1 != y->t1)
		return x->t1 > y->t1 ? -1 : 1; /* an outer call before the calls inside it */
	return (int)x->type - (int)y->type;
}

struct mark {
	uint64_t t;
	uint32_t ev;
	uint32_t open;
};

static int mark_cmp(const void *a, const void *b)
{
	const struct mark *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->open != y->open)
		return x->open ? 1 : -1; /* work queued at the instant of a return came first */
	return x->ev < y->ev ? -1 : x->ev > y->ev;
}

struct interval {
	uint64_t a, b;
	uint32_t opener;
};

/* First event with t0 >= t (events sorted by t0). */
static size_t lower_bound(const struct fx_ev *ev, size_t n, uint64_t t)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ev[mid].t0 < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* ---- attribution of one interval ---------------------------------------------- */

struct seg {
	uint64_t s, e;
};

struct ctx {
	struct fx_proc *p;
	struct trace_set *ts;
	struct symbolizer *sym;
	const struct trace_file *f;
	struct hmap sample_class; /* stack_id -> class + 1 (enum finding_kind, or FIND_KINDS: other) */
	const char **frames;
	size_t cap;
	struct seg *segs;         /* claimed by copies and system calls, this interval */
	size_t n_segs, cap_segs;
	int have_samples;
	char *const *paths;       /* the state's FXE_FDPATH names */
	size_t *fdpath;           /* indexes of p's FXE_FDPATH events, in time order */
	size_t n_fdpath;
};

/* leaf: the CUDA function the stack called (its frame is not in the
 * stack the probe takes), 0 for none. */
static int add_where(struct fx_proc *p, enum finding_kind k, int trim, uint32_t stack_id,
		     uint16_t leaf, uint64_t ns)
{
	if (!ns)
		return 0;
	uint64_t *v = hmap_slot(&p->where, (uint64_t)k << 8 | (uint64_t)trim,
				(uint64_t)leaf << 32 | stack_id, NULL);
	if (!v)
		return -1;
	*v += ns;
	return 0;
}

static int push_seg(struct ctx *c, uint64_t s, uint64_t e)
{
	if (c->n_segs == c->cap_segs) {
		size_t cap = c->cap_segs ? c->cap_segs * 2 : 32;
		struct seg *grown = realloc(c->segs, cap * sizeof(*grown));
		if (!grown)
			return -1;
		c->segs = grown;
		c->cap_segs = cap;
	}
	c->segs[c->n_segs++] = (struct seg){ s, e };
	return 0;
}

/* Nanoseconds of [s, e) that the first n copy segments cover. */
static uint64_t covered(const struct seg *segs, size_t n, uint64_t s, uint64_t e)
{
	uint64_t in = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t lo = segs[i].s > s ? segs[i].s : s, hi = segs[i].e < e ? segs[i].e : e;
		if (hi > lo)
			in += hi - lo;
	}
	return in;
}

/* Nanoseconds [s, e) and [lo, hi) share. */
static uint64_t overlap_ns(uint64_t s, uint64_t e, uint64_t lo, uint64_t hi)
{
	uint64_t from = s > lo ? s : lo, to = e < hi ? e : hi;
	return to > from ? to - from : 0;
}

static int inside_any(const struct seg *segs, size_t n, uint64_t t)
{
	for (size_t i = 0; i < n; i++)
		if (t >= segs[i].s && t < segs[i].e)
			return 1;
	return 0;
}

/* FIND_DATALOADER, FIND_SYNC_CHECKPOINT, or FIND_KINDS for any other stack. */
static int sample_class(struct ctx *c, uint32_t stack_id, enum finding_kind *out)
{
	uint64_t v;
	if (hmap_get(&c->sample_class, stack_id, 0, &v)) {
		*out = (enum finding_kind)(v - 1);
		return 0;
	}
	enum finding_kind k = FIND_KINDS;
	if (c->f) {
		size_t n = symbolize_frames(c->sym, c->f, c->p->file, stack_id, &c->frames, &c->cap, NULL);
		if (n == SIZE_MAX)
			return -1;
		size_t dl = fx_frame_match(c->frames, n, FIND_DATALOADER);
		size_t ck = fx_frame_match(c->frames, n, FIND_SYNC_CHECKPOINT);
		if (dl != SIZE_MAX && (ck == SIZE_MAX || dl > ck))
			k = FIND_DATALOADER; /* the innermost match decides */
		else if (ck != SIZE_MAX)
			k = FIND_SYNC_CHECKPOINT;
	}
	if (hmap_put(&c->sample_class, stack_id, 0, (uint64_t)k + 1))
		return -1;
	*out = k;
	return 0;
}

struct fd_written {
	int64_t fd;
	uint64_t bytes;
	int fsynced;
	const char *path;  /* the file it names, when recorded (FR_EV_FD_PATH) */
};

/* A file name a checkpoint has: PyTorch's, Lightning's, safetensors' and
 * the pickles torch.save writes (kept by --redact: tokens keep extensions). */
static int checkpoint_name(const char *path)
{
	static const char *const ext[] = { ".pt", ".pth", ".ckpt", ".safetensors", ".pkl", ".distcp" };
	size_t n = path ? strlen(path) : 0;
	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
		size_t k = strlen(ext[i]);
		if (n > k && !strcmp(path + n - k, ext[i]))
			return 1;
	}
	return 0;
}

/* The file fd named at time t: the latest FXE_FDPATH of fd before t (fds
 * are per process, so any thread's), found from the last one before t
 * backwards (the list is in time order). */
static const char *path_of(const struct ctx *c, int64_t fd, uint64_t t)
{
	size_t lo = 0, hi = c->n_fdpath; /* first entry after t */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->p->ev[c->fdpath[mid]].t0 <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo-- > 0) {
		const struct fx_ev *e = &c->p->ev[c->fdpath[lo]];
		if (e->fd == fd)
			return c->paths[e->bytes];
	}
	return NULL;
}

/* A checkpoint: a file with a checkpoint's name, or large writes made
 * durable (>= 1 MiB then fsync, or >= 16 MiB to one descriptor). */
static int fd_is_checkpoint(const struct fd_written *fds, size_t n, int64_t fd)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i].fd == fd)
			return checkpoint_name(fds[i].path) ||
			       (fds[i].fsynced && fds[i].bytes >= CKPT_FSYNCED_MIN_BYTES) ||
			       fds[i].bytes >= CKPT_LARGE_BYTES;
	return 0;
}

static const char *fd_path_in(const struct fd_written *fds, size_t n, int64_t fd)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i].fd == fd)
			return fds[i].path;
	return NULL;
}

/* Up to three checkpoint files named in the evidence. */
static void note_ck_file(struct fx_proc *p, const char *path)
{
	for (size_t i = 0; path && i < p->n_ck_files; i++)
		if (!strcmp(p->ck_files[i], path))
			return;
	if (path && p->n_ck_files < sizeof(p->ck_files) / sizeof(p->ck_files[0]))
		p->ck_files[p->n_ck_files++] = path;
}

/* What the rest of an interval (step 3: the thread's own work, not a
 * loader's or a checkpoint's) is charged to: host_sync after a
 * synchronize, launch_bound in a launch-bound run's gap, FIND_KINDS
 * (unexplained) after an implicit synchronize or a copy; and the stack
 * (with its CUDA leaf) that names it. */
struct rest_to {
	enum finding_kind kind;
	uint32_t stack_id;
	uint16_t leaf;
};

/* The idle interval [a, b) of thread tid: its causes, kept in p->idle
 * (callers go in time order) and summed into p. */
static int attribute(struct ctx *c, uint64_t a, uint64_t b, uint32_t tid,
		     const struct rest_to *rest_to)
{
	struct fx_proc *p = c->p;
	uint64_t len = b - a;
	size_t first = lower_bound(p->ev, p->n, a);
	uint64_t kind_ns[FIND_IDLE_KINDS] = { 0 };
	uint64_t claimed = 0, other_sc = 0;
	int saved = 0;
	c->n_segs = 0;

	/* 1. pageable copies, outermost only */
	uint64_t copy_end = 0;
	for (size_t i = first; i < p->n && p->ev[i].t0 < b; i++) {
		const struct fx_ev *e = &p->ev[i];
		if (e->tid != tid || e->type != FXE_COPY || !e->pageable || e->t1 <= copy_end)
			continue;
		uint64_t s = e->t0 > copy_end ? e->t0 : copy_end, end = e->t1 < b ? e->t1 : b;
		copy_end = e->t1;
		if (end <= s)
			continue;
		if (push_seg(c, s, end) || add_where(p, FIND_PAGEABLE_COPY, FX_WHERE_WHOLE,
						     e->stack_id, e->what, end - s))
			return -1;
		kind_ns[FIND_PAGEABLE_COPY] += end - s;
		p->e.pg_copies++;
		p->e.pg_sync += !e->async;
		p->e.pg_bytes += e->bytes;
	}
	size_t n_copy_segs = c->n_segs;

	/* 1b. NCCL calls: the span of each (findings_nccl.c), split into the
	 * exchange after the last rank entered, the wait the stragglers model
	 * charges to its straggler, and the rest of the wait and the spans
	 * that cannot be split (unexplained); what the thread did inside a
	 * span (the library's own system calls, its CPU) is the collective's */
	uint64_t nccl_other = 0;
	for (size_t i = first; i < p->n && p->ev[i].t0 < b; i++) {
		const struct fx_ev *e = &p->ev[i];
		if (e->tid != tid || e->type != FXE_NCCL)
			continue;
		uint64_t s = e->t0, end = e->t1 < b ? e->t1 : b;
		if (end <= s)
			continue;
		if (push_seg(c, s, end))
			return -1;
		const struct fx_nccl *x = &p->nccl[e->bytes];
		uint64_t span = end - s; /* the thread is in the call: no copy of it overlaps */
		p->e.nc_calls++;
		p->e.nc_bytes += x->bytes;
		if (!x->all_ready_ns) {
			p->e.nc_unsplit_calls++;
			p->e.nc_unsplit_ns += span;
			nccl_other += span;
			continue;
		}
		uint64_t ready = x->all_ready_ns;
		uint64_t done = x->done_ns > ready ? x->done_ns : ready;
		uint64_t strag_from = ready > x->straggler_ns ? ready - x->straggler_ns : 0;
		uint64_t exchange = overlap_ns(s, end, ready, x->done_ns ? done : UINT64_MAX);
		uint64_t late = x->done_ns ? overlap_ns(s, end, done, UINT64_MAX) : 0;
		uint64_t straggler = overlap_ns(s, end, strag_from, ready);
		uint64_t skew = span - exchange - late - straggler;
		kind_ns[FIND_NCCL_EXCHANGE] += exchange;
		kind_ns[FIND_STRAGGLER] += straggler;
		nccl_other += skew + late;
		p->e.nc_exchange_ns += exchange;
		p->e.nc_straggler_ns += straggler;
		p->e.nc_skew_ns += skew;
		p->e.nc_late_ns += late;
		if (exchange) {
			p->e.nc_xfer_calls++;
			p->e.nc_xfer_bytes += x->bytes;
			p->e.nc_xfer_ns += exchange;
		}
		if (add_where(p, FIND_NCCL_EXCHANGE, FX_WHERE_WHOLE, e->stack_id,
			      (uint16_t)(FX_LEAF_NCCL | e->what), exchange))
			return -1;
	}
	size_t n_nccl_segs = c->n_segs - n_copy_segs;
	/* no segment yet: c->segs is NULL, and NULL + 0 is undefined (found by
	 * fuzz_records under UBSan) */
	const struct seg *nccl_segs = n_nccl_segs ? c->segs + n_copy_segs : NULL;

	/* 2. system calls: which file descriptors are checkpoints */
	struct fd_written fds[FDS_PER_INTERVAL];
	size_t n_fds = 0;
	for (size_t i = first; i < p->n && p->ev[i].t0 < b; i++) {
		const struct fx_ev *e = &p->ev[i];
		if (e->tid != tid || e->type != FXE_SYSCALL || e->fd < 0 ||
		    inside_any(nccl_segs, n_nccl_segs, e->t0))
			continue;
		enum sc_class k = sc_class_of(e->what);
		if (k != SC_WRITE && k != SC_FSYNC)
			continue;
		size_t j = 0;
		while (j < n_fds && fds[j].fd != e->fd)
			j++;
		if (j == n_fds) {
			if (n_fds == FDS_PER_INTERVAL)
				continue;
			fds[n_fds++] = (struct fd_written){ .fd = e->fd,
							     .path = path_of(c, e->fd, e->t0) };
		}
		if (k == SC_WRITE)
			fds[j].bytes += e->bytes;
		else
			fds[j].fsynced = 1;
	}
	for (size_t i = first; i < p->n && p->ev[i].t0 < b; i++) {
		const struct fx_ev *e = &p->ev[i];
		if (e->tid != tid || e->type != FXE_SYSCALL ||
		    (n_nccl_segs && inside_any(c->segs + n_copy_segs, n_nccl_segs, e->t0)))
			continue; /* inside a collective: the library's */
		uint64_t end = e->t1 < b ? e->t1 : b;
		if (end <= e->t0)
			continue;
		uint64_t ns = end - e->t0 - covered(c->segs, n_copy_segs, e->t0, end);
		if (push_seg(c, e->t0, end))
			return -1;
		enum sc_class k = sc_class_of(e->what);
		enum finding_kind to = FIND_KINDS;
		if (k == SC_LOADER) {
			to = FIND_DATALOADER;
			if (e->what == 202) {
				p->e.dl_futex++;
				p->e.dl_futex_ns += ns;
			} else {
				p->e.dl_reads++;
				p->e.dl_read_bytes += e->bytes;
				p->e.dl_read_ns += ns;
			}
		} else if (k == SC_FSYNC || (k == SC_WRITE && fd_is_checkpoint(fds, n_fds, e->fd)) ||
			   (k == SC_OPEN && e->bytes && fd_is_checkpoint(fds, n_fds, (int64_t)e->bytes)) ||
			   (k == SC_CLOSE && fd_is_checkpoint(fds, n_fds, e->fd))) {
			to = FIND_SYNC_CHECKPOINT;
			saved = 1;
			if (k == SC_FSYNC) {
				p->e.ck_fsyncs++;
				p->e.ck_fsync_ns += ns;
			} else if (k == SC_WRITE) {
				const char *path = fd_path_in(fds, n_fds, e->fd);
				p->e.ck_writes++;
				p->e.ck_write_bytes += e->bytes;
				p->e.ck_write_ns += ns;
				if (checkpoint_name(path))
					p->e.ck_named++;
				note_ck_file(p, path);
			} else {
				p->e.ck_openclose_ns += ns;
			}
		}
		if (to == FIND_KINDS) {
			other_sc += ns;
		} else {
			kind_ns[to] += ns;
			if (add_where(p, to, FX_WHERE_WHOLE, e->stack_id, 0, ns))
				return -1;
		}
	}
	for (int k = 0; k < FIND_IDLE_KINDS; k++)
		claimed += kind_ns[k];
	claimed += other_sc + nccl_other;
	if (claimed > len)
		claimed = len; /* clock rounding between probes */

	/* 3. the rest, by the thread's CPU samples outside the claimed time */
	uint64_t rest = len - claimed;
	uint64_t n_dl = 0, n_ck = 0, n_other = 0;
	for (size_t i = first; i < p->n && p->ev[i].t0 < b; i++) {
		const struct fx_ev *e = &p->ev[i];
		if (e->tid != tid || e->type != FXE_SAMPLE || inside_any(c->segs, c->n_segs, e->t0))
			continue;
		enum finding_kind k;
		if (sample_class(c, e->stack_id, &k))
			return -1;
		n_dl += k == FIND_DATALOADER;
		n_ck += k == FIND_SYNC_CHECKPOINT;
		n_other += k == FIND_KINDS;
	}
	uint64_t n_all = n_dl + n_ck + n_other;
	uint64_t dl_ns = n_all ? (uint64_t)((double)rest * (double)n_dl / (double)n_all) : 0;
	uint64_t ck_ns = n_all ? (uint64_t)((double)rest * (double)n_ck / (double)n_all) : 0;
	uint64_t other_ns = rest - dl_ns - ck_ns;
	if (n_all) {
		for (size_t i = first; i < p->n && p->ev[i].t0 < b; i++) {
			const struct fx_ev *e = &p->ev[i];
			if (e->tid != tid || e->type != FXE_SAMPLE ||
			    inside_any(c->segs, c->n_segs, e->t0))
				continue;
			enum finding_kind k;
			if (sample_class(c, e->stack_id, &k))
				return -1;
			if (k != FIND_KINDS &&
			    add_where(p, k, FX_WHERE_TRIM, e->stack_id, 0, rest / n_all))
				return -1;
		}
	}
	kind_ns[FIND_DATALOADER] += dl_ns;
	kind_ns[FIND_SYNC_CHECKPOINT] += ck_ns;
	p->e.dl_cpu_ns += dl_ns;
	p->e.dl_samples += n_dl;
	p->e.ck_cpu_ns += ck_ns;
	saved |= ck_ns > 0;
	p->e.ck_saves += (uint64_t)saved;
	uint64_t unexplained = other_sc + nccl_other;
	if (rest_to->kind != FIND_KINDS && c->have_samples) {
		kind_ns[rest_to->kind] += other_ns;
		if (other_ns) {
			if (rest_to->kind == FIND_HOST_SYNC) {
				p->e.hs_gaps++;
				p->e.hs_ns += other_ns;
				if (other_ns > p->e.hs_max_ns)
					p->e.hs_max_ns = other_ns;
			} else {
				p->e.lb_gaps++;
				p->e.lb_gap_ns += other_ns;
			}
			if (add_where(p, rest_to->kind, FX_WHERE_WHOLE, rest_to->stack_id,
				      rest_to->leaf, other_ns))
				return -1;
		}
	} else {
		unexplained += other_ns;
		if (rest_to->kind == FIND_KINDS)
			p->e.implicit_ns += other_ns;
		else
			p->e.no_sample_ns += other_ns;
	}
	p->e.other_syscall_ns += other_sc;
	if (p->n_idle == p->cap_idle) {
		size_t cap = p->cap_idle ? p->cap_idle * 2 : 64;
		struct findings_idle_interval *grown = realloc(p->idle, cap * sizeof(*grown));
		if (!grown)
			return -1;
		p->idle = grown;
		p->cap_idle = cap;
	}
	struct findings_idle_interval *kept = &p->idle[p->n_idle++];
	kept->start_ns = a;
	kept->end_ns = b;
	memcpy(kept->kind_ns, kind_ns, sizeof(kept->kind_ns));
	kept->unexplained_ns = unexplained;
	for (int k = 0; k < FIND_IDLE_KINDS; k++)
		p->kind_ns[k] += kind_ns[k];
	p->unexplained_ns += unexplained;
	p->idle_ns += len;
	p->intervals++;
	return 0;
}

enum finding_kind findings_idle_cause(const struct findings_idle_interval *iv)
{
	enum finding_kind best = FIND_KINDS;
	uint64_t best_ns = 0;
	for (int k = 0; k < FIND_IDLE_KINDS; k++)
		if (iv->kind_ns[k] > best_ns) {
			best = (enum finding_kind)k;
			best_ns = iv->kind_ns[k];
		}
	return iv->unexplained_ns > best_ns ? FIND_KINDS : best;
}

/* ---- launch-bound runs ------------------------------------------------------------ */

#define LB_MIN_LAUNCHES 16

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Whether the synchronize sync waited for the work of stream `stream` on
 * `device` (-1: unknown, taken to match). */
static int sync_covers(const struct fx_ev *sync, uint64_t stream, int16_t device)
{
	int same_device = sync->device < 0 || device < 0 || sync->device == device;
	if (sync->what == FR_CUDA_DEVICE_SYNC)
		return same_device;
	if (sync->what == FR_CUDA_STREAM_SYNC)
		return same_device && sync->stream == stream;
	return 0; /* an event's stream is not known here */
}

/* The run of device work from marks[from] (the launch that ended an idle
 * interval) to marks[to] (the synchronize `opener`, which opens the next):
 * when the host set its pace (the rule at the top), the gaps the replayed
 * GPU idled in, attributed.  Not a launch-bound run: nothing. */
static int launch_run(struct ctx *c, const struct mark *marks, size_t from, size_t to,
		      const struct fx_ev *opener)
{
	struct fx_proc *p = c->p;
	size_t n = 0;
	for (size_t i = from; i < to; i++)
		n += !marks[i].open;
	if (opener->type != FXE_SYNC || n < LB_MIN_LAUNCHES)
		return 0;
	uint32_t *items = malloc(n * sizeof(*items));
	uint64_t *gaps = malloc(n * sizeof(*gaps));
	int rc = -1;
	if (!items || !gaps)
		goto out;
	n = 0;
	int mixed = 0;
	const struct fx_ev *outer = NULL;
	for (size_t i = from; i < to; i++) {
		if (marks[i].open)
			continue;
		const struct fx_ev *e = &p->ev[marks[i].ev];
		if (outer && e->tid == outer->tid && e->t0 < outer->t1)
			continue; /* a driver launch inside the runtime's: one launch */
		outer = e;
		if (e->type == FXE_WORK &&
		    fr_func_class_of(FR_PROBE_CUDA, e->what) == FR_FN_GRAPH_LAUNCH)
			mixed = 1; /* a graph is many kernels in one launch */
		if (n && (e->stream != p->ev[items[0]].stream || e->device != p->ev[items[0]].device))
			mixed = 1;
		items[n++] = marks[i].ev;
	}
	rc = 0;
	if (n < LB_MIN_LAUNCHES)
		goto out;
	const struct fx_ev *first = &p->ev[items[0]], *last = &p->ev[items[n - 1]];
	if (mixed || !sync_covers(opener, first->stream, first->device)) {
		p->e.lb_mixed++;
		goto out;
	}
	for (size_t i = 0; i + 1 < n; i++)
		gaps[i] = p->ev[items[i + 1]].t0 - p->ev[items[i]].t0;
	qsort(gaps, n - 1, sizeof(*gaps), u64_cmp);
	uint64_t wait = opener->t1 - opener->t0, median_gap = gaps[(n - 1) / 2];
	if (wait >= median_gap || opener->t1 <= last->t0)
		goto out; /* work was still queued: the GPU, not the host, set the pace */
	uint64_t bound = opener->t1 - last->t0, end = 0, launch_ns = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		const struct fx_ev *e = &p->ev[items[i]];
		launch_ns += e->t1 - e->t0;
		uint64_t start = e->t0 > end ? e->t0 : end;
		end = start + bound;
		if (i + 1 == n)
			break;
		const struct fx_ev *next = &p->ev[items[i + 1]];
		struct rest_to rest = { .kind = FIND_LAUNCH_BOUND, .stack_id = next->stack_id,
					.leaf = next->what };
		if (next->t0 > end)
			rc = attribute(c, end, next->t0, next->tid, &rest);
	}
	p->e.lb_steps++;
	p->e.lb_launches += n;
	p->e.lb_launch_ns += launch_ns;
	p->e.lb_span_ns += last->t0 - first->t0;
	p->e.lb_wait_ns += wait;
	p->e.lb_bound_ns += bound;
out:
	free(items);
	free(gaps);
	return rc;
}

/* ---- streams and devices ---------------------------------------------------------- */

/* The events are sorted by entry (fx_sort_events).  A driver call
 * inside a runtime call of the same thread is the same work: only the
 * outer one counts, so a handle the runtime hands the driver in another
 * form cannot make a second stream. */
int fx_streams_of(struct fx_proc *p)
{
	struct hmap streams, devices, outer_end; /* outer_end: tid -> the outer call's return */
	hmap_init(&streams);
	hmap_init(&devices);
	hmap_init(&outer_end);
	int rc = 0;
	for (size_t i = 0; i < p->n && !rc; i++) {
		const struct fx_ev *e = &p->ev[i];
		if (e->type > FXE_WORK)
			continue; /* not a CUDA call */
		uint64_t *end = hmap_slot(&outer_end, e->tid, 0, NULL);
		if (!end || !hmap_slot(&devices, (uint64_t)(int64_t)e->device, 0, NULL)) {
			rc = -1;
			break;
		}
		if (e->t0 < *end)
			continue; /* nested */
		*end = e->t1;
		if ((e->type == FXE_WORK || (e->type == FXE_COPY && e->async)) &&
		    !hmap_slot(&streams, (uint64_t)(int64_t)e->device, e->stream, NULL))
			rc = -1;
	}
	p->streams = (uint32_t)streams.count;
	p->devices = (uint32_t)devices.count;
	hmap_free(&streams);
	hmap_free(&devices);
	hmap_free(&outer_end);
	return rc;
}

/* ---- the process ---------------------------------------------------------------- */

static int opens_at(const struct fx_ev *e, uint64_t *t)
{
	if (e->type == FXE_SYNC || e->type == FXE_IMPLICIT || (e->type == FXE_COPY && !e->async) ||
	    (e->type == FXE_NCCL && !e->async)) {
		*t = e->t1;
		return 1;
	}
	return 0;
}

static int closes_at(const struct fx_ev *e, uint64_t *t)
{
	if (e->type == FXE_WORK || (e->type == FXE_COPY && e->async && !e->pageable)) {
		*t = e->t0;
		return 1;
	}
	return 0;
}

/* A process that queued no device work the trace shows (no launch, no
 * pinned async copy: the cuda probe was not attached, or its compute is
 * not the GPU's, as in samples/nccl_train): what its GPU did between
 * collectives is not known, so only the spans of its NCCL calls are idle
 * intervals, each its own (a span that overlaps an earlier one of another
 * thread starts where that one ended, its cut part unexplained: two
 * threads in collectives at once are one wait of the GPU). */
static int nccl_spans(struct fx_proc *p, struct trace_set *ts, struct symbolizer *sym,
		      int have_samples, char *const *paths, size_t *fdpath, size_t n_fdpath)
{
	struct ctx c = { .p = p, .ts = ts, .sym = sym, .have_samples = have_samples,
			 .f = trace_set_file(ts, p->file), .paths = paths, .fdpath = fdpath,
			 .n_fdpath = n_fdpath };
	hmap_init(&c.sample_class);
	uint64_t done = 0;
	int rc = 0;
	for (size_t i = 0; i < p->n && !rc; i++) {
		const struct fx_ev *e = &p->ev[i];
		if (e->type != FXE_NCCL)
			continue;
		uint64_t a = e->t0 > done ? e->t0 : done;
		if (e->t1 <= a)
			continue;
		struct rest_to to = { .kind = FIND_KINDS, .stack_id = e->stack_id,
				      .leaf = (uint16_t)(FX_LEAF_NCCL | e->what) };
		rc = attribute(&c, a, e->t1, e->tid, &to);
		done = e->t1; /* > a >= done */
	}
	free(c.frames);
	free(c.segs);
	hmap_free(&c.sample_class);
	return rc;
}

void fx_sort_events(struct fx_proc *p)
{
	if (p->n)
		qsort(p->ev, p->n, sizeof(*p->ev), ev_cmp);
	fx_nccl_prepare(p);
}

int fx_idle_attribute(struct fx_proc *p, struct trace_set *ts, struct symbolizer *sym,
		      int have_samples, char *const *paths)
{
	if (!p->n)
		return 0;
	size_t n_fdpath = 0, *fdpath = NULL;
	for (size_t i = 0; i < p->n; i++)
		n_fdpath += p->ev[i].type == FXE_FDPATH;
	if (n_fdpath && !(fdpath = malloc(n_fdpath * sizeof(*fdpath))))
		return -1;
	n_fdpath = 0;
	for (size_t i = 0; fdpath && i < p->n; i++)
		if (p->ev[i].type == FXE_FDPATH)
			fdpath[n_fdpath++] = i;
	struct mark *marks = NULL;
	size_t n_marks = 0, n_closes = 0, n_spans = 0;
	for (size_t i = 0; i < p->n; i++) {
		uint64_t t;
		if (opens_at(&p->ev[i], &t))
			n_marks++;
		else if (closes_at(&p->ev[i], &t))
			n_marks++, n_closes++;
		n_spans += p->ev[i].type == FXE_NCCL;
	}
	if (!n_closes && n_spans) {
		/* no device work of its own in the trace: its collectives */
		int rc = nccl_spans(p, ts, sym, have_samples, paths, fdpath, n_fdpath);
		free(fdpath);
		return rc;
	}
	if (!n_marks) {
		free(fdpath);
		return 0;
	}
	marks = malloc(n_marks * sizeof(*marks));
	if (!marks) {
		free(fdpath);
		return -1;
	}
	n_marks = 0;
	for (size_t i = 0; i < p->n; i++) {
		uint64_t t;
		if (opens_at(&p->ev[i], &t))
			marks[n_marks++] = (struct mark){ t, (uint32_t)i, 1 };
		else if (closes_at(&p->ev[i], &t))
			marks[n_marks++] = (struct mark){ t, (uint32_t)i, 0 };
	}
	qsort(marks, n_marks, sizeof(*marks), mark_cmp);

	struct ctx c = { .p = p, .ts = ts, .sym = sym, .have_samples = have_samples,
			 .f = trace_set_file(ts, p->file), .paths = paths, .fdpath = fdpath,
			 .n_fdpath = n_fdpath };
	hmap_init(&c.sample_class);
	int rc = 0, idle = 0;
	struct interval iv = { 0 };
	size_t run_from = SIZE_MAX; /* the mark that ended the last interval */
	for (size_t i = 0; i < n_marks && !rc; i++) {
		if (marks[i].open) {
			if (!idle) {
				/* the run of work since the last interval, before this one */
				if (run_from != SIZE_MAX)
					rc = launch_run(&c, marks, run_from, i, &p->ev[marks[i].ev]);
				idle = 1;
				iv.a = marks[i].t;
				iv.opener = marks[i].ev;
			}
		} else if (idle) {
			idle = 0;
			iv.b = marks[i].t;
			run_from = i;
			const struct fx_ev *opener = &p->ev[iv.opener];
			/* after a blocking collective, as after a synchronize, the
			 * host's own work before the next launch is host_sync */
			int nccl = opener->type == FXE_NCCL;
			struct rest_to to = {
				.kind = opener->type == FXE_SYNC || nccl ? FIND_HOST_SYNC : FIND_KINDS,
				.stack_id = opener->stack_id,
				.leaf = nccl ? (uint16_t)(FX_LEAF_NCCL | opener->what) : opener->what,
			};
			if (iv.b > iv.a)
				rc = attribute(&c, iv.a, iv.b, opener->tid, &to);
		}
	}
	free(marks);
	free(c.frames);
	free(c.segs);
	free(fdpath);
	hmap_free(&c.sample_class);
	return rc;
}

/* ---- steps ---------------------------------------------------------------------- */

/* The smallest period p of the sequence of (function, stack) of the calls
 * that open intervals under which at least 90% of it repeats, seen at
 * least twice, and in *repeats how many times it repeats; 0 when none (up
 * to 64 calls per step). */
static size_t sync_period(const uint64_t *seq, size_t n, size_t *repeats)
{
	for (size_t p = 1; p <= 64 && 2 * p <= n; p++) {
		size_t match = 0;
		for (size_t i = 0; i + p < n; i++)
			match += seq[i] == seq[i + p];
		if ((double)match >= 0.9 * (double)(n - p)) {
			/* every repeat of the pattern after the first matches p
			 * calls: a stray call (the last cudaFree) adds no step */
			*repeats = (match + p / 2) / p + 1;
			return p;
		}
	}
	return 0;
}

void fx_steps_of(struct fx_proc *p)
{
	if (p->step_marks) {
		p->steps = p->step_marks;
		p->steps_from = "marker";
		return;
	}
	p->steps = 1;
	p->steps_from = "none";
	size_t n = 0;
	for (size_t i = 0; i < p->n; i++) {
		uint64_t t;
		n += opens_at(&p->ev[i], &t);
	}
	uint64_t *seq = n ? malloc(n * sizeof(*seq)) : NULL;
	if (!seq)
		return;
	n = 0;
	for (size_t i = 0; i < p->n; i++) {
		uint64_t t;
		if (opens_at(&p->ev[i], &t))
			seq[n++] = (uint64_t)p->ev[i].what << 32 | p->ev[i].stack_id;
	}
	size_t repeats = 1;
	size_t period = sync_period(seq, n, &repeats);
	free(seq);
	if (period) {
		p->steps = repeats;
		p->steps_from = "sync_period";
	}
}
