/* flightrec event ABI: the records the probe families' BPF programs put in
 * the ring buffer and the trace file holds (the metadata records and the
 * record header are format/frec_records.h).  Shared by bpf/, recorder/,
 * bpf/families/ and analyzer/, so it depends on nothing but fixed-width
 * integer types.
 *
 * Rules: little-endian, every struct 8-byte aligned with explicit padding,
 * a static assertion on every size, type numbers append-only (never renumber,
 * never reuse).  format/SPEC.md documents each record field by field.
 */
#ifndef FLIGHTREC_EVENTS_H
#define FLIGHTREC_EVENTS_H

#include "../format/frec_records.h"

/* ---- event record types (append-only; metadata types are 0x100 and up) - */
enum fr_rec_type {
	/* events produced in the kernel (ring buffer), timestamped CLOCK_MONOTONIC */
	FR_EV_CPU_SAMPLE = 1,   /* struct fr_ev_cpu_sample */
	FR_EV_SYSCALL = 2,      /* struct fr_ev_syscall */
	FR_EV_PROC_FORK = 3,    /* struct fr_ev_proc: new process (not thread) */
	FR_EV_PROC_EXEC = 4,    /* struct fr_ev_proc */
	FR_EV_PROC_EXIT = 5,    /* struct fr_ev_proc: thread-group leader exit */
	FR_EV_CUDA = 6,         /* struct fr_ev_cuda: one CUDA runtime/driver call */
	FR_EV_NCCL = 7,         /* struct fr_ev_nccl: one NCCL call */
	FR_EV_RDMA_CTRL = 8,    /* struct fr_ev_rdma_ctrl: verbs control path call */
	FR_EV_RDMA_POST = 9,    /* struct fr_ev_rdma_post: one posted work request */
	FR_EV_RDMA_CQE = 10,    /* struct fr_ev_rdma_cqe: one completion returned */
	FR_EV_STEP = 11,        /* struct fr_ev_step: a --step-marker call */
	FR_EV_FD_PATH = 12,     /* struct fr_ev_fd_path: which file an fd names */
	FR_EV_SCHED = 13,       /* struct fr_ev_sched: off-CPU time in a system call */
	FR_EV_GPU_KERNEL = 14,  /* struct fr_ev_gpu_kernel: one kernel's run on the GPU */
	FR_EV_GPU_LAUNCH = 15,  /* struct fr_ev_gpu_launch: a launch's CUPTI correlation id */

	/* ring buffer only, never in a file */
	FR_RING_USTACK = 0xff00,  /* struct fr_ring_ustack: trailer of its event's ring record */
};

/* record flags (fr_rec_hdr.flags) */
enum fr_rec_flags {
	/* ring buffer only: a struct fr_raw_stack follows the fixed part; the
	 * recorder interns it into the stack table and writes stack_id instead.
	 * Never set in a file. */
	FR_RECF_RAW_STACK = 1 << 0,
	/* ring buffer only: a struct fr_ring_ustack (with its kernel ips,
	 * Python frames and stack bytes) follows the event's fixed part in the
	 * same ring record;
	 * the recorder writes it as an FR_REC_USTACK and the event's stack_id
	 * names it.  One record, so nothing can come between an event and its
	 * stack.  Never set in a file. */
	FR_RECF_USTACK = 1 << 1,
};

/* Common prefix of every kernel event. */
struct fr_ev_common {
	struct fr_rec_hdr h;
	fr_u64 ts_ns; /* CLOCK_MONOTONIC */
	fr_u32 pid;   /* thread-group id (process id), root pid namespace */
	fr_u32 tid;   /* thread id, root pid namespace */
};
FR_STATIC_ASSERT(sizeof(struct fr_ev_common) == 24, "fr_ev_common");

/* Stack ids: 0 means "no stack".  Ids index FR_REC_STACK records of the same
 * file; they are assigned by the recorder, never BPF stack-map ids. */
#define FR_STACK_NONE 0u
/* Bit 31 of a stack id: a raw user stack (FR_REC_USTACK, dwarf mode), the
 * other bits its number; clear: an FR_REC_STACK of ips. */
#define FR_STACK_RAW_BIT 0x80000000u
#define FR_STACK_ID_RAW(n) (FR_STACK_RAW_BIT | (fr_u32)(n))
#define FR_STACK_ID_IS_RAW(id) (((id) & FR_STACK_RAW_BIT) != 0)

/* Maximum frames the BPF side captures per stack part. */
#define FR_MAX_USER_FRAMES 127
#define FR_MAX_KERNEL_FRAMES 64

/* Ring-buffer trailer of events with FR_RECF_RAW_STACK (never in a file):
 * this header, then n_kernel kernel ips, then n_user user ips, each part
 * leaf first and nothing after them.  The record is only as long as the
 * stack it carries: a deep-buffer trailer made every probed call pay for
 * the kernel clearing and the drain reading 1.5 KiB of mostly zeros. */
struct fr_raw_stack {
	fr_u16 n_user;
	fr_u16 n_kernel;
	fr_u32 _pad;
};
FR_STATIC_ASSERT(sizeof(struct fr_raw_stack) == 8, "fr_raw_stack");
/* Largest trailer: the header and both parts full. */
#define FR_RAW_STACK_MAX (8 + 8 * (FR_MAX_KERNEL_FRAMES + FR_MAX_USER_FRAMES))

/* Probe families, indexing the per-CPU drop counters. */
enum fr_probe_id {
	FR_PROBE_PROC = 0,
	FR_PROBE_CPU = 1,
	FR_PROBE_SYSCALLS = 2,
	FR_PROBE_CUDA = 3,
	FR_PROBE_NCCL = 4,
	FR_PROBE_RDMA = 5,
	FR_PROBE_STEP = 6,
	FR_PROBE_SCHED = 7,
	FR_PROBE_GPU = 8,
	FR_PROBE_MAX = 16,
};

#define FR_DROP_COUNTS_MAX (FR_PROBE_MAX * FR_DROP_REASON_MAX)

/* True when a reason loses the whole event (false: only its stack). */
#define FR_DROP_LOSES_EVENT(r) ((r) != FR_DROP_STACK_BUSY)

/* Value of the kernel's per-CPU drop counters (map fr_drops, indexed by
 * probe * FR_DROP_REASON_MAX + reason). */
struct fr_drop_slot {
	fr_u64 count;
	fr_u64 first_ns; /* CLOCK_MONOTONIC of the first and the latest loss */
	fr_u64 last_ns;
};
FR_STATIC_ASSERT(sizeof(struct fr_drop_slot) == 24, "fr_drop_slot");

struct fr_ev_cpu_sample {
	struct fr_ev_common c;
	fr_u32 cpu;
	fr_u32 stack_id; /* in the file; 0 in the ring (raw stack follows) */
};
FR_STATIC_ASSERT(sizeof(struct fr_ev_cpu_sample) == 32, "fr_ev_cpu_sample");

enum fr_syscall_flags {
	FR_SYSCALL_HAS_FD = 1 << 0,    /* fd is meaningful */
	FR_SYSCALL_HAS_BYTES = 1 << 1, /* count is the requested byte count */
};

/* System call numbers whose ring-full losses the kernel counts one by one
 * (map fr_sys_drops_by_nr, a u64 per CPU per number; FR_REC_SYSCALL_DROPS). */
#define FR_SYSCALL_DROP_NRS 512

/* One completed system call; ts_ns is the entry time. */
struct fr_ev_syscall {
	struct fr_ev_common c;
	fr_u32 nr;       /* x86-64 syscall number */
	fr_u32 stack_id; /* user stack at exit (same as at entry) */
	fr_s64 ret;      /* return value (negative errno on failure) */
	fr_u64 duration_ns;
	fr_s64 fd;       /* first argument when the call takes an fd */
	fr_u64 count;    /* requested bytes for read/write-like calls */
	fr_u32 sc_flags; /* enum fr_syscall_flags */
	fr_u32 _pad;
};
FR_STATIC_ASSERT(sizeof(struct fr_ev_syscall) == 72, "fr_ev_syscall");

/* Which file an fd names (syscalls family), so findings can name a
 * checkpoint or a data file: one per successful open/openat/openat2/creat,
 * whatever --syscall-min-us says (c.ts_ns: the call's entry), and one per
 * fd a process already had when the recorder attached (source 1, read from
 * /proc/PID/fd).  dup/close are the syscall events'.  path: path_len bytes,
 * NUL-terminated, cut at 255 (as the call passed it: relative paths stay
 * relative). */
enum fr_fd_path_source { FR_FD_PATH_OPEN = 0, FR_FD_PATH_AT_ATTACH = 1 };
#define FR_FD_PATH_MAX 256
struct fr_ev_fd_path {
	struct fr_ev_common c;
	fr_s32 fd;
	fr_u32 open_flags; /* O_* of the call (0 at attach) */
	fr_u16 path_len;   /* bytes before the NUL */
	fr_u16 source;     /* enum fr_fd_path_source */
	fr_u32 _pad;
	char path[FR_FD_PATH_MAX];
};
FR_STATIC_ASSERT(sizeof(struct fr_ev_fd_path) == 296, "fr_ev_fd_path");

/* Process lifecycle.  For FORK, pid is the child and ppid the parent; for
 * EXEC, comm is the new comm; for EXIT, exit_code is the wait status. */
struct fr_ev_proc {
	struct fr_ev_common c;
	fr_u32 ppid;
	fr_s32 exit_code;
	char comm[16];
};
FR_STATIC_ASSERT(sizeof(struct fr_ev_proc) == 48, "fr_ev_proc");

/* ---- CUDA (probe family cuda) ------------------------------------------- */

/* Which function a cuda event is.  Runtime (libcudart) 1..31, then driver
 * (libcuda) 32..63: every id stays below 64 (the analyzer's per-function
 * tables, CUDA_FUNC_LIMIT).  Append-only. */
enum fr_cuda_func {
	FR_CUDA_MALLOC = 1,          /* cudaMalloc(ptr*, bytes) */
	FR_CUDA_FREE = 2,            /* cudaFree(ptr) */
	FR_CUDA_MALLOC_ASYNC = 3,    /* cudaMallocAsync(ptr*, bytes, stream) */
	FR_CUDA_FREE_ASYNC = 4,      /* cudaFreeAsync(ptr, stream) */
	FR_CUDA_MALLOC_MANAGED = 5,  /* cudaMallocManaged(ptr*, bytes, flags) */
	FR_CUDA_MALLOC_HOST = 6,     /* cudaMallocHost(ptr*, bytes): pinned host */
	FR_CUDA_HOST_ALLOC = 7,      /* cudaHostAlloc(ptr*, bytes, flags): pinned host */
	FR_CUDA_FREE_HOST = 8,       /* cudaFreeHost(ptr) */
	FR_CUDA_HOST_REGISTER = 9,   /* cudaHostRegister(ptr, bytes, flags): pins */
	FR_CUDA_HOST_UNREGISTER = 10,/* cudaHostUnregister(ptr) */
	FR_CUDA_MEMCPY = 11,         /* cudaMemcpy(dst, src, bytes, kind) */
	FR_CUDA_MEMCPY_ASYNC = 12,   /* cudaMemcpyAsync(dst, src, bytes, kind, stream) */
	FR_CUDA_LAUNCH_KERNEL = 13,  /* cudaLaunchKernel(func, grid, block, args, shmem, stream) */
	FR_CUDA_STREAM_SYNC = 14,    /* cudaStreamSynchronize(stream) */
	FR_CUDA_DEVICE_SYNC = 15,    /* cudaDeviceSynchronize() */
	FR_CUDA_EVENT_SYNC = 16,     /* cudaEventSynchronize(event): event in ptr */
	FR_CUDA_SET_DEVICE = 17,     /* cudaSetDevice(device): device in `device` */
	FR_CUDA_EVENT_RECORD = 18,   /* cudaEventRecord(event, stream): event in ptr, stream */
	FR_CUDA_EVENT_QUERY = 19,    /* cudaEventQuery(event): event in ptr; result 0 done,
					600 cudaErrorNotReady (never blocks) */
	FR_CUDA_STREAM_WAIT_EVENT = 20, /* cudaStreamWaitEvent(stream, event, flags): event in
					   ptr, stream, flags in kind */
	FR_CUDA_GRAPH_LAUNCH = 21,   /* cudaGraphLaunch(graphExec, stream): graph exec in ptr, stream */
	FR_CU_MEM_ALLOC = 32,        /* cuMemAlloc_v2(ptr*, bytes) */
	FR_CU_MEM_FREE = 33,         /* cuMemFree_v2(ptr) */
	FR_CU_MEM_ALLOC_ASYNC = 34,  /* cuMemAllocAsync(ptr*, bytes, stream) */
	FR_CU_MEM_FREE_ASYNC = 35,   /* cuMemFreeAsync(ptr, stream) */
	FR_CU_MEM_CREATE = 36,       /* cuMemCreate(handle*, bytes, prop, flags): handle in ptr */
	FR_CU_MEM_RELEASE = 37,      /* cuMemRelease(handle): handle in ptr */
	FR_CU_MEM_MAP = 38,          /* cuMemMap(ptr, bytes, offset, handle, flags): handle in src */
	FR_CU_MEM_UNMAP = 39,        /* cuMemUnmap(ptr, bytes) */
	FR_CU_MEM_HOST_ALLOC = 40,   /* cuMemHostAlloc(ptr*, bytes, flags): pinned host */
	FR_CU_LAUNCH_KERNEL = 41,    /* cuLaunchKernel(f, ..., stream, ...) */
	FR_CU_LAUNCH_KERNEL_EX = 42, /* cuLaunchKernelEx(config*, f, ...) */
	FR_CU_MEMCPY = 43,           /* cuMemcpy family; direction in kind */
	FR_CU_MEMCPY_ASYNC = 44,     /* cuMemcpy*Async family; direction in kind */
	FR_CU_EVENT_RECORD = 45,     /* cuEventRecord(event, stream): event in ptr, stream */
	FR_CU_EVENT_QUERY = 46,      /* cuEventQuery(event): event in ptr; result 0 or 600 */
	FR_CU_EVENT_SYNC = 47,       /* cuEventSynchronize(event): event in ptr */
	FR_CU_STREAM_WAIT_EVENT = 48,/* cuStreamWaitEvent(stream, event, flags): event in ptr,
					stream, flags in kind */
	FR_CU_GRAPH_LAUNCH = 49,     /* cuGraphLaunch(graphExec, stream): graph exec in ptr, stream */
};

/* fr_ev_cuda.flags */
enum fr_cuda_flags {
	FR_CUDAF_PTSZ = 1 << 0,     /* the _ptsz / _ptds per-thread-stream variant */
	FR_CUDAF_UNSAMPLED = 1 << 1,/* high-rate call recorded without a stack */
};

/* Copy directions in fr_ev_cuda.kind, cudaMemcpyKind's values. */
enum fr_cuda_copy_kind {
	FR_COPY_H2H = 0, FR_COPY_H2D = 1, FR_COPY_D2H = 2, FR_COPY_D2D = 3, FR_COPY_DEFAULT = 4,
};

/* One CUDA call: entry time in c.ts_ns, the stack of the caller, the
 * arguments that matter and the result.  Field use per func:
 *   allocations: ptr = returned pointer (read at return; 0 on failure), bytes
 *   frees:       ptr
 *   copies:      ptr = dst, src, bytes, kind (enum fr_cuda_copy_kind), stream
 *   launches:    ptr = kernel function address, stream
 *   syncs:       ptr = stream or event
 *   event records and queries: ptr = event; records also stream
 *   stream waits on an event: ptr = event, stream = the waiting stream,
 *                kind = flags
 *   graph launches: ptr = graph exec (cudaGraphExec_t / CUgraphExec), stream
 *   cudaHostAlloc/cudaMallocManaged/cuMemHostAlloc: kind = flags
 * result is every call's return code: for event queries 0 means the work
 * before the event is done, 600 (cudaErrorNotReady / CUDA_ERROR_NOT_READY)
 * that it is not. */
struct fr_ev_cuda {
	struct fr_ev_common c;
	fr_u16 func;        /* enum fr_cuda_func */
	fr_u16 flags;       /* enum fr_cuda_flags */
	fr_u32 stack_id;
	fr_u64 duration_ns;
	fr_s64 result;      /* cudaError_t / CUresult (0 success; 2 out of memory) */
	fr_u64 ptr;
	fr_u64 src;
	fr_u64 bytes;
	fr_u64 stream;
	fr_u32 kind;
	fr_s32 device;      /* the thread's current device (cudaSetDevice), -1 unknown */
};
FR_STATIC_ASSERT(sizeof(struct fr_ev_cuda) == 88, "fr_ev_cuda");

/* ---- NCCL (probe family nccl) ------------------------------------------- */

enum fr_nccl_func {
	FR_NCCL_ALL_REDUCE = 1,
	FR_NCCL_REDUCE_SCATTER = 2,
	FR_NCCL_ALL_GATHER = 3,
	FR_NCCL_BROADCAST = 4,
	FR_NCCL_REDUCE = 5,
	FR_NCCL_SEND = 6,
	FR_NCCL_RECV = 7,
	FR_NCCL_GROUP_START = 8,
	FR_NCCL_GROUP_END = 9,
	FR_NCCL_COMM_INIT_RANK = 10,        /* comm = the new communicator (read at return) */
	FR_NCCL_COMM_INIT_RANK_CONFIG = 11,
	FR_NCCL_COMM_INIT_ALL = 12,
	FR_NCCL_COMM_SPLIT = 13,            /* comm = the new one, count = the parent, peer = color, rank = key */
	FR_NCCL_COMM_DESTROY = 14,
	/* comm = the communicator, count = the asynchronous error it reported
	 * (ncclResult_t); recorded only when that or the call itself is an
	 * error: a watchdog asks often, and a healthy answer is no event */
	FR_NCCL_COMM_GET_ASYNC_ERROR = 15,
};

/* One NCCL call: entry in c.ts_ns, leaving at c.ts_ns + duration_ns.
 * Collectives: comm, count (elements), datatype (ncclDataType_t), op
 * (ncclRedOp_t), root (broadcast/reduce) or peer (send/recv), stream.
 * Communicator init: comm, rank, nranks, uid_hash (FNV-1a 64 of the 128-byte
 * ncclUniqueId, the same on every rank of one communicator).
 * seq (schema version 2): counted in the kernel at entry per (process,
 * communicator), from 1 after the communicator's init or split returned:
 * collectives in one sequence (every rank calls them in the same order, so
 * (communicator, seq) names one collective on every rank), send/recv in
 * another (per process: ranks send and receive different numbers).  A group
 * changes nothing: each call in it is numbered at its own entry; the
 * outermost ncclGroupEnd carries the comm and seq of the first call queued
 * in the group by its thread and, in count, how many were queued (a group
 * that never completes names the call it is stuck on).  0: none (other
 * functions, and traces before version 2). */
struct fr_ev_nccl {
	struct fr_ev_common c;
	fr_u16 func;        /* enum fr_nccl_func */
	fr_u16 flags;
	fr_u32 stack_id;
	fr_u64 duration_ns;
	fr_s64 result;      /* ncclResult_t */
	fr_u64 comm;        /* ncclComm_t (a pointer: per process) */
	fr_u64 count;
	fr_u32 datatype;
	fr_u32 op;
	fr_s32 peer;        /* root or peer rank, -1 when none */
	fr_s32 rank;        /* init: this rank; else -1 */
	fr_s32 nranks;      /* init: communicator size; else -1 */
	fr_u32 seq;         /* number on its communicator (see above); 0 none */
	fr_u64 stream;
	fr_u64 uid_hash;
};
FR_STATIC_ASSERT(sizeof(struct fr_ev_nccl) == 104, "fr_ev_nccl");

/* A call of the --step-marker function: one training step begins. */
struct fr_ev_step {
	struct fr_ev_common c;
	fr_u32 _pad;
	fr_u32 stack_id;
};
FR_STATIC_ASSERT(sizeof(struct fr_ev_step) == 32, "fr_ev_step");

/* ---- scheduler (probe family sched) --------------------------------------- */

/* waker_flags of struct fr_ev_sched */
enum fr_sched_flags {
	/* the wake-up came from an interrupt on an idle CPU (a timer, a disk
	 * or network completion).  An interrupt on a busy CPU names the task
	 * it interrupted as the waker: that cannot be told apart here */
	FR_SCHEDF_WAKER_IRQ = 1 << 0,
	FR_SCHEDF_NO_WAKER = 1 << 1, /* no wake-up seen (it began before attach) */
};

/* A system call of a traced thread in which the thread was off its CPU,
 * blocked (not preempted), for at least --sched-min-us in all.  c.ts_ns is
 * when it first left the CPU in that call, duration_ns the time it spent
 * off CPU in it (blocks times), the waker the task whose wake-up ended its
 * last block, and the stack the user stack of the call. */
struct fr_ev_sched {
	struct fr_ev_common c;
	fr_u32 cpu;          /* the CPU it returned from the call on */
	fr_u32 stack_id;     /* user stack of the call */
	fr_u64 duration_ns;  /* off CPU, summed over its blocks */
	fr_u32 waker_pid;    /* 0: none seen, or the idle task (FR_SCHEDF_WAKER_IRQ) */
	fr_u32 waker_tid;
	fr_s32 nr;           /* x86-64 system call number */
	fr_u16 state;        /* task state of its last block: 1 interruptible, 2 uninterruptible ... */
	fr_u16 waker_flags;  /* enum fr_sched_flags */
	fr_u32 blocks;       /* times it left the CPU blocked in the call */
	fr_u32 _pad;
	char waker_comm[16];
};
FR_STATIC_ASSERT(sizeof(struct fr_ev_sched) == 80, "fr_ev_sched");

/* ---- GPU kernels (probe family gpu: libflightrec_cupti.so, gpu/) --------- */

/* A kernel or graph launch as the CUPTI injection library saw it, on the
 * launching thread: its correlation id joins the kernel records. */
struct fr_ev_gpu_launch {
	struct fr_ev_common c;
	fr_u32 _pad;
	fr_u32 stack_id;        /* the launch's user stack */
	fr_u64 correlation_id;
};
FR_STATIC_ASSERT(sizeof(struct fr_ev_gpu_launch) == 40, "fr_ev_gpu_launch");

#define FR_GPU_KERNEL_NAME 124
/* One kernel's execution, from CUPTI's activity records (c.ts_ns: when the
 * library handed it over, c.pid/tid: the thread that did).  start_ns and
 * end_ns are CLOCK_MONOTONIC: the library registers that clock with CUPTI. */
struct fr_ev_gpu_kernel {
	struct fr_ev_common c;
	fr_u32 _pad;
	fr_u32 dropped;         /* kernel records the library lost before this batch */
	fr_u64 start_ns;
	fr_u64 end_ns;
	fr_u64 correlation_id;
	fr_u32 device;
	fr_u32 context;
	fr_u32 stream;
	fr_u32 grid[3];
	fr_u32 block[3];
	fr_u32 shared_bytes;
	fr_u32 registers;
	char name[FR_GPU_KERNEL_NAME];
};
FR_STATIC_ASSERT(sizeof(struct fr_ev_gpu_kernel) == 224, "fr_ev_gpu_kernel");

/* ---- RDMA verbs (probe family rdma) ------------------------------------- */

enum fr_rdma_func {
	FR_RDMA_OPEN_DEVICE = 1,   /* ptr = context */
	FR_RDMA_CREATE_QP = 2,     /* ptr = qp, qp_num, obj = pd */
	FR_RDMA_MODIFY_QP = 3,     /* qp_num, qp_state, attr_mask; at RTR: dest_qp_num, path_mtu, dlid, gid */
	FR_RDMA_DESTROY_QP = 4,    /* qp_num */
	FR_RDMA_REG_MR = 5,        /* ptr = mr, addr, length, lkey, rkey, access */
	FR_RDMA_DEREG_MR = 6,      /* ptr = mr, lkey */
	FR_RDMA_CREATE_CQ = 7,     /* ptr = cq, length = cqe */
	FR_RDMA_REG_DMABUF_MR = 8, /* like REG_MR */
	FR_RDMA_CREATE_QP_EX = 9,  /* like CREATE_QP */
	FR_RDMA_OPS = 10,          /* a context's provider functions, read at open_device or
				      create_qp return: ptr = context, addr = post_send,
				      length = post_recv, obj = poll_cq */
};

/* One verbs control-path call (entry time, duration, result). */
struct fr_ev_rdma_ctrl {
	struct fr_ev_common c;
	fr_u16 func;       /* enum fr_rdma_func */
	fr_u16 flags;
	fr_u32 stack_id;
	fr_u64 duration_ns;
	fr_s64 result;     /* return value: int result, or 0/1 for pointer results */
	fr_u64 ptr;        /* the object created / destroyed */
	fr_u64 obj;        /* a related object (pd, context) */
	fr_u32 qp_num;
	fr_u32 dest_qp_num;
	fr_u32 qp_state;   /* enum ibv_qp_state requested */
	fr_u32 attr_mask;
	fr_u32 path_mtu;   /* enum ibv_mtu */
	fr_u16 dlid;
	fr_u8 port_num;
	fr_u8 _pad;
	fr_u8 gid[16];     /* remote GID at RTR */
	fr_u64 addr;       /* MR address */
	fr_u64 length;     /* MR length, CQ entries */
	fr_u32 lkey;
	fr_u32 rkey;
	fr_u32 access;
	fr_u32 _pad2;
};
FR_STATIC_ASSERT(sizeof(struct fr_ev_rdma_ctrl) == 136, "fr_ev_rdma_ctrl");

enum fr_rdma_post_flags {
	FR_RDMA_POST_RECV = 1 << 0,     /* ibv_post_recv (else post_send) */
	FR_RDMA_POST_SIGNALED = 1 << 1, /* IBV_SEND_SIGNALED set */
	FR_RDMA_POST_FAILED = 1 << 2,   /* the post call returned an error at or before this WR */
	FR_RDMA_POST_TRUNCATED = 1 << 3,/* the chain was longer than the probe walks */
};

/* One work request posted (one event per WR of the chain; c.ts_ns is the
 * entry time of the post call, wr_index its position in the chain). */
struct fr_ev_rdma_post {
	struct fr_ev_common c;
	fr_u64 wr_id;
	fr_u64 bytes;      /* sum of the SGE lengths */
	fr_u32 qp_num;
	fr_u32 opcode;     /* enum ibv_wr_opcode (0 for receives) */
	fr_u16 num_sge;
	fr_u16 flags;      /* enum fr_rdma_post_flags */
	fr_u16 wr_index;
	fr_u16 _pad;
	fr_s32 result;     /* the post call's return value */
	fr_u32 _pad2;
};
FR_STATIC_ASSERT(sizeof(struct fr_ev_rdma_post) == 64, "fr_ev_rdma_post");

/* One work completion returned by poll_cq (c.ts_ns is the return time). */
struct fr_ev_rdma_cqe {
	struct fr_ev_common c;
	fr_u64 wr_id;
	fr_u32 status;     /* enum ibv_wc_status */
	fr_u32 opcode;     /* enum ibv_wc_opcode */
	fr_u32 byte_len;
	fr_u32 qp_num;
	fr_u32 src_qp;
	fr_u32 vendor_err;
	fr_u64 cq;
};
FR_STATIC_ASSERT(sizeof(struct fr_ev_rdma_cqe) == 64, "fr_ev_rdma_cqe");

/* Ring form of a raw user stack: the trailer of an event's ring record
 * (FR_RECF_USTACK), laid out like fr_rec_ustack with h.type FR_RING_USTACK
 * and h.size the trailer's own size. */
struct fr_ring_ustack {
	struct fr_rec_hdr h;
	fr_u32 _unused;
	fr_u32 pid;
	fr_u32 tid;
	fr_u16 n_kernel;
	fr_u16 n_py;
	fr_u32 stack_len;
	fr_u16 flags;
	fr_u16 py_version;
	fr_u64 regs[FR_USTACK_REGS];
};
FR_STATIC_ASSERT(sizeof(struct fr_ring_ustack) == 168, "fr_ring_ustack");
/* In the ring record, the header is followed by n_kernel kernel ips, n_py
 * Python frames and stack_len stack bytes, as in FR_REC_USTACK, nothing in
 * between. */
/* Stack scratch slots per CPU in the BPF programs.  Programs on one CPU
 * nest: the CPU-sample program runs from the timer interrupt inside a uprobe
 * or system-call program (those do not block other BPF programs the way
 * kprobes do), and on a preemptible kernel a task-context program can be
 * preempted (migration disabled) by another task's.  Each program claims a
 * free slot, so none writes into another's record; two levels are the usual
 * worst case. */
#define FR_USTACK_SLOTS 4
/* Largest fixed part of an event that carries an fr_ring_ustack trailer. */
#define FR_RING_EV_MAX 144

/* Every event that carries a stack keeps its stack_id at this offset, so the
 * recorder's drain patches it without knowing the event type. */
#define FR_EV_STACK_ID_OFFSET 28
#ifndef __bpf__
#include <stddef.h>
FR_STATIC_ASSERT(offsetof(struct fr_ev_cpu_sample, stack_id) == FR_EV_STACK_ID_OFFSET, "stack_id");
FR_STATIC_ASSERT(offsetof(struct fr_ev_syscall, stack_id) == FR_EV_STACK_ID_OFFSET, "stack_id");
FR_STATIC_ASSERT(offsetof(struct fr_ev_cuda, stack_id) == FR_EV_STACK_ID_OFFSET, "stack_id");
FR_STATIC_ASSERT(offsetof(struct fr_ev_nccl, stack_id) == FR_EV_STACK_ID_OFFSET, "stack_id");
FR_STATIC_ASSERT(offsetof(struct fr_ev_rdma_ctrl, stack_id) == FR_EV_STACK_ID_OFFSET, "stack_id");
FR_STATIC_ASSERT(offsetof(struct fr_ev_step, stack_id) == FR_EV_STACK_ID_OFFSET, "stack_id");
FR_STATIC_ASSERT(offsetof(struct fr_ev_sched, stack_id) == FR_EV_STACK_ID_OFFSET, "stack_id");
FR_STATIC_ASSERT(offsetof(struct fr_ev_gpu_launch, stack_id) == FR_EV_STACK_ID_OFFSET, "stack_id");
#endif

#ifndef __bpf__
FR_STATIC_ASSERT(sizeof(struct fr_ev_rdma_ctrl) <= FR_RING_EV_MAX, "ring ev max");
FR_STATIC_ASSERT(sizeof(struct fr_ev_nccl) <= FR_RING_EV_MAX, "ring ev max");
FR_STATIC_ASSERT(sizeof(struct fr_ev_cuda) <= FR_RING_EV_MAX, "ring ev max");
#endif

#endif
