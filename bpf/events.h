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

	/* metadata produced in user space by the recorder */
	FR_REC_PROCESS = 0x100, /* struct fr_rec_process + cmdline bytes */
	FR_REC_MAPPING = 0x101, /* struct fr_rec_mapping + path bytes */
	FR_REC_STACK = 0x102,   /* struct fr_rec_stack + ips[] */
	FR_REC_DSO = 0x103,     /* struct fr_rec_dso + path + syms[] + strtab */
	FR_REC_CLOCK = 0x104,   /* struct fr_rec_clock */
	FR_REC_STATS = 0x105,   /* struct fr_rec_stats + probes[] */
	FR_REC_SCHEMA = 0x106,  /* struct fr_rec_schema + description bytes */
	FR_REC_THREAD = 0x107,  /* struct fr_rec_thread: thread name */
};

/* record flags (fr_rec_hdr.flags) */
enum fr_rec_flags {
	/* ring buffer only: a struct fr_raw_stack follows the fixed part; the
	 * recorder interns it into the stack table and writes stack_id instead.
	 * Never set in a file. */
	FR_RECF_RAW_STACK = 1 << 0,
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
	FR_PROBE_MAX = 16,
};

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
	fr_u64 drops;    /* ring-buffer reserve failures / lost chunks */
};
FR_STATIC_ASSERT(sizeof(struct fr_probe_stats) == 32, "fr_probe_stats");

struct fr_rec_stats {
	struct fr_rec_hdr h;
	fr_u64 ts_ns;
	fr_u64 cpu_user_ns;  /* recorder's own CPU time so far */
	fr_u64 cpu_sys_ns;
	fr_u32 n_probes;     /* struct fr_probe_stats follow */
	fr_u32 _pad;
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

#define FR_ALIGN8(x) (((x) + 7u) & ~7u)

#endif
