/* flightrec event ABI: the records BPF programs put in the ring buffer and
 * the records the trace file holds.  Shared by bpf/, recorder/, format/ and
 * analyzer/, so it depends on nothing but fixed-width integer types.
 *
 * Rules: little-endian, every struct 8-byte aligned with explicit padding,
 * a static assertion on every size, type numbers append-only (never renumber,
 * never reuse).  format/SPEC.md documents each record field by field.
 *
 * Every record starts with struct fr_rec_hdr.  `size` is the total size of the
 * record in bytes including the header, always a multiple of 8, so a reader
 * skips a record whose type it does not know.
 */
#ifndef FLIGHTREC_EVENTS_H
#define FLIGHTREC_EVENTS_H

#ifdef __bpf__
typedef __u8 fr_u8;
typedef __u16 fr_u16;
typedef __u32 fr_u32;
typedef __u64 fr_u64;
typedef __s32 fr_s32;
typedef __s64 fr_s64;
#define FR_STATIC_ASSERT(c, m) _Static_assert(c, m)
#else
#include <stdint.h>
typedef uint8_t fr_u8;
typedef uint16_t fr_u16;
typedef uint32_t fr_u32;
typedef uint64_t fr_u64;
typedef int32_t fr_s32;
typedef int64_t fr_s64;
#define FR_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

/* ---- record types (append-only) ---------------------------------------- */
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

	/* metadata produced in user space by the recorder */
	FR_REC_PROCESS = 0x100, /* struct fr_rec_process + cmdline bytes */
	FR_REC_MAPPING = 0x101, /* struct fr_rec_mapping + path bytes */
	FR_REC_STACK = 0x102,   /* struct fr_rec_stack + ips[] */
	FR_REC_DSO = 0x103,     /* struct fr_rec_dso + path + syms[] + strtab */
	FR_REC_CLOCK = 0x104,   /* struct fr_rec_clock */
	FR_REC_STATS = 0x105,   /* struct fr_rec_stats + probes[] */
	FR_REC_SCHEMA = 0x106,  /* struct fr_rec_schema + description bytes */
	FR_REC_THREAD = 0x107,  /* struct fr_rec_thread: thread name */
	FR_REC_PROC_ENV = 0x108,  /* struct fr_rec_proc_env + "KEY=VALUE\0"... */
	FR_REC_ATTACH = 0x109,    /* struct fr_rec_attach + text: a probe attach result */
	FR_REC_RDMA_COUNTERS = 0x10a, /* struct fr_rec_rdma_counters + values */
	FR_REC_USTACK = 0x10b,    /* struct fr_rec_ustack: a raw user stack (--stack dwarf) */
	FR_REC_UNWIND = 0x10c,    /* struct fr_rec_unwind + reduced ELF image */
	FR_REC_PYCODE = 0x10d,    /* struct fr_rec_pycode + names + line table */
	FR_REC_PYTHON = 0x10e,    /* struct fr_rec_python: a process's interpreter */

	/* ring buffer only, never in a file */
	FR_RING_USTACK = 0xff00,  /* struct fr_ring_ustack: trailer of its event's ring record */
};

/* record flags (fr_rec_hdr.flags) */
enum fr_rec_flags {
	/* ring buffer only: a struct fr_raw_stack follows the fixed part; the
	 * recorder interns it into the stack table and writes stack_id instead.
	 * Never set in a file. */
	FR_RECF_RAW_STACK = 1 << 0,
	/* ring buffer only: a struct fr_ring_ustack (with its fixed arrays and
	 * stack bytes) follows the event's fixed part in the same ring record;
	 * the recorder writes it as an FR_REC_USTACK and the event's stack_id
	 * names it.  One record, so nothing can come between an event and its
	 * stack.  Never set in a file. */
	FR_RECF_USTACK = 1 << 1,
};

struct fr_rec_hdr {
	fr_u32 size;  /* total record bytes incl. this header, multiple of 8 */
	fr_u16 type;  /* enum fr_rec_type */
	fr_u16 flags; /* enum fr_rec_flags */
};
FR_STATIC_ASSERT(sizeof(struct fr_rec_hdr) == 8, "fr_rec_hdr");

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

/* Maximum frames the BPF side captures per stack part. */
#define FR_MAX_USER_FRAMES 127
#define FR_MAX_KERNEL_FRAMES 64

/* Ring-buffer trailer of events with FR_RECF_RAW_STACK (never in a file).
 * Fixed regions keep the BPF verifier's bounds simple; each part is leaf
 * first and only its first n_* entries are meaningful. */
struct fr_raw_stack {
	fr_u16 n_user;
	fr_u16 n_kernel;
	fr_u32 _pad;
	fr_u64 kernel_ips[FR_MAX_KERNEL_FRAMES];
	fr_u64 user_ips[FR_MAX_USER_FRAMES];
};
FR_STATIC_ASSERT(sizeof(struct fr_raw_stack) == 8 + 8 * 191, "fr_raw_stack");

/* Probe families, indexing the per-CPU drop counters. */
enum fr_probe_id {
	FR_PROBE_PROC = 0,
	FR_PROBE_CPU = 1,
	FR_PROBE_SYSCALLS = 2,
	FR_PROBE_CUDA = 3,
	FR_PROBE_NCCL = 4,
	FR_PROBE_RDMA = 5,
	FR_PROBE_STEP = 6,
	FR_PROBE_MAX = 16,
};

/* Why something was lost.  Every loss is counted per (probe, reason) with
 * the window it happened in, in the kernel (fr_drops) or in the recorder,
 * and written to FR_REC_STATS and END (struct fr_drop_count).  Append-only. */
enum fr_drop_reason {
	FR_DROP_RING_FULL = 0,   /* event lost: the BPF ring buffer was full */
	FR_DROP_STACK_BUSY = 1,  /* event kept, its stack lost: every stack scratch
				    slot of the CPU was in use (programs nested
				    deeper than FR_USTACK_SLOTS) */
	FR_DROP_NO_ENTRY = 2,    /* event lost: a return probe found no entry
				    state (the in-flight call table was full) */
	FR_DROP_MALFORMED = 3,   /* event lost: the recorder could not parse its
				    ring record */
	FR_DROP_CHUNK_LOST = 4,  /* records lost with a chunk the writer could not
				    keep (queue over its limit, write error) */
	FR_DROP_NO_MEMORY = 5,   /* event lost: the recorder could not allocate
				    room for it */
	FR_DROP_REASON_MAX = 8,
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

/* Which function a cuda event is.  Runtime (libcudart) first, then driver
 * (libcuda).  Append-only. */
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
 *   cudaHostAlloc/cudaMallocManaged/cuMemHostAlloc: kind = flags */
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
};

/* One NCCL call: entry in c.ts_ns, leaving at c.ts_ns + duration_ns.
 * Collectives: comm, count (elements), datatype (ncclDataType_t), op
 * (ncclRedOp_t), root (broadcast/reduce) or peer (send/recv), stream.
 * Communicator init: comm, rank, nranks, uid_hash (FNV-1a 64 of the 128-byte
 * ncclUniqueId, the same on every rank of one communicator). */
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
	fr_u32 _pad;
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

/* ---- user-space metadata records --------------------------------------- */

/* A process as first seen.  cmdline_len bytes of NUL-separated argv follow,
 * then padding to 8. */
struct fr_rec_process {
	struct fr_rec_hdr h;
	fr_u64 ts_ns;         /* when the recorder saw it (CLOCK_MONOTONIC) */
	fr_u64 start_time_ns; /* process start, CLOCK_MONOTONIC (pid reuse) */
	fr_u32 pid;
	fr_u32 ppid;
	fr_u32 ns_pid;   /* pid inside its own pid namespace (0 unknown) */
	fr_u32 cmdline_len;
	char comm[16];
};
FR_STATIC_ASSERT(sizeof(struct fr_rec_process) == 56, "fr_rec_process");

/* A thread name.  */
struct fr_rec_thread {
	struct fr_rec_hdr h;
	fr_u64 ts_ns;
	fr_u32 pid;
	fr_u32 tid;
	char comm[16];
};
FR_STATIC_ASSERT(sizeof(struct fr_rec_thread) == 40, "fr_rec_thread");

/* An executable mapping of a process.  path_len bytes of path follow (no NUL),
 * then padding.  dso_id names the FR_REC_DSO that describes the file (0 when
 * the file could not be read: anonymous/JIT memory or vanished file). */
struct fr_rec_mapping {
	struct fr_rec_hdr h;
	fr_u64 ts_ns;
	fr_u32 pid;
	fr_u32 dso_id;
	fr_u64 start;
	fr_u64 end;
	fr_u64 pgoff;   /* file offset of start */
	fr_u8 build_id[20];
	fr_u8 build_id_len;
	fr_u8 _pad[1];
	fr_u16 path_len;
};
FR_STATIC_ASSERT(sizeof(struct fr_rec_mapping) == 72, "fr_rec_mapping");

/* A deduplicated stack.  n_kernel + n_user u64 instruction pointers follow:
 * kernel frames leaf first, then user frames leaf first.  pid owns the user
 * addresses (the same ips in two processes are two stacks). */
struct fr_rec_stack {
	struct fr_rec_hdr h;
	fr_u32 stack_id;
	fr_u32 pid;
	fr_u16 n_kernel;
	fr_u16 n_user;
	fr_u32 _pad;
};
FR_STATIC_ASSERT(sizeof(struct fr_rec_stack) == 24, "fr_rec_stack");

/* Symbols of one file, so the analyzer never needs the node's files.
 * Layout after the fixed part: path (path_len bytes), padding to 8,
 * nsyms x struct fr_dso_sym sorted by offset, strtab (strtab_len bytes of
 * NUL-terminated names), padding to 8.
 * Symbol offsets are FILE OFFSETS (vaddr translated through the PT_LOAD that
 * holds it), so ip - mapping.start + mapping.pgoff indexes them directly.
 * The kernel is dso "[kernel.kallsyms]" with absolute addresses (kind 1). */
struct fr_rec_dso {
	struct fr_rec_hdr h;
	fr_u32 dso_id;
	fr_u32 nsyms;
	fr_u32 strtab_len;
	fr_u16 path_len;
	fr_u8 kind;         /* 0 ELF file, 1 kernel (absolute addresses) */
	fr_u8 build_id_len;
	fr_u8 build_id[20];
	fr_u32 _pad;
};
FR_STATIC_ASSERT(sizeof(struct fr_rec_dso) == 48, "fr_rec_dso");

struct fr_dso_sym {
	fr_u64 offset;   /* file offset (kind 0) or address (kind 1) */
	fr_u32 size;     /* 0 when unknown: extends to the next symbol */
	fr_u32 name_off; /* into strtab */
};
FR_STATIC_ASSERT(sizeof(struct fr_dso_sym) == 16, "fr_dso_sym");

/* Launcher environment of a process, read when it is first seen: selected
 * variables (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR,
 * MASTER_PORT, CUDA_VISIBLE_DEVICES, ...) as len bytes of NUL-terminated
 * "KEY=VALUE" strings, then padding to 8. */
struct fr_rec_proc_env {
	struct fr_rec_hdr h;
	fr_u64 ts_ns;
	fr_u32 pid;
	fr_u32 len;
};
FR_STATIC_ASSERT(sizeof(struct fr_rec_proc_env) == 24, "fr_rec_proc_env");

/* What a probe attached to, or why it could not (the start-up summary, kept
 * in the trace).  text_len bytes of text follow ("path: reason"), then
 * padding. */
enum fr_attach_status {
	FR_ATTACH_OK = 0,
	FR_ATTACH_FAILED = 1,
	FR_ATTACH_SKIPPED = 2,
	FR_ATTACH_SINGLE_STEPPED = 3, /* attached, but the first instruction is
					 single-stepped by the kernel (~15x cost) */
};
struct fr_rec_attach {
	struct fr_rec_hdr h;
	fr_u64 ts_ns;
	fr_u32 pid;        /* 0: all processes */
	fr_u16 probe;      /* enum fr_probe_id */
	fr_u16 status;     /* enum fr_attach_status */
	char symbol[48];
	fr_u64 gap_ns;     /* mapping seen -> probe attached */
	fr_u32 text_len;
	fr_u32 _pad;
};
FR_STATIC_ASSERT(sizeof(struct fr_rec_attach) == 88, "fr_rec_attach");

/* RDMA port counters, sampled every second: n values follow. */
struct fr_rdma_counter {
	char name[40];     /* e.g. "mlx5_0/1/rnr_nak_retry_err" (device/port/counter) */
	fr_u64 delta;      /* increase since the previous sample */
};
FR_STATIC_ASSERT(sizeof(struct fr_rdma_counter) == 48, "fr_rdma_counter");
struct fr_rec_rdma_counters {
	struct fr_rec_hdr h;
	fr_u64 ts_ns;
	fr_u64 interval_ns;
	fr_u32 n;
	fr_u32 _pad;
};
FR_STATIC_ASSERT(sizeof(struct fr_rec_rdma_counters) == 32, "fr_rec_rdma_counters");

/* ---- dwarf-mode stacks and Python frames --------------------------------- */

#define FR_USTACK_REGS 17      /* x86-64 DWARF registers 0..16: rax rdx rcx rbx
				  rsi rdi rbp rsp r8..r15 rip */
#define FR_MAX_PY_FRAMES 64

enum fr_py_frame_flags {
	FR_PYF_ENTRY = 1 << 0, /* 3.11: the frame a C call of the eval loop entered
				  (is_entry): a native _PyEval_EvalFrameDefault ends here */
	FR_PYF_SHIM = 1 << 1,  /* 3.12+: a C-stack shim frame (owner CSTACK): a segment
				  boundary, not a Python function */
};

/* One Python frame, as walked in BPF from the thread's interpreter state. */
struct fr_py_frame {
	fr_u64 code;       /* PyCodeObject address (see FR_REC_PYCODE) */
	fr_u32 instr_off;  /* bytes from co_code_adaptive (3.10: f_lasti * 2) */
	fr_u8 flags;       /* enum fr_py_frame_flags */
	fr_u8 _pad;
	fr_u16 fingerprint; /* co_firstlineno & 0xffff at the event: a freed code
			       object's address is reused; the FR_REC_PYCODE whose
			       firstlineno matches is the one */
};
FR_STATIC_ASSERT(sizeof(struct fr_py_frame) == 16, "fr_py_frame");

enum fr_ustack_flags {
	FR_USTACK_TRUNCATED = 1 << 0,   /* the copy met an unreadable page before --stack-size
					   bytes (usually the stack's top: not a loss) */
	FR_USTACK_PY_TRUNCATED = 1 << 1,/* more Python frames than FR_MAX_PY_FRAMES */
	FR_USTACK_PY_ERROR = 1 << 2,    /* the Python walk failed (unreadable memory) */
	FR_USTACK_PY_NO_THREAD = 1 << 3,/* a Python process, but this thread has no state */
};

/* A raw user stack (--stack dwarf), referenced by stack_id like
 * FR_REC_STACK (one id space).  After the fixed part: n_kernel u64 kernel ips
 * (leaf first), n_py struct fr_py_frame (leaf first), stack_len bytes of the
 * user stack copied from regs[7] (rsp) upward, padding to 8.  The analyzer
 * unwinds it with the FR_REC_UNWIND data of the mapped files. */
struct fr_rec_ustack {
	struct fr_rec_hdr h;
	fr_u32 stack_id;
	fr_u32 pid;
	fr_u32 tid;
	fr_u16 n_kernel;
	fr_u16 n_py;
	fr_u32 stack_len;
	fr_u16 flags;      /* enum fr_ustack_flags */
	fr_u16 py_version; /* 310, 311 ... 0 when not a Python thread */
	fr_u64 regs[FR_USTACK_REGS];
};
FR_STATIC_ASSERT(sizeof(struct fr_rec_ustack) == 168, "fr_rec_ustack");

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
/* In the ring record, fixed-size arrays follow the header (kernel ips, then
 * Python frames), then the stack bytes at this offset. */
#define FR_RING_USTACK_STACK_OFFSET (168 + 8 * FR_MAX_KERNEL_FRAMES + 16 * FR_MAX_PY_FRAMES)
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

/* Unwind data of one file, for dwarf-mode stacks: image_len bytes of a
 * reduced ELF image follow (the ELF header, the program headers and the
 * sections .eh_frame_hdr, .eh_frame and .debug_frame at their original
 * addresses), then padding.  The file's symbols are in FR_REC_DSO records
 * with the same dso_id. */
struct fr_rec_unwind {
	struct fr_rec_hdr h;
	fr_u32 dso_id;
	fr_u32 image_len;
	fr_u8 build_id_len;
	fr_u8 build_id[20];
	fr_u8 _pad[3];
};
FR_STATIC_ASSERT(sizeof(struct fr_rec_unwind) == 40, "fr_rec_unwind");

/* A Python code object, resolved by the recorder while the process lived.
 * qualname_len bytes of qualified name, filename_len bytes of file name and
 * linetable_len bytes of co_linetable (3.10: co_lnotab-style pairs; 3.11+:
 * the location table) follow, then padding. */
struct fr_rec_pycode {
	struct fr_rec_hdr h;
	fr_u64 code;        /* the PyCodeObject address, as in fr_py_frame */
	fr_u32 pid;
	fr_u32 firstlineno;
	fr_u16 py_version;  /* 310, 311 ... */
	fr_u16 qualname_len;
	fr_u16 filename_len;
	fr_u16 _pad;
	fr_u32 linetable_len;
	fr_u32 _pad2;
};
FR_STATIC_ASSERT(sizeof(struct fr_rec_pycode) == 40, "fr_rec_pycode");

enum fr_python_status {
	FR_PYTHON_OK = 0,          /* frames are walked */
	FR_PYTHON_UNSUPPORTED = 1, /* a version without offsets: native stacks only */
	FR_PYTHON_NO_RUNTIME = 2,  /* _PyRuntime not found (stripped?) */
};

/* A process runs CPython: its version and where the walk starts. */
struct fr_rec_python {
	struct fr_rec_hdr h;
	fr_u64 ts_ns;
	fr_u32 pid;
	fr_u16 py_version; /* major*100 + minor */
	fr_u16 status;     /* enum fr_python_status */
	fr_u64 runtime_addr; /* &_PyRuntime in the process */
};
FR_STATIC_ASSERT(sizeof(struct fr_rec_python) == 32, "fr_rec_python");

/* A clock anchor: the same instant read on both clocks. */
struct fr_rec_clock {
	struct fr_rec_hdr h;
	fr_u64 mono_ns;
	fr_u64 real_ns;
};
FR_STATIC_ASSERT(sizeof(struct fr_rec_clock) == 24, "fr_rec_clock");

/* Per-probe counters, cumulative since start.  Written every second and in
 * the END chunk, so a killed recorder still reports its drops. */
struct fr_probe_stats {
	char name[16];   /* "cpu", "syscalls", "proc", "writer" ... */
	fr_u64 events;   /* events delivered */
	fr_u64 drops;    /* events lost, every reason (stacks lost alone are not
			    counted here: see struct fr_drop_count) */
};
FR_STATIC_ASSERT(sizeof(struct fr_probe_stats) == 32, "fr_probe_stats");

/* One (probe, reason) loss counter, after the probes of FR_REC_STATS and
 * END; only counters that are not zero are written. */
struct fr_drop_count {
	char probe[16];  /* as fr_probe_stats.name */
	fr_u16 reason;   /* enum fr_drop_reason */
	fr_u16 _pad[3];
	fr_u64 count;
	fr_u64 first_ns; /* CLOCK_MONOTONIC window of the losses (0: unknown) */
	fr_u64 last_ns;
};
FR_STATIC_ASSERT(sizeof(struct fr_drop_count) == 48, "fr_drop_count");

struct fr_rec_stats {
	struct fr_rec_hdr h;
	fr_u64 ts_ns;
	fr_u64 cpu_user_ns;  /* recorder's own CPU time so far */
	fr_u64 cpu_sys_ns;
	fr_u32 n_probes;     /* struct fr_probe_stats follow */
	fr_u32 n_drops;      /* then struct fr_drop_count (0 in files before 1.1) */
};
FR_STATIC_ASSERT(sizeof(struct fr_rec_stats) == 40, "fr_rec_stats");

/* Event schema: one per record type the writer knows, in the SCHEMA chunk.
 * desc_len bytes follow: "field:type,field:type,..." (type u8..u64/s32/s64/
 * char[N]/var), padding to 8. */
struct fr_rec_schema {
	struct fr_rec_hdr h;
	fr_u16 rec_type;
	fr_u16 version;
	fr_u32 fixed_size; /* size of the fixed part; records may be longer */
	char name[24];
	fr_u32 desc_len;
	fr_u32 _pad;
};
FR_STATIC_ASSERT(sizeof(struct fr_rec_schema) == 48, "fr_rec_schema");

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
#endif

#define FR_ALIGN8(x) (((x) + 7u) & ~7u)

#ifndef __bpf__
/* Names of enum fr_drop_reason, as info, the report and SQLite show them. */
static inline const char *fr_drop_reason_name(unsigned reason)
{
	static const char *const names[FR_DROP_REASON_MAX] = {
		[FR_DROP_RING_FULL] = "ring_full",   [FR_DROP_STACK_BUSY] = "stack_busy",
		[FR_DROP_NO_ENTRY] = "no_entry",     [FR_DROP_MALFORMED] = "malformed",
		[FR_DROP_CHUNK_LOST] = "chunk_lost", [FR_DROP_NO_MEMORY] = "no_memory",
	};
	return reason < FR_DROP_REASON_MAX && names[reason] ? names[reason] : "unknown";
}
FR_STATIC_ASSERT(sizeof(struct fr_ev_rdma_ctrl) <= FR_RING_EV_MAX, "ring ev max");
FR_STATIC_ASSERT(sizeof(struct fr_ev_nccl) <= FR_RING_EV_MAX, "ring ev max");
FR_STATIC_ASSERT(sizeof(struct fr_ev_cuda) <= FR_RING_EV_MAX, "ring ev max");
#endif

#endif
