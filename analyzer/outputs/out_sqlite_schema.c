/* The SQL text of the SQLite output: every table, the indexes made after
 * the load, and the inserts prepared once at open.  analyzer/SQLITE_SCHEMA.md
 * documents every table created here; keep the two in step and bump
 * OUT_SQLITE_SCHEMA_VERSION on any incompatible change.
 *
 * Not for logic: text only, no values (those are always bound as parameters,
 * never pasted into SQL); out_sqlite.c runs it. */
#include "out_sqlite_impl.h"

const char sq_schema_sql[] =
	"CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);\n"
	"CREATE TABLE hosts(host_id INTEGER PRIMARY KEY, hostname TEXT UNIQUE, n_cpus INTEGER,"
	" kernel_release TEXT);\n"
	"CREATE TABLE files(file_id INTEGER PRIMARY KEY, path TEXT, host_id INTEGER, command TEXT,"
	" size_bytes INTEGER, start_real_ns INTEGER, start_mono_ns INTEGER, clock_offset_ns INTEGER,"
	" duration_ns INTEGER, first_event_ns INTEGER, last_event_ns INTEGER, events INTEGER,"
	" complete INTEGER, status TEXT, recorder_pid INTEGER);\n"
	"CREATE TABLE processes(file_id INTEGER, pid INTEGER, ppid INTEGER, host_id INTEGER,"
	" rank INTEGER, comm TEXT, cmdline TEXT, start_time_ns INTEGER, threads INTEGER,"
	" cgroup TEXT, container_id TEXT, container_runtime TEXT, pod_uid TEXT, pod_namespace TEXT,"
	" slurm_job TEXT, slurm_step TEXT, slurm_task TEXT, PRIMARY KEY(file_id, pid));\n"
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
	"CREATE TABLE findings(finding_id INTEGER PRIMARY KEY, position INTEGER, listed INTEGER,"
	" kind TEXT, cost_ms REAL, cost_ms_per_step REAL, share REAL, pids TEXT, ranks TEXT,"
	" where_frames TEXT, evidence TEXT, fix TEXT);\n"
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
const char sq_index_sql[] =
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

/* indexed by enum stmt_id (out_sqlite_impl.h) */
const char *const sq_stmt_sql[ST_COUNT] = {
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
	[ST_FINDING] = ("INSERT INTO findings(position,listed,kind,cost_ms,cost_ms_per_step,share,"
			"pids,ranks,where_frames,evidence,fix) VALUES(?,?,?,?,?,?,?,?,?,?,?)"),
};
