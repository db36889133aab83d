/* The records of a flightrec trace that are not a probe family's events:
 * the record header every record starts with, and the metadata records the
 * recorder writes (processes, mappings, stacks, symbols, unwind data,
 * Python code, clock anchors, statistics, the schema).  The container
 * (chunks, index, end) is frec_format.h.  Depends on nothing but
 * fixed-width integer types, so the BPF programs include it too (through
 * bpf/events.h, which holds the families' event records).
 *
 * Rules: little-endian, every struct 8-byte aligned with explicit padding,
 * a static assertion on every size, type numbers append-only (never
 * renumber, never reuse).  format/SPEC.md documents each record field by
 * field.
 *
 * Every record starts with struct fr_rec_hdr.  `size` is the total size of
 * the record in bytes including the header, always a multiple of 8, so a
 * reader skips a record whose type it does not know. */
#ifndef FLIGHTREC_FREC_RECORDS_H
#define FLIGHTREC_FREC_RECORDS_H

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

/* Metadata record types (append-only); the families' event types are
 * below 0x100 (bpf/events.h). */
enum fr_meta_type {
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
	FR_REC_SNAPSHOT = 0x110,  /* struct fr_rec_snapshot + detail text: why and what a
				     flight-recorder snapshot holds */
	FR_REC_INFLIGHT = 0x11a,  /* struct fr_rec_inflight + calls[]: calls entered and not
				     returned when the recorder looked */
	FR_REC_PROC_CGROUP = 0x11c, /* struct fr_rec_proc_cgroup + path: the cgroup a
				       process ran in (its container, pod, batch job) */
	FR_REC_SYSCALL_DROPS = 0x11b, /* struct fr_rec_syscall_drops + counts[]: the
					 syscalls family's ring-full losses per call number */
};

struct fr_rec_hdr {
	fr_u32 size;  /* total record bytes incl. this header, multiple of 8 */
	fr_u16 type;  /* enum fr_rec_type */
	fr_u16 flags; /* enum fr_rec_flags */
};
FR_STATIC_ASSERT(sizeof(struct fr_rec_hdr) == 8, "fr_rec_hdr");

#define FR_ALIGN8(x) (((x) + 7u) & ~7u)

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
	FR_DROP_NOT_ATTACHED = 6, /* events of a probe attached at run time may be
				     lost: a program could use what the probe watches
				     before it was attached (rdma: one per QP created,
				     or context handed back, while the provider's
				     data path was not attached and the process was
				     not held for it); the events themselves were
				     never seen, so they are not counted one by one */
	FR_DROP_REASON_MAX = 8,
};
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

/* The cgroup path a traced process is in (the cgroup v2 line of
 * /proc/PID/cgroup, else on a v1-only host name=systemd's), when its
 * metadata is written: the container, Kubernetes pod or Slurm step it ran
 * in.  len bytes of path follow, not NUL-terminated, at most
 * FR_CGROUP_PATH_MAX; the layout is FR_REC_PROC_ENV's. */
struct fr_rec_proc_cgroup {
	struct fr_rec_hdr h;
	fr_u64 ts_ns;
	fr_u32 pid;
	fr_u32 len;
};
FR_STATIC_ASSERT(sizeof(struct fr_rec_proc_cgroup) == 24, "fr_rec_proc_cgroup");
#define FR_CGROUP_PATH_MAX 4096

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
	FR_USTACK_SPARSE = 1 << 4,      /* only what the recorder's unwind read is kept: the
					   other stack bytes and registers are zero, the copy
					   ends after the last byte read (format 1.2) */
	FR_USTACK_BOUNDED = 1 << 5,     /* copied only up to the thread's stack top as the
					   recorder's unwind of an earlier copy found it (a
					   depth hint), not --stack-size bytes */
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

/* What wrote a flight-recorder snapshot (flightrec record --ring). */
enum fr_snapshot_trigger {
	FR_TRIGGER_SIGNAL = 1,     /* SIGUSR2 to the recorder */
	FR_TRIGGER_OOM = 2,        /* a CUDA allocation returned out-of-memory */
	FR_TRIGGER_NCCL_ERROR = 3, /* an NCCL call or its async error check failed */
	FR_TRIGGER_HANG = 4,       /* a collective or synchronize did not complete */
	FR_TRIGGER_EXIT = 5,       /* a traced process died on a signal or exited non-zero */
};

/* What came after an out-of-memory allocation (a caching allocator frees
 * its cache and retries). */
enum fr_oom_retry {
	FR_OOM_RETRY_NONE = 0,    /* not an OOM snapshot */
	FR_OOM_RETRY_UNSEEN = 1,  /* the thread allocated nothing more before the snapshot */
	FR_OOM_RETRY_OK = 2,      /* its next allocation of at least that size succeeded */
	FR_OOM_RETRY_FAILED = 3,  /* its next allocation failed too */
};

/* One per snapshot, in a META chunk: the trigger, the window of events the
 * ring still held, and what was carried over from before it.  detail_len
 * bytes of text follow (what triggered, in words). */
struct fr_rec_snapshot {
	struct fr_rec_hdr h;
	fr_u64 trigger_ns;        /* CLOCK_MONOTONIC of the trigger */
	fr_u64 window_first_ns;   /* first event the ring held (0: none) */
	fr_u64 window_last_ns;    /* last event */
	fr_u64 evicted_records;   /* records that left the ring before it, whole run */
	fr_u64 carried_bytes;     /* device bytes of the allocations carried over */
	fr_u32 carried_allocs;    /* allocations live at the window's start, written
				     ahead of the window's events (their own records) */
	fr_u32 number;            /* N of FILE-N.ext */
	fr_u16 trigger;           /* enum fr_snapshot_trigger */
	fr_u16 oom_retry;         /* enum fr_oom_retry */
	fr_u32 suppressed;        /* triggers not written since the previous snapshot
				     (rate limit, caps) */
	fr_u32 pid;               /* process that triggered (0: none, SIGUSR2) */
	fr_u32 detail_len;
};
FR_STATIC_ASSERT(sizeof(struct fr_rec_snapshot) == 72, "fr_rec_snapshot");

/* ---- calls in flight ------------------------------------------------------ */

/* One call the recorder found entered and not returned (read from the BPF
 * per-call entry state, bpf/call_state.h): an NCCL collective, send/recv,
 * outermost group end or communicator init, or a CUDA synchronize. */
struct fr_inflight_call {
	fr_u64 entry_ns;   /* CLOCK_MONOTONIC of the entry */
	fr_u32 pid;
	fr_u32 tid;
	fr_u16 probe;      /* enum fr_probe_id: FR_PROBE_NCCL or FR_PROBE_CUDA */
	fr_u16 func;       /* the family's function (enum fr_nccl_func, fr_cuda_func) */
	fr_u32 seq;        /* nccl: the call's number on its communicator, as
			      FR_EV_NCCL.seq; 0 none */
	fr_u64 comm;       /* nccl: ncclComm_t */
	fr_u64 count;      /* nccl: elements; group end: calls queued in the group */
	fr_u64 handle;     /* nccl: the stream; cuda: the stream or event synchronized
			      (0: device synchronize) */
	fr_u32 datatype;   /* nccl: ncclDataType_t */
	fr_u32 op;         /* nccl: ncclRedOp_t */
	fr_s32 peer;       /* nccl: root or peer rank, -1 none */
	fr_u16 named_func; /* nccl group end: the function of the call (comm, seq)
			      names; else func */
	fr_u16 _pad;
};
FR_STATIC_ASSERT(sizeof(struct fr_inflight_call) == 64, "fr_inflight_call");

/* What the recorder found in flight when it looked (at the end of a
 * recording, in a snapshot): n x struct fr_inflight_call follow.  Written
 * with n = 0 too: "looked at seen_ns, nothing was waiting" tells the
 * analyzer that this node's ranks were not inside a call then. */
struct fr_rec_inflight {
	struct fr_rec_hdr h;
	fr_u64 seen_ns;    /* CLOCK_MONOTONIC when the recorder looked */
	fr_u32 n;
	fr_u32 _pad;
};
FR_STATIC_ASSERT(sizeof(struct fr_rec_inflight) == 24, "fr_rec_inflight");

/* The syscalls family's events lost to a full ring, per call number (the
 * per-probe drop count cannot say which calls were lost), cumulative since
 * start; only numbers with losses are listed.  Written at the end of the
 * recording, after the probes are gone; the latest ts_ns wins. */
struct fr_rec_syscall_drops {
	struct fr_rec_hdr h;
	fr_u64 ts_ns;      /* CLOCK_MONOTONIC when the counters were read */
	fr_u32 n;          /* struct fr_syscall_drop entries that follow */
	fr_u32 _pad;
};
FR_STATIC_ASSERT(sizeof(struct fr_rec_syscall_drops) == 24, "fr_rec_syscall_drops");

struct fr_syscall_drop {
	fr_u32 nr;         /* x86-64 system call number, < FR_SYSCALL_DROP_NRS */
	fr_u32 _pad;
	fr_u64 count;      /* completed calls whose event the full ring lost */
};
FR_STATIC_ASSERT(sizeof(struct fr_syscall_drop) == 16, "fr_syscall_drop");

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

#ifndef __bpf__
/* Names of enum fr_drop_reason, as info, the report and SQLite show them. */
static inline const char *fr_drop_reason_name(unsigned reason)
{
	static const char *const names[FR_DROP_REASON_MAX] = {
		[FR_DROP_RING_FULL] = "ring_full",   [FR_DROP_STACK_BUSY] = "stack_busy",
		[FR_DROP_NO_ENTRY] = "no_entry",     [FR_DROP_MALFORMED] = "malformed",
		[FR_DROP_CHUNK_LOST] = "chunk_lost", [FR_DROP_NO_MEMORY] = "no_memory",
		[FR_DROP_NOT_ATTACHED] = "not_attached",
	};
	return reason < FR_DROP_REASON_MAX && names[reason] ? names[reason] : "unknown";
}
#endif

#endif
