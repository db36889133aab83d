/* Entry/return pairing for user-space function probes.  One entry program
 * and one return program serve many functions: the recorder attaches them at
 * each function with a BPF cookie naming the function, so the per-call state
 * is keyed by (thread, cookie).  Per thread, never per process: two threads
 * calling at once must not see each other's arguments. */
#ifndef FLIGHTREC_UPROBE_COMMON_BPF_H
#define FLIGHTREC_UPROBE_COMMON_BPF_H

#include "common.bpf.h"
#include "call_state.h" /* struct call_key, call_state: the recorder reads them too */

static __always_inline struct call_key call_key_of(void *ctx, __u64 pid_tgid)
{
	struct call_key k = {
		.tid = (__u32)pid_tgid,
		.cookie_lo = (__u32)bpf_get_attach_cookie(ctx),
	};
	return k;
}

static __always_inline void save_args(struct pt_regs *ctx, struct call_state *st)
{
	st->ts_ns = bpf_ktime_get_ns();
	st->pid = bpf_get_current_pid_tgid() >> 32;
	st->seq = 0;
	st->arg[0] = PT_REGS_PARM1(ctx);
	st->arg[1] = PT_REGS_PARM2(ctx);
	st->arg[2] = PT_REGS_PARM3(ctx);
	st->arg[3] = PT_REGS_PARM4(ctx);
	st->arg[4] = PT_REGS_PARM5(ctx);
	st->arg[5] = ctx->r9; /* libbpf 1.1 has no PT_REGS_PARM6 */
	st->extra[0] = 0;
	st->extra[1] = 0;
}

/* The n-th 8-byte stack argument at function entry (n = 0 is the 7th
 * integer argument): the return address is at rsp. */
static __always_inline __u64 stack_arg(struct pt_regs *ctx, int n)
{
	__u64 v = 0;
	bpf_probe_read_user(&v, sizeof(v), (void *)(PT_REGS_SP(ctx) + 8 + 8 * n));
	return v;
}

static __always_inline __u64 read_user_u64(__u64 addr)
{
	__u64 v = 0;
	if (addr)
		bpf_probe_read_user(&v, sizeof(v), (void *)addr);
	return v;
}

#endif
