/* Stopping the calling process from a return probe until the recorder has
 * attached what it is about to use (see hold_abi.h; the recorder's half is
 * recorder/attach/attach_hold.c).  Why a stop: a uprobe program cannot sleep or
 * spin, nor make the thread wait in the kernel; a stop is the one wait it
 * can impose, and the kernel keeps it exact (the caller stops at the
 * return, every other thread at its next return to user space).  A process
 * whose stop its parent would see as job control (a foreground job of a
 * terminal) or that a debugger traces is not stopped: the caller counts
 * what it may miss instead.  What a stop does besides: the parent gets a
 * SIGCHLD (ignored unless handled; waitpid reports it only with
 * WUNTRACED), and Linux makes a few blocking calls of other threads
 * (epoll_wait, socket calls with SO_RCVTIMEO/SO_SNDTIMEO, semop,
 * sigtimedwait) return EINTR once after a stop. */
#ifndef FLIGHTREC_HOLD_BPF_H
#define FLIGHTREC_HOLD_BPF_H

#include "common.bpf.h"
#include "hold_abi.h"

#define FR_SIG_STOP 19 /* SIGSTOP, SIGCONT on x86-64 */
#define FR_SIG_CONT 18

/* Whether stopping this process is invisible to everyone but the recorder.
 * Not when a debugger traces it (the stop would go to the debugger, which
 * would keep it), nor when it is a foreground job of a terminal started by
 * a job-control shell (its parent, in another process group): the shell
 * would see the job stop, take the terminal back, and the job would go on
 * in the background.  A launcher's workers share the launcher's process
 * group, and nobody else waits for stops (waitpid without WUNTRACED). */
static __always_inline bool fr_may_hold(void)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct tty_struct *tty;
	struct pid *pgrp, *fg, *parent_pgrp;

	if (BPF_CORE_READ(t, ptrace))
		return false;
	tty = BPF_CORE_READ(t, signal, tty);
	if (!tty)
		return true;
	pgrp = BPF_CORE_READ(t, signal, pids[PIDTYPE_PGID]);
	fg = BPF_CORE_READ(tty, ctrl.pgrp);
	parent_pgrp = BPF_CORE_READ(t, real_parent, signal, pids[PIDTYPE_PGID]);
	return !(fg == pgrp && parent_pgrp != pgrp);
}

/* Stops the calling process until the recorder releases it; returns the
 * hold's id (its start), 0 when it is not held.  held: a hash map tgid ->
 * struct fr_held; cfg: an array map of one struct fr_hold_cfg. */
static __always_inline __u64 fr_hold_process(void *held, void *cfg_map, __u32 tgid)
{
	__u32 zero = 0;
	const struct fr_hold_cfg *cfg = bpf_map_lookup_elem(cfg_map, &zero);
	struct fr_held *h, v = {};

	if (!cfg || !cfg->enabled)
		return 0;
	h = bpf_map_lookup_elem(held, &tgid);
	/* another thread's stop is pending: this thread stops with it */
	if (h && h->state == FR_HELD_HOLDING)
		return h->held_ns;
	/* the recorder is behind (its guardian let this process go past the
	 * bound): stopping it again at every call would stall it a bound each */
	if (h && h->state == FR_HELD_EXPIRED)
		return 0;
	if (!fr_may_hold())
		return 0;
	/* The stop is sent before the entry is made: an entry always means a
	 * stop was sent, so whoever continues the entries (the recorder, its
	 * guardian) leaves nobody stopped.  The stop takes effect only when
	 * this thread returns to user space, after this program. */
	if (bpf_send_signal(FR_SIG_STOP))
		return 0;
	v.held_ns = bpf_ktime_get_ns();
	v.state = FR_HELD_HOLDING;
	if (bpf_map_update_elem(held, &tgid, &v, BPF_ANY)) {
		bpf_send_signal(FR_SIG_CONT); /* discards the pending stop */
		return 0;
	}
	return v.held_ns;
}

#endif
