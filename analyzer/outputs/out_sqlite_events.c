/* The SQLite output's event tables: a subscriber of the event stream model
 * (model_events.h), it turns each event into one row of its table
 * (cpu_samples, syscalls, process_events, cuda_calls, nccl_calls,
 * step_marks, rdma_ctrl_calls, rdma_posts, rdma_completions) on the
 * common clock (final before the first event: align.h), and counts events
 * per thread for the threads table.
 *
 * Event types none of these tables covers get a table of their own from
 * their family's descriptor (out_sqlite_generic.c).
 *
 * Not for allocations and memory_inuse (out_sqlite_mem.c: the GPU memory
 * model's ledger, not the raw CUDA events), nor for anything that needs
 * more than one event (models). */
#include "out_sqlite_impl.h"
#include "model_events.h"
#include "out_common.h"
#include "trace_set.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void bcommon(sqlite3_stmt *st, const struct ev_item *e)
{
	bi(st, 1, e->file);
	bi(st, 2, e->pid);
	bi(st, 3, e->tid);
	bi(st, 4, e->start_ns);
}

static int feed_cuda(struct out_sqlite *o, const struct ev_item *e)
{
	struct fr_ev_cuda ev;
	memcpy(&ev, e->rec, sizeof(ev));
	sqlite3_stmt *st = o->st[ST_CUDA];
	bcommon(st, e);
	bu(st, 5, ev.duration_ns);
	bi(st, 6, ev.func);
	bi(st, 7, ev.result);
	bi(st, 8, ev.device);
	bu(st, 9, ev.ptr);
	bu(st, 10, ev.src);
	bu(st, 11, ev.bytes);
	bu(st, 12, ev.stream);
	bi(st, 13, ev.kind);
	bi(st, 14, ev.flags);
	bstack(st, 15, ev.stack_id);
	return sq_put(o, st); /* allocations and memory_inuse: out_sqlite_mem_change */
}

static int feed_nccl(struct out_sqlite *o, const struct ev_item *e)
{
	struct fr_ev_nccl ev;
	memcpy(&ev, e->rec, sizeof(ev));
	sqlite3_stmt *st = o->st[ST_NCCL];
	bcommon(st, e);
	bu(st, 5, ev.duration_ns);
	bi(st, 6, ev.func);
	bi(st, 7, ev.result);
	bu(st, 8, ev.comm);
	bu(st, 9, ev.count);
	bi(st, 10, ev.datatype);
	bi(st, 11, ev.op);
	if (ev.peer >= 0)
		bi(st, 12, ev.peer);
	if (ev.rank >= 0)
		bi(st, 13, ev.rank);
	if (ev.nranks >= 0)
		bi(st, 14, ev.nranks);
	bu(st, 15, ev.stream);
	bu(st, 16, ev.uid_hash);
	bstack(st, 17, ev.stack_id);
	return sq_put(o, st);
}

static int feed_rdma_ctrl(struct out_sqlite *o, const struct ev_item *e)
{
	struct fr_ev_rdma_ctrl ev;
	memcpy(&ev, e->rec, sizeof(ev));
	sqlite3_stmt *st = o->st[ST_RDMA_CTRL];
	bcommon(st, e);
	bu(st, 5, ev.duration_ns);
	bi(st, 6, ev.func);
	bi(st, 7, ev.result);
	bu(st, 8, ev.ptr);
	bu(st, 9, ev.obj);
	bi(st, 10, ev.qp_num);
	bi(st, 11, ev.dest_qp_num);
	bi(st, 12, ev.qp_state);
	bi(st, 13, ev.attr_mask);
	bi(st, 14, ev.path_mtu);
	bi(st, 15, ev.dlid);
	bi(st, 16, ev.port_num);
	char gid[33];
	for (int i = 0; i < 16; i++)
		snprintf(gid + 2 * i, 3, "%02x", ev.gid[i]);
	bt(st, 17, gid);
	bu(st, 18, ev.addr);
	bu(st, 19, ev.length);
	bi(st, 20, ev.lkey);
	bi(st, 21, ev.rkey);
	bi(st, 22, ev.access);
	bstack(st, 23, ev.stack_id);
	return sq_put(o, st);
}

static int feed_rdma_post(struct out_sqlite *o, const struct ev_item *e)
{
	struct fr_ev_rdma_post ev;
	memcpy(&ev, e->rec, sizeof(ev));
	sqlite3_stmt *st = o->st[ST_RDMA_POST];
	bcommon(st, e);
	bi(st, 5, ev.qp_num);
	bu(st, 6, ev.wr_id);
	bi(st, 7, ev.opcode);
	bu(st, 8, ev.bytes);
	bi(st, 9, ev.num_sge);
	bi(st, 10, !!(ev.flags & FR_RDMA_POST_RECV));
	bi(st, 11, !!(ev.flags & (FR_RDMA_POST_SIGNALED | FR_RDMA_POST_RECV)));
	bi(st, 12, !!(ev.flags & FR_RDMA_POST_FAILED));
	bi(st, 13, !!(ev.flags & FR_RDMA_POST_TRUNCATED));
	bi(st, 14, ev.wr_index);
	bi(st, 15, ev.result);
	return sq_put(o, st);
}

static int feed_rdma_cqe(struct out_sqlite *o, const struct ev_item *e)
{
	struct fr_ev_rdma_cqe ev;
	memcpy(&ev, e->rec, sizeof(ev));
	sqlite3_stmt *st = o->st[ST_RDMA_CQE];
	bcommon(st, e);
	bi(st, 5, ev.qp_num);
	bu(st, 6, ev.wr_id);
	bi(st, 7, ev.status);
	bi(st, 8, ev.opcode);
	bi(st, 9, ev.byte_len);
	bi(st, 10, ev.src_qp);
	bi(st, 11, ev.vendor_err);
	bu(st, 12, ev.cq);
	return sq_put(o, st);
}

/* The event types the tables above are written for. */
static int covered(uint16_t type)
{
	switch (type) {
	case FR_EV_CPU_SAMPLE: case FR_EV_SYSCALL: case FR_EV_PROC_FORK: case FR_EV_PROC_EXEC:
	case FR_EV_PROC_EXIT: case FR_EV_CUDA: case FR_EV_NCCL: case FR_EV_STEP:
	case FR_EV_RDMA_CTRL: case FR_EV_RDMA_POST: case FR_EV_RDMA_CQE:
		return 1;
	}
	return 0;
}

static int on_event(void *ctx, const struct ev_item *e)
{
	struct out_sqlite *o = ctx;
	if (o->failed)
		return -1;
	uint16_t type = e->type;
	uint64_t *n = hmap_slot(&o->threads, (uint64_t)e->file << 32 | e->pid, e->tid, NULL);
	if (!n)
		return -1;
	++*n;
	if (o->generic[type & 0xff] && sq_generic_put(o, e))
		return -1;
	switch (type) {
	case FR_EV_CPU_SAMPLE: {
		struct fr_ev_cpu_sample ev;
		memcpy(&ev, e->rec, sizeof(ev));
		sqlite3_stmt *st = o->st[ST_CPU];
		bcommon(st, e);
		bi(st, 5, ev.cpu);
		bstack(st, 6, ev.stack_id);
		return sq_put(o, st);
	}
	case FR_EV_SYSCALL: {
		struct fr_ev_syscall ev;
		memcpy(&ev, e->rec, sizeof(ev));
		sqlite3_stmt *st = o->st[ST_SYSCALL];
		bcommon(st, e);
		bu(st, 5, ev.duration_ns);
		bi(st, 6, ev.nr);
		bi(st, 7, ev.ret);
		if (ev.sc_flags & FR_SYSCALL_HAS_FD)
			bi(st, 8, ev.fd);
		if (ev.sc_flags & FR_SYSCALL_HAS_BYTES)
			bu(st, 9, ev.count);
		bstack(st, 10, ev.stack_id);
		return sq_put(o, st);
	}
	case FR_EV_PROC_FORK:
	case FR_EV_PROC_EXEC:
	case FR_EV_PROC_EXIT: {
		struct fr_ev_proc ev;
		memcpy(&ev, e->rec, sizeof(ev));
		char comm[17];
		memcpy(comm, ev.comm, 16);
		comm[16] = '\0';
		sqlite3_stmt *st = o->st[ST_PROC_EVENT];
		bcommon(st, e);
		bt(st, 5, type == FR_EV_PROC_FORK ? "fork" : type == FR_EV_PROC_EXEC ? "exec" : "exit");
		bi(st, 6, ev.ppid);
		if (type == FR_EV_PROC_EXIT)
			bi(st, 7, ev.exit_code);
		/* bound as a blob-free text of at most 16 bytes; invalid UTF-8
		 * is stored as is (SQLite does not check) */
		bt(st, 8, comm);
		return sq_put(o, st);
	}
	case FR_EV_CUDA:
		return feed_cuda(o, e);
	case FR_EV_NCCL:
		return feed_nccl(o, e);
	case FR_EV_STEP: {
		struct fr_ev_step ev;
		memcpy(&ev, e->rec, sizeof(ev));
		sqlite3_stmt *st = o->st[ST_STEP_MARK];
		bcommon(st, e);
		bstack(st, 5, ev.stack_id);
		return sq_put(o, st);
	}
	case FR_EV_RDMA_CTRL:
		return feed_rdma_ctrl(o, e);
	case FR_EV_RDMA_POST:
		return feed_rdma_post(o, e);
	case FR_EV_RDMA_CQE:
		return feed_rdma_cqe(o, e);
	}
	return 0;
}

int out_sqlite_attach(struct out_sqlite *o, struct trace_set *ts, struct frec_error *err)
{
	o->ts = ts;
	o->n_offsets = trace_set_count(ts);
	o->offsets = calloc(o->n_offsets ? o->n_offsets : 1, sizeof(*o->offsets));
	void *events = trace_set_use_model(ts, "events", NULL);
	if (!o->offsets || !events || model_events_subscribe(events, ts, on_event, o)) {
		frec_error_set(err, "sqlite", -1, ENOMEM, "out of memory");
		return -1;
	}
	/* the event types of a family no table above is written for */
	size_t n_fam;
	const struct fr_family *const *fams = fr_families(&n_fam);
	for (size_t i = 0; i < n_fam; i++)
		for (size_t r = 0; r < fams[i]->n_records; r++)
			if (!covered(fams[i]->records[r].type) &&
			    out_sqlite_event_table(o, fams[i]->records[r].type)) {
				frec_error_set(err, "sqlite", -1, EIO, "%s", o->what[0] ? o->what :
					       "cannot make an event table");
				return -1;
			}
	return 0;
}
