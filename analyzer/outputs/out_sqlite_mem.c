/* The rows of allocations and memory_inuse, from the GPU memory model's
 * ledger (out_sqlite_mem_change, called by model_mem for every change, at
 * the file's clock offset of the moment like the streamed events): one
 * ledger for every output, never a copy of its state here.
 *
 * Not for the CUDA calls themselves (out_sqlite_events.c), nor for the
 * per-series totals and top stacks (out_sqlite_put_mem_series and
 * out_sqlite_put_mem_stack in out_sqlite_models.c). */
#include "out_sqlite_impl.h"
#include "model_mem.h"

/* mem_kind of an allocation, and of the series it counts in */
static const char *alloc_kind(const struct mem_change *c)
{
	return c->space == MEM_SPACE_PINNED_HOST ? "host_pinned" : c->managed ? "managed" : "device";
}

static const char *series_kind(const struct mem_change *c)
{
	return c->space == MEM_SPACE_PINNED_HOST ? "host_pinned" : "device";
}

/* as memory_series: NULL for pinned host memory and an unknown device */
static void bdevice(sqlite3_stmt *st, int col, const struct mem_change *c)
{
	if (c->space == MEM_SPACE_PINNED_HOST || c->device < 0)
		bnull(st, col);
	else
		bi(st, col, c->device);
}

static int put_inuse(struct out_sqlite *o, const struct mem_change *c, int64_t delta)
{
	sqlite3_stmt *st = o->st[ST_INUSE];
	bi(st, 1, c->file);
	bi(st, 2, c->pid);
	bdevice(st, 3, c);
	bt(st, 4, series_kind(c));
	bi(st, 5, sq_time_ns(o, c->file, c->t_ns));
	bu(st, 6, c->inuse_bytes);
	bi(st, 7, delta);
	return sq_put(o, st);
}

/* An allocation row: live until c->t_ns (freed) or to the end (never). */
static int put_alloc(struct out_sqlite *o, const struct mem_change *c)
{
	sqlite3_stmt *st = o->st[ST_ALLOC];
	bi(st, 1, c->file);
	bi(st, 2, c->pid);
	bi(st, 3, c->alloc_tid);
	bdevice(st, 4, c);
	bt(st, 5, alloc_kind(c));
	bi(st, 6, c->func);
	bu(st, 7, c->ptr);
	bu(st, 8, c->bytes);
	bi(st, 9, sq_time_ns(o, c->file, c->alloc_ns));
	if (c->kind == MEM_FREED) {
		bi(st, 10, sq_time_ns(o, c->file, c->t_ns));
		if (c->end_tid)
			bi(st, 11, c->end_tid);
	}
	bi(st, 12, c->kind == MEM_FAILED);
	bi(st, 13, c->kind == MEM_FAILED ? c->error : 0);
	bstack(st, 14, c->stack_id);
	return sq_put(o, st);
}

int out_sqlite_mem_change(void *ctx, const struct mem_change *c)
{
	struct out_sqlite *o = ctx;
	switch (c->kind) {
	case MEM_ALLOCATED:
		return put_inuse(o, c, (int64_t)c->bytes);
	case MEM_FREED:
		return put_alloc(o, c) || put_inuse(o, c, -(int64_t)c->bytes) ? -1 : 0;
	case MEM_FAILED:
	case MEM_LIVE_AT_END:
		return put_alloc(o, c);
	}
	return 0;
}
