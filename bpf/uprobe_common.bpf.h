/* Entry/return pairing for user-space function probes.  One entry program
 * and one return program serve many functions: the recorder attaches them at
 * each function with a BPF cookie naming the function, so the per-call state
 * is keyed by (thread, cookie).  Per thread, never per process: two threads
 * calling at once must not see each other's arguments.
 *
 * Two homes for that state.  The LRU hash fr_<family>_calls, keyed by
 * (tid, cookie), is what the recorder walks to find calls that never
 * returned (recorder/drain/inflight.c).  The thread's own storage (a task-local
 * call stack, below) is several times cheaper per call than a hash update,
 * lookup and delete (no hashing, no bucket lock, no LRU list), so a
 * family keeps there the calls nobody needs to see in flight and writes
 * the hash only for the others. */
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

/* Calls of one thread entered and not yet returned, innermost last: a
 * CUDA runtime call that calls the driver, both probed, is two.  Freed
 * with the thread, so a thread that dies inside a call leaves nothing. */
#define FR_CALL_DEPTH 8

struct call_slot {
	__u32 cookie_lo;
	__u32 _pad;
	struct call_state st;
};

struct call_stack {
	__u32 depth;    /* slots in use */
	__u32 overflow; /* calls entered past FR_CALL_DEPTH, innermost: not saved */
	__s32 device;   /* cuda: the thread's current device, when device_known */
	__u32 device_known;
	__u32 found;    /* call_pop's scratch */
	__u32 _pad;
	struct call_slot slot[FR_CALL_DEPTH];
};

#define FR_CALL_STACK_MAP(name)                                   \
	struct {                                                  \
		__uint(type, BPF_MAP_TYPE_TASK_STORAGE);          \
		__uint(map_flags, BPF_F_NO_PREALLOC);             \
		__type(key, int);                                 \
		__type(value, struct call_stack);                 \
	} name SEC(".maps")

/* The current thread's call stack in map (created on its first call);
 * NULL when the kernel cannot give it (memory, or storage busy). */
static __always_inline struct call_stack *call_stack_get(void *map)
{
	return bpf_task_storage_get(map, bpf_get_current_task_btf(), 0,
				    BPF_LOCAL_STORAGE_GET_F_CREATE);
}

/* A slot for a call of cookie_lo being entered; NULL when the thread is
 * already FR_CALL_DEPTH calls deep (the call is counted in overflow, and
 * its return, the next on this thread, finds it there). */
static __always_inline struct call_state *call_push(struct call_stack *cs, __u32 cookie_lo)
{
	__u32 d = cs->depth;

	if (d >= FR_CALL_DEPTH) {
		cs->overflow++;
		return NULL;
	}
	cs->slot[d & (FR_CALL_DEPTH - 1)].cookie_lo = cookie_lo;
	cs->depth = d + 1;
	return &cs->slot[d & (FR_CALL_DEPTH - 1)].st;
}

/* The entry state of the call of cookie_lo returning now, taken off the
 * stack, or NULL when it has none (entered before the probe was attached,
 * or past FR_CALL_DEPTH).  Calls still above it never returned (a longjmp
 * out of them): they are dropped with it.  The state stays readable until
 * this thread's next entry, so for the rest of the return program. */
static __always_inline struct call_state *call_pop(struct call_stack *cs, __u32 cookie_lo)
{
	if (cs->overflow) {
		cs->overflow--;
		return NULL;
	}
	__u32 d = cs->depth, at;
	/* the innermost match, passed through memory: a value read back from
	 * a map is unknown to the verifier, so the rest of the program is
	 * verified once, not once per slot it could be */
	cs->found = FR_CALL_DEPTH;
#pragma unroll
	for (__u32 i = 0; i < FR_CALL_DEPTH; i++)
		if (i < d && cs->slot[i].cookie_lo == cookie_lo)
			cs->found = i;
	at = cs->found;
	if (at >= FR_CALL_DEPTH)
		return NULL;
	cs->depth = at;
	return &cs->slot[at].st;
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
