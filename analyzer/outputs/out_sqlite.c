/* The SQLite writer (see out_sqlite.h and SQLITE_SCHEMA.md, which documents
 * every table this file creates; keep the two in step and bump
 * OUT_SQLITE_SCHEMA_VERSION on any incompatible change).
 *
 * Not for: analyses (models), nor the command line (cmd_sqlite.c).  Values
 * are always bound as parameters, never pasted into SQL. */
#include "out_sqlite.h"
#include "hmap.h"
#include "model.h"
#include "cuda_funcs.h"
#include "model_mem.h"
#include "out_common.h"
#include "symbolize.h"
#include "syscall_names.h"
#include "trace_set.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

static const char schema_sql[] =
	"CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);\n"
	"CREATE TABLE hosts(host_id INTEGER PRIMARY KEY, hostname TEXT UNIQUE, n_cpus INTEGER,"
	" kernel_release TEXT);\n"
	"CREATE TABLE files(file_id INTEGER PRIMARY KEY, path TEXT, host_id INTEGER, command TEXT,"
	" size_bytes INTEGER, start_real_ns INTEGER, start_mono_ns INTEGER, clock_offset_ns INTEGER,"
	" duration_ns INTEGER, first_event_ns INTEGER, last_event_ns INTEGER, events INTEGER,"
	" complete INTEGER, status TEXT, recorder_pid INTEGER);\n"
	"CREATE TABLE processes(file_id INTEGER, pid INTEGER, ppid INTEGER, host_id INTEGER,"
	" rank INTEGER, comm TEXT, cmdline TEXT, start_time_ns INTEGER, threads INTEGER,"
	" PRIMARY KEY(file_id, pid));\n"
	"CREATE TABLE threads(file_id INTEGER, pid INTEGER, tid INTEGER, name TEXT, events INTEGER,"
	" PRIMARY KEY(file_id, pid, tid));\n"
	"CREATE TABLE process_events(file_id INTEGER, pid INTEGER, tid INTEGER, ts_ns INTEGER,"
	" event TEXT, ppid INTEGER, exit_code INTEGER, comm TEXT);\n"
	"CREATE TABLE frames(frame_id INTEGER PRIMARY KEY, name TEXT, symbol TEXT, dso TEXT,"
	" file TEXT, line INTEGER, kind TEXT);\n"
	"CREATE TABLE stacks(file_id INTEGER, stack_id INTEGER, pid INTEGER, depth INTEGER,"
	" leaf_frame_id INTEGER, folded TEXT, PRIMARY KEY(file_id, stack_id));\n"
	"CREATE TABLE stack_frames(file_id INTEGER, stack_id INTEGER, position INTEGER,"
	" frame_id INTEGER, ip INTEGER, PRIMARY KEY(file_id, stack_id, position)) WITHOUT ROWID;\n"
	"CREATE TABLE cpu_samples(file_id INTEGER, pid INTEGER, tid INTEGER, ts_ns INTEGER,"
	" cpu INTEGER, stack_id INTEGER);\n"
	"CREATE TABLE syscalls(file_id INTEGER, pid INTEGER, tid INTEGER, ts_ns INTEGER,"
	" duration_ns INTEGER, nr INTEGER, ret INTEGER, fd INTEGER, bytes INTEGER,"
	" stack_id INTEGER);\n"
	"CREATE TABLE cuda_calls(file_id INTEGER, pid INTEGER, tid INTEGER, ts_ns INTEGER,"
	" duration_ns INTEGER, func INTEGER, result INTEGER, device INTEGER, ptr INTEGER,"
	" src INTEGER, bytes INTEGER, stream INTEGER, kind INTEGER, flags INTEGER,"
	" stack_id INTEGER);\n"
	"CREATE TABLE allocations(alloc_id INTEGER PRIMARY KEY, file_id INTEGER, pid INTEGER,"
	" tid INTEGER, device INTEGER, mem_kind TEXT, func INTEGER, address INTEGER,"
	" size_bytes INTEGER, alloc_ns INTEGER, free_ns INTEGER, free_tid INTEGER,"
	" failed INTEGER, result INTEGER, stack_id INTEGER);\n"
	"CREATE TABLE memory_inuse(file_id INTEGER, pid INTEGER, device INTEGER, mem_kind TEXT,"
	" ts_ns INTEGER, inuse_bytes INTEGER, delta_bytes INTEGER);\n"
	"CREATE TABLE nccl_calls(file_id INTEGER, pid INTEGER, tid INTEGER, ts_ns INTEGER,"
	" duration_ns INTEGER, func INTEGER, result INTEGER, comm INTEGER, count INTEGER,"
	" datatype INTEGER, op INTEGER, peer INTEGER, rank INTEGER, nranks INTEGER,"
	" stream INTEGER, uid_hash INTEGER, stack_id INTEGER);\n"
	"CREATE TABLE collectives(file_id INTEGER, pid INTEGER, rank INTEGER,"
	" comm_uid_hash INTEGER, collective_seq INTEGER, func INTEGER, count INTEGER,"
	" bytes INTEGER, datatype INTEGER, start_ns INTEGER, end_ns INTEGER,"
	" duration_ns INTEGER, wait_ns INTEGER, step INTEGER);\n"
	"CREATE TABLE step_marks(file_id INTEGER, pid INTEGER, tid INTEGER, ts_ns INTEGER,"
	" stack_id INTEGER);\n"
	"CREATE TABLE steps(file_id INTEGER, pid INTEGER, rank INTEGER, step INTEGER,"
	" start_ns INTEGER, end_ns INTEGER, duration_ns INTEGER, compute_ns INTEGER,"
	" wait_ns INTEGER);\n"
	"CREATE TABLE rdma_ctrl_calls(file_id INTEGER, pid INTEGER, tid INTEGER, ts_ns INTEGER,"
	" duration_ns INTEGER, func INTEGER, result INTEGER, obj_ptr INTEGER, related_ptr INTEGER,"
	" qp_num INTEGER, dest_qp_num INTEGER, qp_state INTEGER, attr_mask INTEGER,"
	" path_mtu INTEGER, dlid INTEGER, port_num INTEGER, gid TEXT, addr INTEGER,"
	" length INTEGER, lkey INTEGER, rkey INTEGER, access INTEGER, stack_id INTEGER);\n"
	"CREATE TABLE rdma_posts(file_id INTEGER, pid INTEGER, tid INTEGER, ts_ns INTEGER,"
	" qp_num INTEGER, wr_id INTEGER, opcode INTEGER, bytes INTEGER, num_sge INTEGER,"
	" is_recv INTEGER, signaled INTEGER, failed INTEGER, truncated INTEGER,"
	" wr_index INTEGER, result INTEGER);\n"
	"CREATE TABLE rdma_completions(file_id INTEGER, pid INTEGER, tid INTEGER, ts_ns INTEGER,"
	" qp_num INTEGER, wr_id INTEGER, status INTEGER, opcode INTEGER, byte_len INTEGER,"
	" src_qp INTEGER, vendor_err INTEGER, cq INTEGER);\n"
	"CREATE TABLE rdma_connections(conn_id INTEGER PRIMARY KEY, file_id INTEGER, pid INTEGER,"
	" rank INTEGER, local_qp INTEGER, remote_qp INTEGER, remote_file_id INTEGER,"
	" remote_pid INTEGER, remote_rank INTEGER, remote_conn_id INTEGER, ops INTEGER,"
	" bytes INTEGER, send_ops INTEGER, recv_ops INTEGER, errors INTEGER, flush_errors INTEGER,"
	" retry_exhausted INTEGER, rnr_retry_exhausted INTEGER, remote_nak INTEGER,"
	" local_errors INTEGER, other_errors INTEGER, outstanding INTEGER, latency_count INTEGER,"
	" p50_ns INTEGER, p99_ns INTEGER, min_ns INTEGER, max_ns INTEGER, mean_ns INTEGER,"
	" first_ns INTEGER, last_ns INTEGER);\n"
	"CREATE TABLE rdma_ops(conn_id INTEGER, file_id INTEGER, pid INTEGER, qp_num INTEGER,"
	" is_recv INTEGER, opcode INTEGER, opcode_name TEXT, size_bucket TEXT, ops INTEGER,"
	" bytes INTEGER, latency_count INTEGER, p50_ns INTEGER, p99_ns INTEGER, min_ns INTEGER,"
	" max_ns INTEGER, mean_ns INTEGER);\n"
	"CREATE TABLE memory_series(file_id INTEGER, pid INTEGER, device INTEGER, mem_kind TEXT,"
	" allocs INTEGER, alloc_bytes INTEGER, frees INTEGER, failed INTEGER, before_frees INTEGER,"
	" peak_bytes INTEGER, peak_ns INTEGER, end_bytes INTEGER, end_count INTEGER,"
	" caching_allocator INTEGER);\n"
	"CREATE TABLE memory_top_stacks(file_id INTEGER, pid INTEGER, device INTEGER,"
	" mem_kind TEXT, kind TEXT, position INTEGER, stack_id INTEGER, bytes INTEGER,"
	" allocations INTEGER);\n"
	"CREATE TABLE drops(file_id INTEGER, probe TEXT, events INTEGER, drops INTEGER,"
	" source TEXT);\n"
	"CREATE TABLE drop_reasons(file_id INTEGER, probe TEXT, reason TEXT, lost TEXT,"
	" count INTEGER, first_s REAL, last_s REAL);\n"
	"CREATE TABLE damaged_regions(file_id INTEGER, kind TEXT, offset INTEGER, length INTEGER,"
	" what TEXT);\n"
	"CREATE TABLE enum_syscalls(nr INTEGER PRIMARY KEY, name TEXT);\n"
	"CREATE TABLE enum_cuda_funcs(func INTEGER PRIMARY KEY, name TEXT, mem_op TEXT);\n"
	"CREATE TABLE enum_copy_kinds(kind INTEGER PRIMARY KEY, name TEXT);\n"
	"CREATE TABLE enum_nccl_funcs(func INTEGER PRIMARY KEY, name TEXT, collective INTEGER);\n"
	"CREATE TABLE enum_rdma_funcs(func INTEGER PRIMARY KEY, name TEXT);\n"
	"CREATE TABLE enum_wc_status(status INTEGER PRIMARY KEY, name TEXT);\n";

/* Created after the load (faster than maintaining them row by row). */
static const char index_sql[] =
	"CREATE INDEX cpu_samples_stack ON cpu_samples(file_id, stack_id);\n"
	"CREATE INDEX cpu_samples_time ON cpu_samples(ts_ns);\n"
	"CREATE INDEX syscalls_nr ON syscalls(nr, duration_ns);\n"
	"CREATE INDEX syscalls_time ON syscalls(ts_ns);\n"
	"CREATE INDEX cuda_calls_func ON cuda_calls(func, duration_ns);\n"
	"CREATE INDEX cuda_calls_time ON cuda_calls(ts_ns);\n"
	"CREATE INDEX allocations_live ON allocations(file_id, pid, device, alloc_ns, free_ns);\n"
	"CREATE INDEX allocations_stack ON allocations(file_id, stack_id);\n"
	"CREATE INDEX memory_inuse_peak ON memory_inuse(mem_kind, inuse_bytes);\n"
	"CREATE INDEX memory_inuse_time ON memory_inuse(file_id, pid, device, ts_ns);\n"
	"CREATE INDEX nccl_calls_rank ON nccl_calls(file_id, pid, duration_ns);\n"
	"CREATE INDEX collectives_rank ON collectives(rank, duration_ns);\n"
	"CREATE INDEX collectives_seq ON collectives(comm_uid_hash, collective_seq);\n"
	"CREATE INDEX steps_rank ON steps(rank, step);\n"
	"CREATE INDEX rdma_posts_wr ON rdma_posts(file_id, qp_num, wr_id);\n"
	"CREATE INDEX rdma_completions_wr ON rdma_completions(file_id, qp_num, wr_id);\n"
	"CREATE INDEX rdma_ops_conn ON rdma_ops(conn_id, p99_ns);\n"
	"CREATE INDEX frames_name ON frames(name);\n";

enum stmt_id {
	ST_CPU, ST_SYSCALL, ST_CUDA, ST_ALLOC, ST_INUSE, ST_NCCL, ST_STEP_MARK,
	ST_RDMA_CTRL, ST_RDMA_POST, ST_RDMA_CQE, ST_PROC_EVENT,
	ST_COLLECTIVE, ST_STEP, ST_RDMA_CONN, ST_RDMA_OP, ST_MEM_SERIES, ST_MEM_STACK, ST_COUNT
};

static const char *const stmt_sql[ST_COUNT] = {
	[ST_CPU] = "INSERT INTO cpu_samples VALUES(?,?,?,?,?,?)",
	[ST_SYSCALL] = "INSERT INTO syscalls VALUES(?,?,?,?,?,?,?,?,?,?)",
	[ST_CUDA] = "INSERT INTO cuda_calls VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[ST_ALLOC] = ("INSERT INTO allocations(file_id,pid,tid,device,mem_kind,func,address,"
		      "size_bytes,alloc_ns,free_ns,free_tid,failed,result,stack_id)"
		      " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)"),
	[ST_INUSE] = "INSERT INTO memory_inuse VALUES(?,?,?,?,?,?,?)",
	[ST_NCCL] = "INSERT INTO nccl_calls VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[ST_STEP_MARK] = "INSERT INTO step_marks VALUES(?,?,?,?,?)",
	[ST_RDMA_CTRL] = ("INSERT INTO rdma_ctrl_calls VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,"
			  "?,?,?,?,?,?)"),
	[ST_RDMA_POST] = "INSERT INTO rdma_posts VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[ST_RDMA_CQE] = "INSERT INTO rdma_completions VALUES(?,?,?,?,?,?,?,?,?,?,?,?)",
	[ST_PROC_EVENT] = "INSERT INTO process_events VALUES(?,?,?,?,?,?,?,?)",
	[ST_COLLECTIVE] = "INSERT INTO collectives VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[ST_STEP] = "INSERT INTO steps VALUES(?,?,?,?,?,?,?,?,?)",
	[ST_RDMA_CONN] = ("INSERT INTO rdma_connections VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,"
			  "?,?,?,?,?,?,?,?,?,?,?,?)"),
	[ST_RDMA_OP] = "INSERT INTO rdma_ops VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[ST_MEM_SERIES] = "INSERT INTO memory_series VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[ST_MEM_STACK] = "INSERT INTO memory_top_stacks VALUES(?,?,?,?,?,?,?,?,?)",
};

struct out_sqlite {
	sqlite3 *db;
	sqlite3_stmt *st[ST_COUNT];
	struct trace_set *ts;
	int64_t *offsets;        /* per file: out_clock_offset_ns */
	size_t n_offsets;
	uint64_t rows, in_batch;
	int in_txn;
	int failed;
	int aligned;             /* streamed times moved to the final offsets */
	char what[200];          /* the first SQLite error */
	struct hmap threads;     /* (file << 32 | pid, tid) -> events */
};

/* The sink: the decoder feeds it like a model. */
struct sqlite_sink {
	struct out_sqlite *o;
};

static int db_fail(struct out_sqlite *o, const char *doing)
{
	if (!o->failed) {
		snprintf(o->what, sizeof(o->what), "SQLite: %s: %s", doing,
			 o->db ? sqlite3_errmsg(o->db) : "out of memory");
		o->failed = 1;
	}
	return -1;
}

static int exec(struct out_sqlite *o, const char *sql)
{
	char *msg = NULL;
	if (sqlite3_exec(o->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		if (!o->failed) {
			snprintf(o->what, sizeof(o->what), "SQLite: %s", msg ? msg : "error");
			o->failed = 1;
		}
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

static int begin(struct out_sqlite *o)
{
	if (o->in_txn)
		return 0;
	if (exec(o, "BEGIN"))
		return -1;
	o->in_txn = 1;
	o->in_batch = 0;
	return 0;
}

static int commit(struct out_sqlite *o)
{
	if (!o->in_txn)
		return 0;
	o->in_txn = 0;
	return exec(o, "COMMIT");
}

/* Steps and resets one insert; commits every OUT_SQLITE_BATCH rows. */
static int put(struct out_sqlite *o, sqlite3_stmt *st)
{
	if (o->failed || begin(o))
		return -1;
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE)
		return db_fail(o, "insert");
	o->rows++;
	if (++o->in_batch >= OUT_SQLITE_BATCH)
		return commit(o);
	return 0;
}

static void bi(sqlite3_stmt *st, int col, int64_t v)
{
	sqlite3_bind_int64(st, col, v);
}

static void bu(sqlite3_stmt *st, int col, uint64_t v)
{
	sqlite3_bind_int64(st, col, (int64_t)v); /* addresses: two's complement */
}

static void bnull(sqlite3_stmt *st, int col)
{
	sqlite3_bind_null(st, col);
}

static void bt(sqlite3_stmt *st, int col, const char *s)
{
	if (s)
		sqlite3_bind_text(st, col, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, col);
}

/* stack_id 0 ("no stack") is NULL in every table. */
static void bstack(sqlite3_stmt *st, int col, uint32_t stack_id)
{
	if (stack_id)
		bi(st, col, stack_id);
	else
		bnull(st, col);
}

static void bcommon(sqlite3_stmt *st, uint32_t file_index, const struct fr_ev_common *c,
		    int64_t offset)
{
	bi(st, 1, file_index);
	bi(st, 2, c->pid);
	bi(st, 3, c->tid);
	bi(st, 4, (int64_t)c->ts_ns + offset);
}

int out_sqlite_open(const char *path, struct out_sqlite **out, struct frec_error *err)
{
	struct out_sqlite *o = calloc(1, sizeof(*o));
	if (!o) {
		frec_error_set(err, path, -1, ENOMEM, "out of memory");
		return -1;
	}
	hmap_init(&o->threads);
	if (sqlite3_open_v2(path, &o->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
		db_fail(o, "open");
		goto fail;
	}
	/* A fresh file nobody reads until we are done: no journal, no fsync
	 * per batch (the command renames it into place only when complete). */
	if (exec(o, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-16384;"
		    "PRAGMA temp_store=FILE;") ||
	    exec(o, "BEGIN") || exec(o, schema_sql))
		goto fail;
	char version[16];
	snprintf(version, sizeof(version), "%d", OUT_SQLITE_SCHEMA_VERSION);
	sqlite3_stmt *m;
	if (sqlite3_prepare_v2(o->db, "INSERT INTO meta VALUES(?,?)", -1, &m, NULL) != SQLITE_OK) {
		db_fail(o, "prepare");
		goto fail;
	}
	const char *kv[][2] = {
		{ "schema_version", version },
		{ "generator", "flightrec-analyze sqlite" },
		{ "time_unit", "ns" },
		{ "clock", "common clock: UTC ns since the epoch (file clock + files.clock_offset_ns)" },
		{ "doc", "analyzer/SQLITE_SCHEMA.md" },
	};
	for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++) {
		bt(m, 1, kv[i][0]);
		bt(m, 2, kv[i][1]);
		if (sqlite3_step(m) != SQLITE_DONE) {
			sqlite3_finalize(m);
			db_fail(o, "meta");
			goto fail;
		}
		sqlite3_reset(m);
	}
	sqlite3_finalize(m);
	if (exec(o, "COMMIT"))
		goto fail;
	for (int i = 0; i < ST_COUNT; i++) {
		if (sqlite3_prepare_v2(o->db, stmt_sql[i], -1, &o->st[i], NULL) != SQLITE_OK) {
			db_fail(o, "prepare");
			goto fail;
		}
	}
	*out = o;
	return 0;
fail:
	frec_error_set(err, path, -1, EIO, "%s", o->what);
	out_sqlite_close(o);
	return -1;
}

void out_sqlite_close(struct out_sqlite *o)
{
	if (!o)
		return;
	for (int i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(o->st[i]);
	if (o->db)
		sqlite3_close(o->db);
	hmap_free(&o->threads);
	free(o->offsets);
	free(o);
}

uint64_t out_sqlite_rows(const struct out_sqlite *o)
{
	return o->rows;
}

/* ---- streamed events ---------------------------------------------------- */

static int64_t file_offset(struct out_sqlite *o, uint32_t file_index)
{
	return file_index < o->n_offsets ? o->offsets[file_index] : 0;
}

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
	bi(st, 5, (int64_t)c->t_ns + file_offset(o, c->file));
	bu(st, 6, c->inuse_bytes);
	bi(st, 7, delta);
	return put(o, st);
}

/* An allocation row: live until c->t_ns (freed) or to the end (never). */
static int put_alloc(struct out_sqlite *o, const struct mem_change *c)
{
	int64_t off = file_offset(o, c->file);
	sqlite3_stmt *st = o->st[ST_ALLOC];
	bi(st, 1, c->file);
	bi(st, 2, c->pid);
	bi(st, 3, c->alloc_tid);
	bdevice(st, 4, c);
	bt(st, 5, alloc_kind(c));
	bi(st, 6, c->func);
	bu(st, 7, c->ptr);
	bu(st, 8, c->bytes);
	bi(st, 9, (int64_t)c->alloc_ns + off);
	if (c->kind == MEM_FREED) {
		bi(st, 10, (int64_t)c->t_ns + off);
		if (c->end_tid)
			bi(st, 11, c->end_tid);
	}
	bi(st, 12, c->kind == MEM_FAILED);
	bi(st, 13, c->kind == MEM_FAILED ? c->error : 0);
	bstack(st, 14, c->stack_id);
	return put(o, st);
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

static int feed_cuda(struct out_sqlite *o, uint32_t fi, const struct fr_rec_hdr *rec)
{
	struct fr_ev_cuda ev;
	memcpy(&ev, rec, sizeof(ev));
	sqlite3_stmt *st = o->st[ST_CUDA];
	bcommon(st, fi, &ev.c, file_offset(o, fi));
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
	return put(o, st); /* allocations and memory_inuse: out_sqlite_mem_change */
}

static int feed_nccl(struct out_sqlite *o, uint32_t fi, const struct fr_rec_hdr *rec)
{
	struct fr_ev_nccl ev;
	memcpy(&ev, rec, sizeof(ev));
	sqlite3_stmt *st = o->st[ST_NCCL];
	bcommon(st, fi, &ev.c, file_offset(o, fi));
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
	return put(o, st);
}

static int feed_rdma_ctrl(struct out_sqlite *o, uint32_t fi, const struct fr_rec_hdr *rec)
{
	struct fr_ev_rdma_ctrl ev;
	memcpy(&ev, rec, sizeof(ev));
	sqlite3_stmt *st = o->st[ST_RDMA_CTRL];
	bcommon(st, fi, &ev.c, file_offset(o, fi));
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
	return put(o, st);
}

static int feed_rdma_post(struct out_sqlite *o, uint32_t fi, const struct fr_rec_hdr *rec)
{
	struct fr_ev_rdma_post ev;
	memcpy(&ev, rec, sizeof(ev));
	sqlite3_stmt *st = o->st[ST_RDMA_POST];
	bcommon(st, fi, &ev.c, file_offset(o, fi));
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
	return put(o, st);
}

static int feed_rdma_cqe(struct out_sqlite *o, uint32_t fi, const struct fr_rec_hdr *rec)
{
	struct fr_ev_rdma_cqe ev;
	memcpy(&ev, rec, sizeof(ev));
	sqlite3_stmt *st = o->st[ST_RDMA_CQE];
	bcommon(st, fi, &ev.c, file_offset(o, fi));
	bi(st, 5, ev.qp_num);
	bu(st, 6, ev.wr_id);
	bi(st, 7, ev.status);
	bi(st, 8, ev.opcode);
	bi(st, 9, ev.byte_len);
	bi(st, 10, ev.src_qp);
	bi(st, 11, ev.vendor_err);
	bu(st, 12, ev.cq);
	return put(o, st);
}

static int sink_feed(void *state, uint32_t fi, const struct fr_rec_hdr *rec)
{
	struct out_sqlite *o = ((struct sqlite_sink *)state)->o;
	if (!o || o->failed)
		return -1;
	uint16_t type = out_rec_type(rec);
	struct fr_ev_common c;
	memcpy(&c, rec, sizeof(c));
	uint64_t *n = hmap_slot(&o->threads, (uint64_t)fi << 32 | c.pid, c.tid, NULL);
	if (!n)
		return -1;
	++*n;
	int64_t off = file_offset(o, fi);
	switch (type) {
	case FR_EV_CPU_SAMPLE: {
		struct fr_ev_cpu_sample ev;
		memcpy(&ev, rec, sizeof(ev));
		sqlite3_stmt *st = o->st[ST_CPU];
		bcommon(st, fi, &ev.c, off);
		bi(st, 5, ev.cpu);
		bstack(st, 6, ev.stack_id);
		return put(o, st);
	}
	case FR_EV_SYSCALL: {
		struct fr_ev_syscall ev;
		memcpy(&ev, rec, sizeof(ev));
		sqlite3_stmt *st = o->st[ST_SYSCALL];
		bcommon(st, fi, &ev.c, off);
		bu(st, 5, ev.duration_ns);
		bi(st, 6, ev.nr);
		bi(st, 7, ev.ret);
		if (ev.sc_flags & FR_SYSCALL_HAS_FD)
			bi(st, 8, ev.fd);
		if (ev.sc_flags & FR_SYSCALL_HAS_BYTES)
			bu(st, 9, ev.count);
		bstack(st, 10, ev.stack_id);
		return put(o, st);
	}
	case FR_EV_PROC_FORK:
	case FR_EV_PROC_EXEC:
	case FR_EV_PROC_EXIT: {
		struct fr_ev_proc ev;
		memcpy(&ev, rec, sizeof(ev));
		char comm[17];
		memcpy(comm, ev.comm, 16);
		comm[16] = '\0';
		sqlite3_stmt *st = o->st[ST_PROC_EVENT];
		bcommon(st, fi, &ev.c, off);
		bt(st, 5, type == FR_EV_PROC_FORK ? "fork" : type == FR_EV_PROC_EXEC ? "exec" : "exit");
		bi(st, 6, ev.ppid);
		if (type == FR_EV_PROC_EXIT)
			bi(st, 7, ev.exit_code);
		/* bound as a blob-free text of at most 16 bytes; invalid UTF-8
		 * is stored as is (SQLite does not check) */
		bt(st, 8, comm);
		return put(o, st);
	}
	case FR_EV_CUDA:
		return feed_cuda(o, fi, rec);
	case FR_EV_NCCL:
		return feed_nccl(o, fi, rec);
	case FR_EV_STEP: {
		struct fr_ev_step ev;
		memcpy(&ev, rec, sizeof(ev));
		sqlite3_stmt *st = o->st[ST_STEP_MARK];
		bcommon(st, fi, &ev.c, off);
		bstack(st, 5, ev.stack_id);
		return put(o, st);
	}
	case FR_EV_RDMA_CTRL:
		return feed_rdma_ctrl(o, fi, rec);
	case FR_EV_RDMA_POST:
		return feed_rdma_post(o, fi, rec);
	case FR_EV_RDMA_CQE:
		return feed_rdma_cqe(o, fi, rec);
	}
	return 0;
}

static void *sink_create(const struct model_opts *opts)
{
	(void)opts;
	return calloc(1, sizeof(struct sqlite_sink));
}

static int sink_finish(void *state, struct trace_set *ts, struct frec_error *err)
{
	(void)state;
	(void)ts;
	(void)err;
	return 0;
}

static const struct model_ops sqlite_sink_ops = {
	.name = "sqlite-sink",
	.create = sink_create,
	.feed = sink_feed,
	.finish = sink_finish,
	.destroy = free,
};

int out_sqlite_attach(struct out_sqlite *o, struct trace_set *ts, struct frec_error *err)
{
	o->ts = ts;
	o->n_offsets = trace_set_count(ts);
	o->offsets = calloc(o->n_offsets ? o->n_offsets : 1, sizeof(*o->offsets));
	struct sqlite_sink *s = trace_set_add_model(ts, &sqlite_sink_ops, NULL);
	if (!o->offsets || !s) {
		frec_error_set(err, "sqlite", -1, ENOMEM, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < o->n_offsets; i++)
		o->offsets[i] = out_clock_offset_ns(ts, i);
	s->o = o;
	return 0;
}

/* ---- model-filled tables (hooks) ---------------------------------------- */

static void bopt(sqlite3_stmt *st, int col, int64_t v)
{
	if (v >= 0)
		bi(st, col, v);
	else
		bnull(st, col);
}

int out_sqlite_put_collective(struct out_sqlite *o, const struct out_sqlite_collective *c)
{
	sqlite3_stmt *st = o->st[ST_COLLECTIVE];
	bi(st, 1, c->file_index);
	bi(st, 2, c->pid);
	bopt(st, 3, c->rank);
	bu(st, 4, c->comm_uid_hash);
	bu(st, 5, c->collective_seq);
	bi(st, 6, c->func);
	bu(st, 7, c->count);
	bu(st, 8, c->bytes);
	bi(st, 9, c->datatype);
	bi(st, 10, c->start_ns);
	bi(st, 11, c->end_ns);
	bi(st, 12, c->end_ns - c->start_ns);
	bopt(st, 13, c->wait_ns);
	bopt(st, 14, c->step);
	return put(o, st);
}

int out_sqlite_put_step(struct out_sqlite *o, const struct out_sqlite_step *s)
{
	sqlite3_stmt *st = o->st[ST_STEP];
	bi(st, 1, s->file_index);
	bi(st, 2, s->pid);
	bopt(st, 3, s->rank);
	bu(st, 4, s->step);
	bi(st, 5, s->start_ns);
	bi(st, 6, s->end_ns);
	bi(st, 7, s->end_ns - s->start_ns);
	bopt(st, 8, s->compute_ns);
	bopt(st, 9, s->wait_ns);
	return put(o, st);
}

int out_sqlite_put_rdma_conn(struct out_sqlite *o, const struct out_sqlite_rdma_conn *c)
{
	sqlite3_stmt *st = o->st[ST_RDMA_CONN];
	bu(st, 1, c->conn_id);
	bi(st, 2, c->file_index);
	bi(st, 3, c->pid);
	bopt(st, 4, c->rank);
	bi(st, 5, c->local_qp);
	if (c->remote_qp_known)
		bi(st, 6, c->remote_qp);
	if (c->remote_conn_id) {
		bi(st, 7, c->remote_file_index);
		bi(st, 8, c->remote_pid);
		bopt(st, 9, c->remote_rank);
		bu(st, 10, c->remote_conn_id);
	}
	bu(st, 11, c->ops);
	bu(st, 12, c->bytes);
	bu(st, 13, c->send_ops);
	bu(st, 14, c->recv_ops);
	bu(st, 15, c->errors);
	bu(st, 16, c->flush_errors);
	bu(st, 17, c->retry_exhausted);
	bu(st, 18, c->rnr_retry_exhausted);
	bu(st, 19, c->remote_nak);
	bu(st, 20, c->local_errors);
	bu(st, 21, c->other_errors);
	bu(st, 22, c->outstanding);
	bu(st, 23, c->latency.count);
	if (c->latency.count) {
		bu(st, 24, c->latency.p50_ns);
		bu(st, 25, c->latency.p99_ns);
		bu(st, 26, c->latency.min_ns);
		bu(st, 27, c->latency.max_ns);
		bu(st, 28, c->latency.mean_ns);
	}
	if (c->ops || c->first_ns) {
		bi(st, 29, c->first_ns);
		bi(st, 30, c->last_ns);
	}
	return put(o, st);
}

int out_sqlite_put_rdma_op(struct out_sqlite *o, const struct out_sqlite_rdma_op *op)
{
	sqlite3_stmt *st = o->st[ST_RDMA_OP];
	bu(st, 1, op->conn_id);
	bi(st, 2, op->file_index);
	bi(st, 3, op->pid);
	bi(st, 4, op->qp_num);
	bi(st, 5, op->is_recv);
	bi(st, 6, op->opcode);
	bt(st, 7, op->opcode_name);
	bt(st, 8, op->size_bucket);
	bu(st, 9, op->ops);
	bu(st, 10, op->bytes);
	bu(st, 11, op->latency.count);
	if (op->latency.count) {
		bu(st, 12, op->latency.p50_ns);
		bu(st, 13, op->latency.p99_ns);
		bu(st, 14, op->latency.min_ns);
		bu(st, 15, op->latency.max_ns);
		bu(st, 16, op->latency.mean_ns);
	}
	return put(o, st);
}

int out_sqlite_put_mem_series(struct out_sqlite *o, const struct out_sqlite_mem_series *m)
{
	sqlite3_stmt *st = o->st[ST_MEM_SERIES];
	bi(st, 1, m->file_index);
	bi(st, 2, m->pid);
	if (m->device >= 0)
		bi(st, 3, m->device);
	bt(st, 4, m->mem_kind);
	bu(st, 5, m->allocs);
	bu(st, 6, m->alloc_bytes);
	bu(st, 7, m->frees);
	bu(st, 8, m->failed);
	bu(st, 9, m->before_frees);
	bu(st, 10, m->peak_bytes);
	bi(st, 11, m->peak_ns);
	bu(st, 12, m->end_bytes);
	bu(st, 13, m->end_count);
	bi(st, 14, m->caching_allocator);
	return put(o, st);
}

int out_sqlite_put_mem_stack(struct out_sqlite *o, const struct out_sqlite_mem_stack *m)
{
	sqlite3_stmt *st = o->st[ST_MEM_STACK];
	bi(st, 1, m->file_index);
	bi(st, 2, m->pid);
	if (m->device >= 0)
		bi(st, 3, m->device);
	bt(st, 4, m->mem_kind);
	bt(st, 5, m->kind);
	bi(st, 6, m->position);
	bstack(st, 7, m->stack_id);
	bu(st, 8, m->bytes);
	bu(st, 9, m->allocations);
	return put(o, st);
}

/* ---- the final clock ------------------------------------------------------ */

/* Streamed times (columns holding common-clock instants). */
static const char *const time_columns[][2] = {
	{ "process_events", "ts_ns" }, { "cpu_samples", "ts_ns" }, { "syscalls", "ts_ns" },
	{ "cuda_calls", "ts_ns" }, { "allocations", "alloc_ns" }, { "allocations", "free_ns" },
	{ "memory_inuse", "ts_ns" }, { "nccl_calls", "ts_ns" }, { "step_marks", "ts_ns" },
	{ "rdma_ctrl_calls", "ts_ns" }, { "rdma_posts", "ts_ns" }, { "rdma_completions", "ts_ns" },
};

int out_sqlite_align(struct out_sqlite *o, struct trace_set *ts, struct frec_error *err)
{
	if (o->aligned)
		return 0;
	o->aligned = 1;
	for (size_t i = 0; i < o->n_offsets && i < trace_set_count(ts); i++) {
		int64_t final = out_clock_offset_ns(ts, i);
		int64_t delta = final - o->offsets[i];
		if (!delta)
			continue;
		for (size_t k = 0; k < sizeof(time_columns) / sizeof(time_columns[0]); k++) {
			char sql[160];
			snprintf(sql, sizeof(sql), "UPDATE %s SET %s = %s + ?1 WHERE file_id = ?2",
				 time_columns[k][0], time_columns[k][1], time_columns[k][1]);
			sqlite3_stmt *st = NULL;
			if (begin(o) || sqlite3_prepare_v2(o->db, sql, -1, &st, NULL) != SQLITE_OK) {
				sqlite3_finalize(st);
				db_fail(o, "prepare");
				frec_error_set(err, "sqlite", -1, EIO, "%s", o->what);
				return -1;
			}
			sqlite3_bind_int64(st, 1, delta);
			sqlite3_bind_int64(st, 2, (int64_t)i);
			int rc = sqlite3_step(st);
			sqlite3_finalize(st);
			if (rc != SQLITE_DONE) {
				db_fail(o, "update");
				frec_error_set(err, "sqlite", -1, EIO, "%s", o->what);
				return -1;
			}
		}
		o->offsets[i] = final;
	}
	return 0;
}

/* ---- metadata after the pass -------------------------------------------- */

static sqlite3_stmt *prep(struct out_sqlite *o, const char *sql)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(o->db, sql, -1, &st, NULL) != SQLITE_OK) {
		db_fail(o, "prepare");
		return NULL;
	}
	return st;
}

/* An (id, name) enum table: every id from first below limit that has a
 * name; when dense, the first id without one ends the table. */
static int write_enum(struct out_sqlite *o, const char *table_sql, const char *(*name_of)(uint32_t),
		      uint32_t first, uint32_t limit, int dense)
{
	sqlite3_stmt *st = prep(o, table_sql);
	int rc = st ? 0 : -1;
	for (uint32_t id = first; st && !rc && id < limit; id++) {
		const char *name = name_of(id);
		if (!name) {
			if (dense)
				break;
			continue;
		}
		bi(st, 1, id);
		bt(st, 2, name);
		rc = put(o, st);
	}
	sqlite3_finalize(st);
	return rc;
}

static int write_enums(struct out_sqlite *o)
{
	if (write_enum(o, "INSERT INTO enum_syscalls VALUES(?,?)", syscall_name, 0, 1024, 0) ||
	    write_enum(o, "INSERT INTO enum_copy_kinds VALUES(?,?)", out_copy_kind_name, 0, UINT32_MAX, 1) ||
	    write_enum(o, "INSERT INTO enum_rdma_funcs VALUES(?,?)", out_rdma_func_name, 1, UINT32_MAX, 1) ||
	    write_enum(o, "INSERT INTO enum_wc_status VALUES(?,?)", out_wc_status_name, 0, UINT32_MAX, 1))
		return -1;
	/* the tables with a third column */
	sqlite3_stmt *st = prep(o, "INSERT INTO enum_cuda_funcs VALUES(?,?,?)");
	int rc = st ? 0 : -1;
	for (uint32_t f = 0; st && !rc && f < CUDA_FUNC_LIMIT; f++) {
		if (!cuda_func_name((uint16_t)f))
			continue;
		enum mem_class mc = mem_func_class((uint16_t)f);
		int alloc = mc == MEM_DEV_ALLOC || mc == MEM_PHYS_CREATE || mc == MEM_HOST_ALLOC;
		bi(st, 1, f);
		bt(st, 2, cuda_func_name((uint16_t)f));
		bt(st, 3, mc == MEM_NONE ? NULL : alloc ? "alloc" : "free");
		rc = put(o, st);
	}
	sqlite3_finalize(st);
	if (rc || !(st = prep(o, "INSERT INTO enum_nccl_funcs VALUES(?,?,?)")))
		return -1;
	for (uint32_t f = 1; !rc && out_nccl_func_name(f); f++) {
		bi(st, 1, f);
		bt(st, 2, out_nccl_func_name(f));
		bi(st, 3, out_nccl_is_collective(f));
		rc = put(o, st);
	}
	sqlite3_finalize(st);
	return rc;
}

/* hosts and files */
static int write_files(struct out_sqlite *o, struct trace_set *ts, int64_t *host_ids)
{
	sqlite3_stmt *hs = prep(o, "INSERT OR IGNORE INTO hosts(hostname, n_cpus, kernel_release)"
				   " VALUES(?,?,?)");
	sqlite3_stmt *hq = prep(o, "SELECT host_id FROM hosts WHERE hostname = ?");
	sqlite3_stmt *fs = prep(o, "INSERT INTO files VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
	int rc = hs && hq && fs ? 0 : -1;
	for (size_t i = 0; !rc && i < trace_set_count(ts); i++) {
		struct trace_file *f = trace_set_file(ts, i);
		char host[65];
		snprintf(host, sizeof(host), "%s", f->hdr.host);
		char krel[9];
		snprintf(krel, sizeof(krel), "%s", f->hdr.kernel_release);
		bt(hs, 1, host);
		bi(hs, 2, f->hdr.n_cpus);
		bt(hs, 3, krel);
		if ((rc = put(o, hs)))
			break;
		bt(hq, 1, host);
		host_ids[i] = sqlite3_step(hq) == SQLITE_ROW ? sqlite3_column_int64(hq, 0) : 0;
		sqlite3_reset(hq);
		int64_t off = o->offsets[i];
		const struct fr_end *end = f->reader ? frec_end(f->reader) : NULL;
		uint64_t last = end ? end->end_mono_ns : f->last_event_ns;
		char trouble[512];
		trace_file_trouble(f, trouble, sizeof(trouble));
		bi(fs, 1, (int64_t)i);
		bt(fs, 2, f->path);
		bi(fs, 3, host_ids[i]);
		bt(fs, 4, f->cmdline);
		bu(fs, 5, f->size_bytes);
		bu(fs, 6, f->hdr.start_real_ns);
		bu(fs, 7, f->hdr.start_mono_ns);
		bi(fs, 8, off);
		bu(fs, 9, last > f->hdr.start_mono_ns ? last - f->hdr.start_mono_ns : 0);
		if (f->events) {
			bi(fs, 10, (int64_t)f->first_event_ns + off);
			bi(fs, 11, (int64_t)f->last_event_ns + off);
		}
		bu(fs, 12, f->events);
		bi(fs, 13, trace_file_complete(f));
		bt(fs, 14, trouble[0] ? trouble : "intact");
		bi(fs, 15, f->hdr.recorder_pid);
		rc = put(o, fs);
	}
	sqlite3_finalize(hs);
	sqlite3_finalize(hq);
	sqlite3_finalize(fs);
	return rc;
}

static int write_processes(struct out_sqlite *o, struct trace_set *ts, const int64_t *host_ids)
{
	sqlite3_stmt *ps = prep(o, "INSERT OR REPLACE INTO processes VALUES(?,?,?,?,?,?,?,?,?)");
	sqlite3_stmt *th = prep(o, "INSERT OR IGNORE INTO threads VALUES(?,?,?,?,?)");
	int rc = ps && th ? 0 : -1;
	for (size_t i = 0; !rc && i < trace_set_count(ts); i++) {
		const struct trace_file *f = trace_set_file(ts, i);
		for (size_t k = 0; !rc && k < f->n_procs; k++) {
			const struct ts_process *p = &f->procs[k];
			int64_t rank;
			bi(ps, 1, (int64_t)i);
			bi(ps, 2, p->pid);
			bi(ps, 3, p->ppid);
			bi(ps, 4, host_ids[i]);
			if (out_process_rank(f, p->pid, &rank))
				bi(ps, 5, rank);
			bt(ps, 6, p->comm);
			bt(ps, 7, p->cmdline);
			bi(ps, 8, p->start_time_ns ? (int64_t)p->start_time_ns + o->offsets[i] : 0);
			bi(ps, 9, p->threads);
			rc = put(o, ps);
		}
		/* threads named by THREAD records */
		for (size_t k = 0; !rc && k < f->thread_seen.cap; k++) {
			const struct hmap_slot *s = &f->thread_seen.slots[k];
			if (!s->used)
				continue;
			uint64_t events = 0;
			hmap_get(&o->threads, (uint64_t)i << 32 | s->key_a, s->key_b, &events);
			bi(th, 1, (int64_t)i);
			bu(th, 2, s->key_a);
			bu(th, 3, s->key_b);
			const char *name = trace_file_thread_name(f, (uint32_t)s->key_a, (uint32_t)s->key_b);
			if (name)
				bt(th, 4, name);
			else
				bnull(th, 4);
			bu(th, 5, events);
			rc = put(o, th);
		}
	}
	/* threads seen only in events */
	for (size_t k = 0; !rc && k < o->threads.cap; k++) {
		const struct hmap_slot *s = &o->threads.slots[k];
		if (!s->used)
			continue;
		bi(th, 1, (int64_t)(s->key_a >> 32));
		bi(th, 2, (int64_t)(uint32_t)s->key_a);
		bu(th, 3, s->key_b);
		bnull(th, 4);
		bu(th, 5, s->value);
		rc = put(o, th);
	}
	sqlite3_finalize(ps);
	sqlite3_finalize(th);
	return rc;
}

/* The mapping path holding ip for pid (any of them on overlap); NULL when
 * none.  Linear over the file's mappings of that pid, which the caller
 * sorted by (pid, start). */
static int map_cmp(const void *a, const void *b)
{
	const struct ts_mapping *x = *(const struct ts_mapping *const *)a;
	const struct ts_mapping *y = *(const struct ts_mapping *const *)b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? 1 : x->seq > y->seq ? -1 : 0;
}

static const char *map_path(const struct ts_mapping *const *maps, size_t n, uint32_t pid,
			    uint64_t ip)
{
	/* last mapping with (pid, start) <= (pid, ip) */
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (maps[mid]->pid < pid || (maps[mid]->pid == pid && maps[mid]->start <= ip))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = lo; k-- > 0 && maps[k]->pid == pid;) {
		if (ip >= maps[k]->start && ip < maps[k]->end)
			return maps[k]->path;
		if (lo - k > 8)
			break; /* overlapping remaps are rare; do not scan far */
	}
	return NULL;
}

static uint64_t fnv(const char *s, uint64_t h)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ull;
	}
	return h;
}

struct frame_ids {
	struct hmap ids;    /* (hash(name), hash(dso)) -> frame_id */
	int64_t next;
	sqlite3_stmt *ins;
};

static int frame_id(struct out_sqlite *o, struct frame_ids *fr, const char *name, const char *dso,
		    int kernel, int64_t *id)
{
	uint64_t a = fnv(name, 0xcbf29ce484222325ull), b = fnv(dso ? dso : "", 0x84222325cbf29ce4ull);
	int created;
	uint64_t *v = hmap_slot(&fr->ids, a, b, &created);
	if (!v)
		return -1;
	if (!created) {
		*id = (int64_t)*v;
		return 0;
	}
	*v = (uint64_t)++fr->next;
	*id = fr->next;
	int unresolved = strncmp(name, "[unknown]", 9) == 0 || strncmp(name, "[no stack]", 10) == 0 ||
			 (!kernel && strstr(name, "+0x") && !strchr(name, '('));
	char symbol[512];
	snprintf(symbol, sizeof(symbol), "%s", name);
	size_t len = strlen(symbol);
	if (kernel && len > 4 && strcmp(symbol + len - 4, "_[k]") == 0)
		symbol[len - 4] = '\0';
	bi(fr->ins, 1, *id);
	bt(fr->ins, 2, name);
	bt(fr->ins, 3, unresolved ? NULL : symbol);
	bt(fr->ins, 4, dso);
	/* file, line: NULL until line info / Python frames arrive */
	bt(fr->ins, 7, kernel ? "kernel" : "native");
	return put(o, fr->ins);
}

static int write_stacks(struct out_sqlite *o, struct trace_set *ts, struct frec_error *err)
{
	struct symbolizer *sym = trace_set_symbolizer(ts, err);
	if (!sym)
		return -1;
	struct frame_ids fr = { .ins = prep(o, "INSERT INTO frames VALUES(?,?,?,?,?,?,?)") };
	hmap_init(&fr.ids);
	sqlite3_stmt *ss = prep(o, "INSERT OR IGNORE INTO stacks VALUES(?,?,?,?,?,?)");
	sqlite3_stmt *sf = prep(o, "INSERT OR IGNORE INTO stack_frames VALUES(?,?,?,?,?)");
	const char **frames = NULL;
	const struct ts_mapping **maps = NULL;
	char *folded = NULL;
	size_t folded_cap = 0;
	int rc = fr.ins && ss && sf ? 0 : -1;
	for (size_t i = 0; !rc && i < trace_set_count(ts); i++) {
		const struct trace_file *f = trace_set_file(ts, i);
		free(maps);
		maps = malloc((f->n_maps ? f->n_maps : 1) * sizeof(*maps));
		if (!maps) {
			rc = -1;
			break;
		}
		for (size_t k = 0; k < f->n_maps; k++)
			maps[k] = &f->maps[k];
		qsort(maps, f->n_maps, sizeof(*maps), map_cmp);
		for (size_t k = 0; !rc && k < f->n_stacks; k++) {
			const struct ts_stack *st = &f->stacks[k];
			if (trace_file_stack(f, st->stack_id) != st)
				continue; /* a later duplicate id: the first one wins */
			size_t n = (size_t)st->n_kernel + st->n_user;
			const char **grown = realloc(frames, (n ? n : 1) * sizeof(*frames));
			if (!grown) {
				rc = -1;
				break;
			}
			frames = grown;
			symbolize_stack(sym, f, (uint32_t)i, st, frames);
			size_t flen = 0;
			int64_t leaf = 0;
			for (size_t d = 0; !rc && d < n; d++) {
				if (!frames[d]) {
					rc = -1;
					break;
				}
				/* root first: user outermost .. user leaf, kernel outermost .. leaf */
				int kernel = d >= st->n_user;
				uint64_t ip = kernel ? f->ips[st->ips_at + (n - 1 - d)]
						     : f->ips[st->ips_at + st->n_kernel + (st->n_user - 1 - d)];
				const char *dso = kernel ? "[kernel.kallsyms]"
							 : map_path(maps, f->n_maps, st->pid, ip);
				int64_t id;
				if (frame_id(o, &fr, frames[d], dso, kernel, &id)) {
					rc = -1;
					break;
				}
				leaf = id;
				bi(sf, 1, (int64_t)i);
				bi(sf, 2, st->stack_id);
				bi(sf, 3, (int64_t)d);
				bi(sf, 4, id);
				bu(sf, 5, ip);
				if ((rc = put(o, sf)))
					break;
				size_t add = strlen(frames[d]) + 2;
				if (flen + add > folded_cap) {
					size_t cap = (flen + add) * 2;
					char *g = realloc(folded, cap);
					if (!g) {
						rc = -1;
						break;
					}
					folded = g;
					folded_cap = cap;
				}
				if (flen)
					folded[flen++] = ';';
				memcpy(folded + flen, frames[d], add - 2);
				flen += add - 2;
				folded[flen] = '\0';
			}
			if (rc)
				break;
			bi(ss, 1, (int64_t)i);
			bi(ss, 2, st->stack_id);
			bi(ss, 3, st->pid);
			bi(ss, 4, (int64_t)n);
			if (n)
				bi(ss, 5, leaf);
			bt(ss, 6, n ? folded : "");
			rc = put(o, ss);
		}
	}
	free(frames);
	free(maps);
	free(folded);
	hmap_free(&fr.ids);
	sqlite3_finalize(fr.ins);
	sqlite3_finalize(ss);
	sqlite3_finalize(sf);
	return rc;
}

static int write_drops_damage(struct out_sqlite *o, struct trace_set *ts)
{
	sqlite3_stmt *ds = prep(o, "INSERT INTO drops VALUES(?,?,?,?,?)");
	sqlite3_stmt *dm = prep(o, "INSERT INTO damaged_regions VALUES(?,?,?,?,?)");
	sqlite3_stmt *dr = prep(o, "INSERT INTO drop_reasons VALUES(?,?,?,?,?,?,?)");
	int rc = ds && dm && dr ? 0 : -1;
	for (size_t i = 0; !rc && i < trace_set_count(ts); i++) {
		const struct trace_file *f = trace_set_file(ts, i);
		uint32_t n_losses = 0;
		const struct fr_drop_count *loss = trace_file_drops(f, &n_losses);
		for (uint32_t k = 0; !rc && loss && k < n_losses; k++) {
			const struct fr_drop_count *d = &loss[k];
			uint64_t t0 = f->hdr.start_mono_ns;
			char probe[17];
			memcpy(probe, d->probe, 16);
			probe[16] = '\0';
			bi(dr, 1, (int64_t)i);
			bt(dr, 2, probe);
			bt(dr, 3, fr_drop_reason_name(d->reason));
			bt(dr, 4, FR_DROP_LOSES_EVENT(d->reason) ? "event" : "stack");
			bu(dr, 5, d->count);
			if (d->first_ns && d->first_ns >= t0 && d->last_ns >= d->first_ns) {
				sqlite3_bind_double(dr, 6, (d->first_ns - t0) / 1e9);
				sqlite3_bind_double(dr, 7, (d->last_ns - t0) / 1e9);
			} else {
				bnull(dr, 6);
				bnull(dr, 7);
			}
			rc = put(o, dr);
		}
		const struct fr_end *end = f->reader ? frec_end(f->reader) : NULL;
		uint32_t n = 0;
		const struct fr_probe_stats *ps = end ? frec_end_probes(f->reader, &n) : NULL;
		if (end && ps) {
			for (uint32_t k = 0; !rc && k < n; k++) {
				char name[17];
				memcpy(name, ps[k].name, 16);
				name[16] = '\0';
				bi(ds, 1, (int64_t)i);
				bt(ds, 2, name);
				bu(ds, 3, ps[k].events);
				bu(ds, 4, ps[k].drops);
				bt(ds, 5, "end");
				rc = put(o, ds);
			}
		} else if (f->has_stats) {
			for (uint32_t k = 0; !rc && k < f->n_stats_probes; k++) {
				bi(ds, 1, (int64_t)i);
				bt(ds, 2, f->stats_probes[k].name);
				bu(ds, 3, f->stats_probes[k].events);
				bu(ds, 4, f->stats_probes[k].drops);
				bt(ds, 5, "stats");
				rc = put(o, ds);
			}
		}
		size_t n_damage = f->reader ? frec_damage_count(f->reader) : 0;
		for (size_t k = 0; !rc && k < n_damage; k++) {
			const struct frec_damage *d = frec_damage_at(f->reader, k);
			char what[161];
			snprintf(what, sizeof(what), "%.160s", d->what);
			bi(dm, 1, (int64_t)i);
			bt(dm, 2, "damaged");
			bu(dm, 3, d->offset);
			bu(dm, 4, d->length);
			bt(dm, 5, what);
			rc = put(o, dm);
		}
		for (uint64_t k = 0; !rc && k < f->n_problems && k < TS_MAX_PROBLEMS_KEPT; k++) {
			bi(dm, 1, (int64_t)i);
			bt(dm, 2, "malformed_record");
			bu(dm, 3, f->problems[k].chunk_offset);
			bnull(dm, 4);
			bt(dm, 5, f->problems[k].what);
			rc = put(o, dm);
		}
		uint64_t missing = f->reader ? frec_chunks_missing(f->reader) : 0;
		if (!rc && missing) {
			char what[96];
			snprintf(what, sizeof(what), "%llu chunks listed in the index not found",
				 (unsigned long long)missing);
			bi(dm, 1, (int64_t)i);
			bt(dm, 2, "missing_chunks");
			bt(dm, 5, what);
			rc = put(o, dm);
		}
		if (!rc && !trace_file_complete(f)) {
			bi(dm, 1, (int64_t)i);
			bt(dm, 2, "incomplete");
			bt(dm, 5, f->io_failed ? f->io_err.what : "no end record (recorder killed?)");
			rc = put(o, dm);
		}
	}
	sqlite3_finalize(ds);
	sqlite3_finalize(dm);
	sqlite3_finalize(dr);
	return rc;
}

int out_sqlite_finish(struct out_sqlite *o, struct trace_set *ts, struct frec_error *err)
{
	if (out_sqlite_align(o, ts, err))
		return -1;
	int64_t *host_ids = calloc(trace_set_count(ts) + 1, sizeof(*host_ids));
	int rc = host_ids ? 0 : -1;
	if (!rc)
		rc = write_enums(o);
	if (!rc)
		rc = write_files(o, ts, host_ids);
	if (!rc)
		rc = write_processes(o, ts, host_ids);
	if (!rc)
		rc = write_stacks(o, ts, err);
	if (!rc)
		rc = write_drops_damage(o, ts);
	free(host_ids);
	if (!rc)
		rc = commit(o);
	if (!rc)
		rc = exec(o, "BEGIN");
	if (!rc)
		rc = exec(o, index_sql);
	if (!rc)
		rc = exec(o, "COMMIT");
	if (!rc)
		rc = exec(o, "ANALYZE");
	if (rc) {
		if (o->failed)
			frec_error_set(err, "sqlite", -1, EIO, "%s", o->what);
		else if (!err->what[0])
			frec_error_set(err, "sqlite", -1, ENOMEM, "out of memory writing the database");
	}
	return rc;
}

const char *out_sqlite_error(const struct out_sqlite *o)
{
	return o->failed ? o->what : NULL;
}
