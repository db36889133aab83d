/* Off-CPU time of the traced threads, per system call: when one leaves its
 * CPU blocked (not preempted) sched_switch notes the time and the user
 * registers it entered the kernel with; sched_waking notes who woke it;
 * sched_switch adds up the time off when it runs again; and at the call's
 * return (sys_exit, in the thread itself, so the user stack is the one it
 * blocked at) one event goes out if it was off for --sched-min-us in all.
 * Short blocks never reach the ring, and a stack is taken only for the
 * calls sent.
 *
 * Why at the call's return and not as the thread is switched in: that
 * happens in finish_task_switch, reachable only with a kprobe, and kernels
 * built without kprobe events (CONFIG_KPROBE_EVENTS unset) have none; the
 * training threads that matter block in system calls (futex, read, poll,
 * epoll_wait, nanosleep, fsync).  A block outside a call (a page fault's
 * I/O) is not recorded: the next return from a call finds registers other
 * than the ones it blocked with and drops it.
 *
 * Every context switch and every system-call return on the node looks up
 * a map while attached. */
#include "common.bpf.h"

const volatile __u64 fr_sched_min_ns = 1000000;

/* The kernel's task states that mean "leaving for good": not a block. */
#define FR_TASK_DEAD_STATES (0x0010 | 0x0020 | 0x0080) /* EXIT_DEAD EXIT_ZOMBIE TASK_DEAD */

struct sched_call {
	__u64 first_out_ns; /* its first block in this call */
	__u64 out_ns;       /* the block under way, 0 while it runs */
	__u64 off_ns;       /* the finished blocks' time */
	__u64 user_ip;      /* user registers at kernel entry: which call */
	__u64 user_sp;
	__u32 pid;
	__u32 blocks;
	__u32 waker_pid;
	__u32 waker_tid;
	__u16 state;
	__u16 waker_flags;
	__u32 _pad;
	char waker_comm[16];
};

struct {
	/* LRU: a thread that dies blocked never returns for its entry
	 * (fr_sched_free removes it; LRU bounds what escapes that) */
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32); /* tid */
	__type(value, struct sched_call);
} fr_sched_calls SEC(".maps");

/* Kernels before 5.14 name the field `state` (a long). */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline __u32 task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return (__u32)BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

static __always_inline void switched_out(struct task_struct *prev, __u64 now)
{
	__u32 state = task_state(prev);
	if (!state || (state & FR_TASK_DEAD_STATES))
		return;
	__u32 tgid = BPF_CORE_READ(prev, tgid);
	if (!fr_is_traced(tgid)) /* prev is current: the cgroup test holds */
		return;
	__u32 tid = BPF_CORE_READ(prev, pid);
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(prev);
	__u64 ip = BPF_CORE_READ(regs, ip), sp = BPF_CORE_READ(regs, sp);
	struct sched_call *c = bpf_map_lookup_elem(&fr_sched_calls, &tid);
	if (c && c->user_ip == ip && c->user_sp == sp && c->pid == tgid) {
		/* blocked again in the same call */
		c->out_ns = now;
		c->blocks += 1;
		c->state = (__u16)state;
		c->waker_flags = FR_SCHEDF_NO_WAKER;
		return;
	}
	struct sched_call n = {
		.first_out_ns = now,
		.out_ns = now,
		.user_ip = ip,
		.user_sp = sp,
		.pid = tgid,
		.blocks = 1,
		.state = (__u16)state,
		.waker_flags = FR_SCHEDF_NO_WAKER,
	};
	bpf_map_update_elem(&fr_sched_calls, &tid, &n, BPF_ANY);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(fr_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 tid = BPF_CORE_READ(next, pid);
	struct sched_call *c = bpf_map_lookup_elem(&fr_sched_calls, &tid);
	if (c && c->out_ns) {
		c->off_ns += now - c->out_ns;
		c->out_ns = 0;
	}
	if (!preempt)
		switched_out(prev, now);
	return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(fr_sched_waking, struct task_struct *p)
{
	__u32 tid = BPF_CORE_READ(p, pid);
	struct sched_call *c = bpf_map_lookup_elem(&fr_sched_calls, &tid);
	if (!c || !c->out_ns || !(c->waker_flags & FR_SCHEDF_NO_WAKER))
		return 0; /* untraced, running, or woken already in this block */
	__u64 id = bpf_get_current_pid_tgid();
	c->waker_pid = id >> 32;
	c->waker_tid = (__u32)id;
	/* An interrupt that wakes a thread runs in whatever task the CPU was
	 * running; on an idle CPU that is the idle task (pid 0), and only
	 * then can it be told apart: the CPU's preempt count is a per-CPU
	 * variable that kernels without CONFIG_KALLSYMS_ALL keep from BPF. */
	c->waker_flags = id ? 0 : FR_SCHEDF_WAKER_IRQ;
	bpf_get_current_comm(c->waker_comm, sizeof(c->waker_comm));
	return 0;
}

SEC("tp_btf/sched_process_free")
int BPF_PROG(fr_sched_free, struct task_struct *p)
{
	/* a thread that died blocked: its id may be given out again */
	__u32 tid = BPF_CORE_READ(p, pid);
	bpf_map_delete_elem(&fr_sched_calls, &tid);
	return 0;
}

SEC("raw_tp/sys_exit")
int BPF_PROG(fr_sched_call_exit, struct pt_regs *regs, long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct sched_call *c = bpf_map_lookup_elem(&fr_sched_calls, &tid);
	if (!c)
		return 0;
	struct sched_call call = *c;
	bpf_map_delete_elem(&fr_sched_calls, &tid);
	/* a block outside this call (a page fault's) left other registers */
	if (call.user_ip != BPF_CORE_READ(regs, ip) || call.user_sp != BPF_CORE_READ(regs, sp) ||
	    call.pid != id >> 32 || call.off_ns < fr_sched_min_ns)
		return 0;
	struct fr_ev_sched e;
	fr_fill_common(&e.c, FR_EV_SCHED, sizeof(e), 0, id);
	e.c.ts_ns = call.first_out_ns;
	e.cpu = bpf_get_smp_processor_id();
	e.stack_id = 0;
	e.duration_ns = call.off_ns;
	e.waker_pid = call.waker_pid;
	e.waker_tid = call.waker_tid;
	e.nr = (__s32)BPF_CORE_READ(regs, orig_ax);
	e.state = call.state;
	e.waker_flags = call.waker_flags;
	e.blocks = call.blocks;
	e._pad = 0;
	__builtin_memcpy(e.waker_comm, call.waker_comm, sizeof(e.waker_comm));
	fr_emit(ctx, &e, sizeof(e), FR_PROBE_SCHED, FR_STACK_USER);
	return 0;
}
