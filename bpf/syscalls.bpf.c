/* System calls of the traced processes: the BTF tracepoints sys_enter and
 * sys_exit (no tracefs needed).  One event per completed call with its duration, the
 * fd and byte count where the call has them, and the user stack.  Filtering
 * (pid set, minimum duration) happens here so short calls nobody asked for
 * never reach the ring buffer.  While attached, every syscall on the node
 * takes the kernel's tracepoint slow path (~140 ns here), traced or not. */
#include "common.bpf.h"

const volatile __u64 fr_syscall_min_ns = 0;
const volatile bool fr_syscall_stacks = true;
/* --stack dwarf copies ~16 KiB per stack: at 100 k calls/s that is 1.6 GB/s.
 * There, a call takes a stack when it is long (the ones worth a stack:
 * blocking reads, fsync, checkpoint writes) or one in N otherwise.  Fixed,
 * not knobs: no option sets them. */
#define FR_SYSCALL_DWARF_MIN_NS 1000000
#define FR_SYSCALL_DWARF_EVERY 64

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} fr_sys_tick SEC(".maps");

/* Calls lost to a full ring, per call number: the family's drop counter
 * cannot say which calls were lost, and a process makes calls of every
 * kind, so "every read was recorded or counted" needs the number.  Numbers
 * from FR_SYSCALL_DROP_NRS up are counted in the family's drops only. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FR_SYSCALL_DROP_NRS);
	__type(key, __u32);
	__type(value, __u64);
} fr_sys_drops_by_nr SEC(".maps");

static __always_inline bool syscall_wants_stack(__u64 dur)
{
	if (!fr_syscall_stacks)
		return false;
	if (fr_stack_mode != FR_STACK_MODE_DWARF || dur >= FR_SYSCALL_DWARF_MIN_NS)
		return true;
	__u32 zero = 0, *tick = bpf_map_lookup_elem(&fr_sys_tick, &zero);
	if (!tick)
		return false;
	*tick += 1;
	return (*tick % FR_SYSCALL_DWARF_EVERY) == 0;
}

struct sys_entry {
	__u64 ts_ns;
	__u64 arg0;
	__u64 arg2;
	__u64 path;      /* an open's file name (user address), 0 otherwise */
	__u32 nr;
	__u32 sc_flags;
	__u32 open_flags;
	__u32 _pad;
};

/* The call each thread is in: task-local storage, made on a traced
 * thread's first call and gone with the thread.  A hash keyed by tid cost
 * an update at every entry and a delete at every exit (about 250 ns of the
 * 570 the two programs took per call), and an entry of a thread that died
 * inside a call (exit_group) stayed for the next thread given its id. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sys_entry);
} fr_sys_inflight SEC(".maps");

/* x86-64 system calls that are the uprobe machinery, not the job: since
 * 6.11 every uretprobe returns through `uretprobe` (and since 6.16 an
 * optimized uprobe enters through `uprobe`).  Recording them would log the
 * recorder's own probes as the job's calls (one per probed return) and
 * make each probed call pay a second event. */
#define FR_NR_URETPROBE 335
#define FR_NR_UPROBE 336
/* exit and exit_group never return: no duration to measure.  (When the
 * calls in flight were a hash keyed by tid, an entry left for a dead
 * thread was what the next thread given its id closed at its first
 * system-call exit, with a time minutes old under churn: bpf.test_pid_reuse.
 * Task storage dies with its thread.)  They are the only calls a thread
 * never leaves: one killed inside a read leaves it with -ERESTARTSYS on its
 * way out. */
#define FR_NR_EXIT 60
#define FR_NR_EXIT_GROUP 231

/* Which x86-64 calls take an fd first, and which a byte count third. */
static __always_inline __u32 syscall_arg_flags(__u32 nr)
{
	switch (nr) {
	case 0: case 1: case 17: case 18: case 44: case 45: /* read write pread64 pwrite64 sendto recvfrom */
		return FR_SYSCALL_HAS_FD | FR_SYSCALL_HAS_BYTES;
	case 3: case 5: case 8: case 16: case 19: case 20: /* close fstat lseek ioctl readv writev */
	case 42: case 43: case 46: case 47: case 74: case 75: /* connect accept sendmsg recvmsg fsync fdatasync */
	case 77: case 217: case 221: case 232: case 277: /* ftruncate getdents64 fadvise64 epoll_wait sync_file_range */
	case 281: case 285: case 288: case 295: case 296: /* epoll_pwait fallocate accept4 preadv pwritev */
		return FR_SYSCALL_HAS_FD;
	default:
		return 0;
	}
}

/* open, creat, openat, openat2: where the file name is, and the flags.
 * regs is the tracepoint's typed argument: its fields are read directly,
 * not through a helper call each. */
static __always_inline void note_open(struct sys_entry *ent, struct pt_regs *regs)
{
	ent->path = 0;
	ent->open_flags = 0;
	switch (ent->nr) {
	case 2: /* open(name, flags, mode) */
		ent->path = regs->di;
		ent->open_flags = (__u32)regs->si;
		break;
	case 85: /* creat(name, mode) */
		ent->path = regs->di;
		ent->open_flags = 01 | 0100 | 01000; /* O_WRONLY|O_CREAT|O_TRUNC */
		break;
	case 257: /* openat(dirfd, name, flags, mode) */
		ent->path = regs->si;
		ent->open_flags = (__u32)regs->dx;
		break;
	case 437: /* openat2(dirfd, name, how, size): flags are how->flags */
		ent->path = regs->si;
		break;
	}
}

/* The file a successful open named, for findings (checkpoints, input):
 * read at exit, when the kernel has just read the name itself. */
static __always_inline void emit_fd_path(const struct sys_entry *ent, long ret, __u64 pid_tgid)
{
	struct fr_ev_fd_path *e = bpf_ringbuf_reserve(&fr_events, sizeof(*e), 0);
	if (!e) {
		fr_count_drop(FR_PROBE_SYSCALLS, FR_DROP_RING_FULL);
		return;
	}
	fr_fill_common(&e->c, FR_EV_FD_PATH, sizeof(*e), 0, pid_tgid);
	e->c.ts_ns = ent->ts_ns;
	e->fd = (__s32)ret;
	e->open_flags = ent->open_flags;
	e->source = FR_FD_PATH_OPEN;
	e->_pad = 0;
	long n = bpf_probe_read_user_str(e->path, sizeof(e->path), (const void *)ent->path);
	if (n <= 0) {
		e->path[0] = 0;
		n = 1;
	}
	e->path_len = (__u16)(n - 1);
	/* no wakeup, as every event: the drain reads every few ms, and a
	 * wakeup per open cost the opening thread an irq_work and the
	 * recorder a context switch (an `import torch` opens thousands) */
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

/* tp_btf, not raw_tp: the arguments are typed, so regs is read with
 * plain loads, and task-local storage is allowed (kernel 5.11 on) */
SEC("tp_btf/sys_enter")
int BPF_PROG(fr_sys_enter, struct pt_regs *regs, long id)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct sys_entry *ent;

	if (id == FR_NR_URETPROBE || id == FR_NR_UPROBE || id == FR_NR_EXIT ||
	    id == FR_NR_EXIT_GROUP)
		return 0;
	if (!fr_is_traced(pid_tgid >> 32))
		return 0;
	ent = bpf_task_storage_get(&fr_sys_inflight, bpf_get_current_task_btf(), 0,
				   BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!ent)
		return 0;
	ent->ts_ns = bpf_ktime_get_ns();
	ent->nr = (__u32)id;
	ent->sc_flags = syscall_arg_flags(ent->nr);
	ent->arg0 = ent->sc_flags ? regs->di : 0;
	ent->arg2 = ent->sc_flags ? regs->dx : 0;
	note_open(ent, regs);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(fr_sys_exit, struct pt_regs *regs, long ret)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct sys_entry *ent;
	struct fr_ev_syscall e;
	__u64 now, dur;

	ent = bpf_task_storage_get(&fr_sys_inflight, bpf_get_current_task_btf(), 0, 0);
	if (!ent || !ent->ts_ns)
		return 0;
	now = bpf_ktime_get_ns();
	dur = now - ent->ts_ns;
	/* which file an fd names: whatever --syscall-min-us says */
	if (ent->path && ret >= 0)
		emit_fd_path(ent, ret, pid_tgid);
	if (dur < fr_syscall_min_ns) {
		ent->ts_ns = 0; /* out of the call */
		return 0;
	}
	fr_fill_common(&e.c, FR_EV_SYSCALL, sizeof(e), 0, pid_tgid);
	e.c.ts_ns = ent->ts_ns;
	e.nr = ent->nr;
	e.stack_id = 0;
	e.ret = ret;
	e.duration_ns = dur;
	e.sc_flags = ent->sc_flags;
	e.fd = (ent->sc_flags & FR_SYSCALL_HAS_FD) ? (__s64)(int)ent->arg0 : -1;
	e.count = (ent->sc_flags & FR_SYSCALL_HAS_BYTES) ? ent->arg2 : 0;
	e._pad = 0;
	ent->ts_ns = 0; /* out of the call */
	if (fr_emit(ctx, &e, sizeof(e), FR_PROBE_SYSCALLS,
		    syscall_wants_stack(dur) ? FR_STACK_USER : FR_STACK_NO) == 0)
		return 0;
	__u32 nr = e.nr;
	__u64 *lost = nr < FR_SYSCALL_DROP_NRS ? bpf_map_lookup_elem(&fr_sys_drops_by_nr, &nr) : 0;
	if (lost)
		*lost += 1; /* per CPU: a program nested on this CPU is not a syscall exit */
	return 0;
}
