/* One GPU-idle interval of a process (findings_idle.c finds them) divided
 * among its causes.  Not the findings themselves (findings_kinds.c).
 *
 * The interval belongs to the thread whose call opened it
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
 *      descriptor and its close, a rename in an interval that wrote a
 *      checkpoint (the save's temporary file moved into place), and
 *      every fsync: sync_checkpoint, and so is the time between the
 *      first and the last of those calls that no call covers (the save
 *      between its writes), but for the share of it that the thread's
 *      samples there place in other code (the
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
 *      (a blocking NCCL call counts as a synchronize: host_sync, and so
 *      does a synchronous copy to the host of at most 64 KiB: a value
 *      read back, as .item() does).
 *      Without samples in the interval the rest goes to dataloader or
 *      sync_checkpoint when step 2 gave the interval's reads or saving
 *      calls to one of them (to the one with more: the thread was in
 *      that work, descheduled or too briefly between calls to be
 *      sampled), else to host_sync (or unexplained) alike; without any
 *      CPU samples in the recording it is unexplained. */
#include "findings_idle.h"
#include "symbolize.h"
#include "trace_set.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* The first of n elements of elem bytes, sorted by the time each begins
 * with (fx_ev.t0, fx_sample.t), at or after t. */
static size_t first_at(const void *base, size_t n, size_t elem, uint64_t t)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t at;
		memcpy(&at, (const char *)base + mid * elem, sizeof(at));
		if (at < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

_Static_assert(offsetof(struct fx_ev, t0) == 0 && offsetof(struct fx_sample, t) == 0,
	       "first_at reads each element's first field");

#define CKPT_FSYNCED_MIN_BYTES (1ull << 20)
#define CKPT_LARGE_BYTES (16ull << 20)
#define FDS_PER_INTERVAL 32

enum sc_class { SC_OTHER, SC_LOADER, SC_WRITE, SC_FSYNC, SC_OPEN, SC_CLOSE, SC_RENAME };

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
	case 82: case 264: case 316:
		return SC_RENAME; /* rename renameat renameat2: a save's last step */
	}
	return SC_OTHER;
}

/* ---- attribution of one interval ---------------------------------------------- */

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

static int any_checkpoint(const struct fd_written *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fd_is_checkpoint(fds, n, fds[i].fd))
			return 1;
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

/* One interval's division as it is made: the phases below fill it in
 * order, each reading what the ones before claimed. */
struct split {
	uint64_t a, b;            /* the interval */
	uint32_t tid;             /* the thread whose call opened it */
	size_t first;             /* p's first event with t0 >= a */
	size_t first_sample;      /* p's first sample at or after a */
	uint64_t kind_ns[FIND_IDLE_KINDS];
	uint64_t other_sc;        /* system calls of no rule: unexplained */
	uint64_t nccl_other;      /* collectives' waits no one is charged for */
	size_t n_copy_segs;       /* c->segs[0..n_copy_segs): pageable copies */
	size_t n_nccl_segs;       /* then the NCCL spans */
	int saved;                /* a checkpoint was written in it */
	uint64_t ck_a, ck_b;      /* its first checkpoint call's entry, its last's
				     return (0, 0: none) */
	uint64_t dl_read_ns;      /* of kind_ns[FIND_DATALOADER]: reads, not futex waits */
};

static int push_wait(struct fx_proc *p, const struct fx_ev *e, uint64_t end)
{
	if (p->n_dl_waits == p->cap_dl_waits) {
		size_t cap = p->cap_dl_waits ? 2 * p->cap_dl_waits : 32;
		struct fx_wait *g = realloc(p->dl_waits, cap * sizeof(*g));
		if (!g)
			return -1;
		p->dl_waits = g;
		p->cap_dl_waits = cap;
	}
	p->dl_waits[p->n_dl_waits++] = (struct fx_wait){ e->t0, end, e->tid, e->what };
	return 0;
}

/* 1. pageable copies, outermost only */
static int split_copies(struct ctx *c, struct split *sp)
{
	struct fx_proc *p = c->p;
	uint64_t b = sp->b, copy_end = 0;
	for (size_t i = sp->first; i < p->n && p->ev[i].t0 < b; i++) {
		const struct fx_ev *e = &p->ev[i];
		if (e->tid != sp->tid || e->type != FXE_COPY || !e->pageable || e->t1 <= copy_end)
			continue;
		uint64_t s = e->t0 > copy_end ? e->t0 : copy_end, end = e->t1 < b ? e->t1 : b;
		copy_end = e->t1;
		if (end <= s)
			continue;
		if (push_seg(c, s, end) || add_where(p, FIND_PAGEABLE_COPY, FX_WHERE_WHOLE,
						     e->stack_id, e->what, end - s))
			return -1;
		sp->kind_ns[FIND_PAGEABLE_COPY] += end - s;
		p->e.pg_copies++;
		p->e.pg_sync += !e->async;
		p->e.pg_bytes += e->bytes;
	}
	sp->n_copy_segs = c->n_segs;
	return 0;
}

/* 1b. NCCL calls: the span of each (findings_nccl.c), split into the
 * exchange after the last rank entered, the wait the stragglers model
 * charges to its straggler, and the rest of the wait and the spans that
 * cannot be split (unexplained); what the thread did inside a span (the
 * library's own system calls, its CPU) is the collective's */
static int split_nccl(struct ctx *c, struct split *sp)
{
	struct fx_proc *p = c->p;
	uint64_t b = sp->b;
	for (size_t i = sp->first; i < p->n && p->ev[i].t0 < b; i++) {
		const struct fx_ev *e = &p->ev[i];
		if (e->tid != sp->tid || e->type != FXE_NCCL)
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
			sp->nccl_other += span;
			continue;
		}
		uint64_t ready = x->all_ready_ns;
		uint64_t done = x->done_ns > ready ? x->done_ns : ready;
		uint64_t strag_from = ready > x->straggler_ns ? ready - x->straggler_ns : 0;
		uint64_t exchange = overlap_ns(s, end, ready, x->done_ns ? done : UINT64_MAX);
		uint64_t late = x->done_ns ? overlap_ns(s, end, done, UINT64_MAX) : 0;
		uint64_t straggler = overlap_ns(s, end, strag_from, ready);
		uint64_t skew = span - exchange - late - straggler;
		sp->kind_ns[FIND_NCCL_EXCHANGE] += exchange;
		sp->kind_ns[FIND_STRAGGLER] += straggler;
		sp->nccl_other += skew + late;
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
	sp->n_nccl_segs = c->n_segs - sp->n_copy_segs;
	return 0;
}

/* 2. system calls: which file descriptors are checkpoints, then each
 * call's time to its rule */
static int split_syscalls(struct ctx *c, struct split *sp)
{
	struct fx_proc *p = c->p;
	uint64_t b = sp->b;
	size_t n_copy_segs = sp->n_copy_segs, n_nccl_segs = sp->n_nccl_segs;
	/* no segment yet: c->segs is NULL, and NULL + 0 is undefined (found by
	 * fuzz_records under UBSan) */
	const struct seg *nccl_segs = n_nccl_segs ? c->segs + n_copy_segs : NULL;
	struct fd_written fds[FDS_PER_INTERVAL];
	size_t n_fds = 0;
	for (size_t i = sp->first; i < p->n && p->ev[i].t0 < b; i++) {
		const struct fx_ev *e = &p->ev[i];
		if (e->tid != sp->tid || e->type != FXE_SYSCALL || e->fd < 0 ||
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
	for (size_t i = sp->first; i < p->n && p->ev[i].t0 < b; i++) {
		const struct fx_ev *e = &p->ev[i];
		if (e->tid != sp->tid || e->type != FXE_SYSCALL ||
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
			if (ns >= FX_WAIT_MIN_NS && push_wait(p, e, end))
				return -1;
			if (e->what == 202) {
				p->e.dl_futex++;
				p->e.dl_futex_ns += ns;
			} else {
				p->e.dl_reads++;
				p->e.dl_read_bytes += e->bytes;
				p->e.dl_read_ns += ns;
				sp->dl_read_ns += ns;
			}
		} else if (k == SC_FSYNC || (k == SC_WRITE && fd_is_checkpoint(fds, n_fds, e->fd)) ||
			   (k == SC_OPEN && e->bytes && fd_is_checkpoint(fds, n_fds, (int64_t)e->bytes)) ||
			   (k == SC_CLOSE && fd_is_checkpoint(fds, n_fds, e->fd)) ||
			   (k == SC_RENAME && any_checkpoint(fds, n_fds))) {
			to = FIND_SYNC_CHECKPOINT;
			sp->saved = 1;
			if (!sp->ck_b || e->t0 < sp->ck_a)
				sp->ck_a = e->t0;
			if (end > sp->ck_b)
				sp->ck_b = end;
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
			sp->other_sc += ns;
		} else {
			sp->kind_ns[to] += ns;
			if (add_where(p, to, FX_WHERE_WHOLE, e->stack_id, 0, ns))
				return -1;
		}
	}
	return 0;
}

/* 3. the rest, by the thread's CPU samples outside the claimed time;
 * *unexplained: what goes to no kind, this phase's and the ones before */
static int split_rest(struct ctx *c, struct split *sp, const struct rest_to *rest_to,
		      uint64_t *unexplained_out)
{
	struct fx_proc *p = c->p;
	uint64_t len = sp->b - sp->a, b = sp->b, claimed = 0;
	for (int k = 0; k < FIND_IDLE_KINDS; k++)
		claimed += sp->kind_ns[k];
	claimed += sp->other_sc + sp->nccl_other;
	if (claimed > len)
		claimed = len; /* clock rounding between probes */
	uint64_t rest = len - claimed;
	/* the save's own span, its first checkpoint call to its last: the time
	 * no call covers (the thread between writes, on CPU or descheduled) is
	 * the save's, but for the share its samples there put elsewhere; those
	 * samples have spoken and are not counted again below */
	uint64_t between = 0;
	if (sp->ck_b > sp->ck_a) {
		uint64_t in = covered(c->segs, c->n_segs, sp->ck_a, sp->ck_b);
		uint64_t gap = sp->ck_b - sp->ck_a > in ? sp->ck_b - sp->ck_a - in : 0;
		uint64_t n_span = 0, n_span_other = 0;
		for (size_t i = sp->first_sample; i < p->n_samples && p->samples[i].t < b; i++) {
			const struct fx_sample *e = &p->samples[i];
			if (e->tid != sp->tid || e->t < sp->ck_a || e->t >= sp->ck_b ||
			    inside_any(c->segs, c->n_segs, e->t))
				continue;
			enum finding_kind k;
			if (sample_class(c, e->stack_id, &k))
				return -1;
			n_span++;
			n_span_other += k != FIND_SYNC_CHECKPOINT;
		}
		between = n_span ? (uint64_t)((double)gap * (double)(n_span - n_span_other) /
					      (double)n_span) : gap;
		if (between > rest)
			between = rest;
		rest -= between;
		sp->kind_ns[FIND_SYNC_CHECKPOINT] += between;
		p->e.ck_between_ns += between;
	}
	uint64_t n_dl = 0, n_ck = 0, n_other = 0;
	for (size_t i = sp->first_sample; i < p->n_samples && p->samples[i].t < b; i++) {
		const struct fx_sample *e = &p->samples[i];
		if (e->tid != sp->tid || inside_any(c->segs, c->n_segs, e->t) ||
		    (sp->ck_b > sp->ck_a && e->t >= sp->ck_a && e->t < sp->ck_b))
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
	if (!n_all && c->have_samples && rest &&
	    (sp->dl_read_ns || sp->kind_ns[FIND_SYNC_CHECKPOINT])) {
		/* not one sample, yet the thread read input or saved: it was in
		 * that work the whole time (descheduled on a busy host, or
		 * between calls too briefly to be sampled), not the host's own;
		 * not after a futex wait alone: the thread waited for another,
		 * and what it did after the wake is its own */
		if (sp->dl_read_ns >= sp->kind_ns[FIND_SYNC_CHECKPOINT]) {
			sp->kind_ns[FIND_DATALOADER] += rest;
			p->e.dl_unsampled_ns += rest;
		} else {
			sp->kind_ns[FIND_SYNC_CHECKPOINT] += rest;
			p->e.ck_between_ns += rest;
		}
		rest = 0;
	}
	uint64_t other_ns = rest - dl_ns - ck_ns;
	if (n_all) {
		for (size_t i = sp->first_sample; i < p->n_samples && p->samples[i].t < b; i++) {
			const struct fx_sample *e = &p->samples[i];
			if (e->tid != sp->tid || inside_any(c->segs, c->n_segs, e->t) ||
			    (sp->ck_b > sp->ck_a && e->t >= sp->ck_a && e->t < sp->ck_b))
				continue;
			enum finding_kind k;
			if (sample_class(c, e->stack_id, &k))
				return -1;
			if (k != FIND_KINDS &&
			    add_where(p, k, FX_WHERE_TRIM, e->stack_id, 0, rest / n_all))
				return -1;
		}
	}
	sp->kind_ns[FIND_DATALOADER] += dl_ns;
	sp->kind_ns[FIND_SYNC_CHECKPOINT] += ck_ns;
	p->e.dl_cpu_ns += dl_ns;
	p->e.dl_samples += n_dl;
	p->e.ck_cpu_ns += ck_ns;
	sp->saved |= ck_ns > 0;
	p->e.ck_saves += (uint64_t)sp->saved;
	uint64_t unexplained = sp->other_sc + sp->nccl_other;
	if (rest_to->kind != FIND_KINDS && c->have_samples) {
		sp->kind_ns[rest_to->kind] += other_ns;
		if (other_ns) {
			if (rest_to->kind == FIND_HOST_SYNC) {
				p->e.hs_gaps++;
				p->e.hs_ns += other_ns;
				if (other_ns > p->e.hs_max_ns)
					p->e.hs_max_ns = other_ns;
				if (rest_to->read_back) {
					p->e.hs_copy_gaps++;
					p->e.hs_copy_ns += other_ns;
					p->e.hs_copy_bytes += rest_to->copy_bytes;
				}
			} else {
				p->e.lb_gaps++;
				p->e.lb_gap_ns += other_ns;
				p->e.lb_measured += p->gpu != NULL;
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
	p->e.other_syscall_ns += sp->other_sc;
	*unexplained_out = unexplained;
	return 0;
}

int fx_attribute(struct ctx *c, uint64_t a, uint64_t b, uint32_t tid,
		 const struct rest_to *rest_to)
{
	struct fx_proc *p = c->p;
	struct split sp = { .a = a, .b = b, .tid = tid,
			    .first = first_at(p->ev, p->n, sizeof(*p->ev), a),
			    .first_sample = first_at(p->samples, p->n_samples, sizeof(*p->samples), a) };
	uint64_t unexplained;
	c->n_segs = 0;
	if (split_copies(c, &sp) || split_nccl(c, &sp) || split_syscalls(c, &sp) ||
	    split_rest(c, &sp, rest_to, &unexplained))
		return -1;
	if (p->n_idle == p->cap_idle) {
		size_t cap = p->cap_idle ? p->cap_idle * 2 : 64;
		struct findings_idle_interval *grown = realloc(p->idle, cap * sizeof(*grown));
		if (!grown)
			return -1;
		p->idle = grown;
		p->cap_idle = cap;
	}
	/* Kernel records say when the GPU really ran: what of [a, b) it ran
	 * is not idle, and every cause's share shrinks with the interval (the
	 * host signals that divide it do not say which part the kernel
	 * overlapped).  The stand-in's fake GPU runs work as queued, so there
	 * busy is 0 unless several streams overlap. */
	uint64_t busy = p->gpu ? gpu_busy_within(p->gpu, a, b) : 0;
	if (busy) {
		double keep = (double)(b - a - busy) / (double)(b - a);
		uint64_t left = b - a - busy, sum = 0;
		uint64_t hs = sp.kind_ns[FIND_HOST_SYNC], lb = sp.kind_ns[FIND_LAUNCH_BOUND];
		for (int k = 0; k < FIND_IDLE_KINDS; k++)
			sum += sp.kind_ns[k] = (uint64_t)((double)sp.kind_ns[k] * keep);
		/* the evidence's gap sums (split_rest) shrink as their kinds did */
		if (rest_to->kind == FIND_HOST_SYNC && c->have_samples)
			p->e.hs_ns -= hs - sp.kind_ns[FIND_HOST_SYNC];
		if (rest_to->kind == FIND_LAUNCH_BOUND && c->have_samples)
			p->e.lb_gap_ns -= lb - sp.kind_ns[FIND_LAUNCH_BOUND];
		unexplained = left > sum ? left - sum : 0;
		p->busy_in_idle_ns += busy;
	}
	struct findings_idle_interval *kept = &p->idle[p->n_idle++];
	kept->start_ns = a;
	kept->end_ns = b;
	kept->busy_ns = busy;
	memcpy(kept->kind_ns, sp.kind_ns, sizeof(kept->kind_ns));
	kept->unexplained_ns = unexplained;
	for (int k = 0; k < FIND_IDLE_KINDS; k++)
		p->kind_ns[k] += sp.kind_ns[k];
	p->unexplained_ns += unexplained;
	p->idle_ns += b - a - busy;
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
