/* Process tracking: follows the traced process tree in the kernel (a forked
 * child of a traced process is traced from its first instruction) and
 * reports fork/exec/exit so the recorder can name processes.  Not for
 * threads: they share their process's tgid and need no bookkeeping.  Also
 * the dlopen hold of the library families (lib_hold.bpf.h), attached by
 * the recorder itself (recorder/attach/lib_hold.c), not with the tracepoints. */
#include "common.bpf.h"
#include "lib_hold.bpf.h"

static __always_inline void emit_proc(__u16 type, __u32 pid, __u32 tid,
				      __u32 ppid, int exit_code)
{
	struct fr_ev_proc *e;

	e = bpf_ringbuf_reserve(&fr_events, sizeof(*e), 0);
	if (!e) {
		fr_count_drop(FR_PROBE_PROC, FR_DROP_RING_FULL);
		return;
	}
	fr_fill_common(&e->c, type, sizeof(*e), 0, 0);
	e->c.pid = pid;
	e->c.tid = tid;
	e->ppid = ppid;
	e->exit_code = exit_code;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(fr_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	__u32 traced = FR_PID_TRACED;

	if (ptgid == ctgid) /* a new thread */
		return 0;
	if (!fr_is_traced(ptgid))
		return 0;
	if (fr_filter_mode == FR_FILTER_PIDS)
		bpf_map_update_elem(&fr_pids, &ctgid, &traced, BPF_ANY);
	emit_proc(FR_EV_PROC_FORK, ctgid, BPF_CORE_READ(child, pid), ptgid, 0);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(fr_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;

	if (!fr_is_traced(tgid))
		return 0;
	emit_proc(FR_EV_PROC_EXEC, tgid, (__u32)id,
		  BPF_CORE_READ(p, real_parent, tgid), 0);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(fr_exit, struct task_struct *p)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	__u32 exited = FR_PID_EXITED;

	if ((__u32)id != tgid) /* only the thread-group leader ends a process */
		return 0;
	if (!fr_is_traced(tgid))
		return 0;
	emit_proc(FR_EV_PROC_EXIT, tgid, tgid, BPF_CORE_READ(p, real_parent, tgid),
		  BPF_CORE_READ(p, exit_code));
	if (fr_filter_mode == FR_FILTER_PIDS)
		bpf_map_update_elem(&fr_pids, &tgid, &exited, BPF_EXIST);
	return 0;
}
