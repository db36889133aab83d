/* Maps and helpers every flightrec BPF object shares.  Each probe family is
 * its own object; the recorder creates these maps once (with the proc
 * object) and hands the same fds to the others with bpf_map__reuse_fd, so
 * there is one ring buffer, one pid set and one drop counter array. */
#ifndef FLIGHTREC_COMMON_BPF_H
#define FLIGHTREC_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "events.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Values in fr_pids. */
#define FR_PID_TRACED 1
#define FR_PID_EXITED 2 /* kept briefly so late metadata still matches */

enum fr_filter_mode {
	FR_FILTER_PIDS = 0,   /* the pid set, followed across fork */
	FR_FILTER_CGROUP = 1, /* cgroup v2 id of the current task */
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 << 20); /* resized by the recorder before load */
} fr_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);   /* tgid */
	__type(value, __u32); /* FR_PID_* */
} fr_pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FR_PROBE_MAX * FR_DROP_REASON_MAX);
	__type(key, __u32); /* probe * FR_DROP_REASON_MAX + reason */
	__type(value, struct fr_drop_slot);
} fr_drops SEC(".maps");

/* Knobs, set by the recorder before load (one copy per object). */
const volatile __u32 fr_filter_mode = FR_FILTER_PIDS;
const volatile __u64 fr_target_cgroup_id = 0;

static __always_inline void fr_count_drop(__u32 probe, __u32 reason)
{
	__u32 k = probe * FR_DROP_REASON_MAX + reason;
	struct fr_drop_slot *d = bpf_map_lookup_elem(&fr_drops, &k);
	__u64 now = bpf_ktime_get_ns();

	if (!d)
		return;
	/* a nested program on this CPU may count too: the count stays exact */
	if (__sync_fetch_and_add(&d->count, 1) == 0)
		d->first_ns = now;
	d->last_ns = now;
}

static __always_inline bool fr_is_traced(__u32 tgid)
{
	if (fr_filter_mode == FR_FILTER_CGROUP)
		return bpf_get_current_cgroup_id() == fr_target_cgroup_id;
	__u32 *state = bpf_map_lookup_elem(&fr_pids, &tgid);
	return state && *state == FR_PID_TRACED;
}

static __always_inline void fr_fill_common(struct fr_ev_common *c, __u16 type,
					   __u32 size, __u16 flags, __u64 pid_tgid)
{
	c->h.size = size;
	c->h.type = type;
	c->h.flags = flags;
	c->ts_ns = bpf_ktime_get_ns();
	c->pid = pid_tgid >> 32;
	c->tid = (__u32)pid_tgid;
}

#include "ustack.bpf.h"

_Static_assert(__builtin_offsetof(struct fr_ustack_scratch, hdr) ==
	       __builtin_offsetof(struct fr_ustack_scratch, ev) + FR_RING_EV_MAX, "scratch ev");

/* --stack fp: where an event and its frame-pointer stack are put together
 * before they go to the ring as one record of their real length (kernel
 * ips, then user ips, right after the header): a fixed 1.5 KiB trailer
 * reserved in the ring filled it ten times sooner and made the drain read
 * mostly zeros. */
struct fr_fp_scratch {
	__u32 busy; /* claimed by a running program: first, as in every slot */
	__u32 _pad;
	__u8 ev[FR_RING_EV_MAX]; /* the event's fixed part, ending at st */
	struct fr_raw_stack st;
	__u64 ips[256]; /* FR_MAX_KERNEL_FRAMES + FR_MAX_USER_FRAMES, and a mask's room */
};
_Static_assert(__builtin_offsetof(struct fr_fp_scratch, st) ==
	       __builtin_offsetof(struct fr_fp_scratch, ev) + FR_RING_EV_MAX, "fp scratch ev");

/* FR_USTACK_SLOTS per CPU, as fr_ustack_scratch and for the same reason:
 * programs nest on a CPU.  Sized to CPUs x slots before load. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 512 * FR_USTACK_SLOTS);
	__type(key, __u32);
	__type(value, struct fr_fp_scratch);
} fr_fp_scratch SEC(".maps");

/* How an event takes its stack (fr_emit's want). */
#define FR_STACK_NO 0
#define FR_STACK_USER 1       /* user stack */
#define FR_STACK_KERNEL 2     /* kernel and user stacks (CPU samples) */
#define FR_STACK_AT_ENTRY 3   /* user stack at a probed function's entry */

static long shift_down(__u64 i, void *arg)
{
	struct fr_fp_scratch *s = *(struct fr_fp_scratch **)arg;

	s->ips[i & 255] = s->ips[(i + 1) & 255];
	return 0;
}

/* Fills s->st and s->ips with the stacks want asks for and returns the
 * trailer's length. */
static __always_inline __u32 fr_fill_fp(void *ctx, struct fr_fp_scratch *s, int want)
{
	__u32 nk = 0, nu = 0;
	long n;

	if (want == FR_STACK_KERNEL) {
		n = bpf_get_stack(ctx, s->ips, 8 * FR_MAX_KERNEL_FRAMES, 0);
		nk = n > 0 ? (__u64)n >> 3 : 0;
		if (nk > FR_MAX_KERNEL_FRAMES)
			nk = FR_MAX_KERNEL_FRAMES;
	}
	if (want == FR_STACK_AT_ENTRY) {
		/* at a probed function's entry, before its prologue ran, the
		 * frame-pointer walk starts from the caller's frame and so
		 * skips the caller, whose return address is at the top of the
		 * stack.  Kernels since 6.11 put it back themselves when the
		 * function starts with push %rbp or endbr64: then it is there
		 * already, second. */
		__u64 ret = 0;
		n = bpf_get_stack(ctx, &s->ips[1], 8 * (FR_MAX_USER_FRAMES - 1), BPF_F_USER_STACK);
		nu = n > 0 ? (__u64)n >> 3 : 0;
		if (nu) {
			bpf_probe_read_user(&ret, sizeof(ret), (void *)PT_REGS_SP((struct pt_regs *)ctx));
			if (nu >= 2 && s->ips[2] == ret) {
				struct fr_fp_scratch *arg = s;
				bpf_loop(nu, shift_down, &arg, 0);
			} else {
				s->ips[0] = s->ips[1]; /* the function itself */
				s->ips[1] = ret;       /* its caller */
				nu++;
			}
		}
	} else {
		n = bpf_get_stack(ctx, &s->ips[nk], 8 * FR_MAX_USER_FRAMES, BPF_F_USER_STACK);
		nu = n > 0 ? (__u64)n >> 3 : 0;
	}
	if (nu > FR_MAX_USER_FRAMES)
		nu = FR_MAX_USER_FRAMES;
	s->st.n_user = nu;
	s->st.n_kernel = nk;
	s->st._pad = 0;
	return 8 + 8 * (nk + nu);
}

#ifdef FR_USTACK_DYNPTR
#define FR_DYNPTR_FALLBACK 1

/* --stack dwarf with the kernel's dynptr read: rec (the event's size bytes,
 * in slot s), the trailer's head (registers, kernel ips, Python frames)
 * and the stack bytes go into one ring reservation, the stack bytes read
 * from the user's pages straight into it (one copy, not two).  0 sent, -1
 * lost to a full ring (counted), FR_DYNPTR_FALLBACK when the stack's
 * mapping or the read failed: the caller copies through the slot, as
 * without this variant. */
static __always_inline int fr_emit_ustack_dynptr(void *ctx, struct fr_ustack_scratch *s,
						 __u8 *rec, __u32 size, __u32 probe, bool kernel)
{
	struct bpf_dynptr dp;
	__u32 nk = 0;

	if (kernel) {
		long n = bpf_get_stack(ctx, s->tail, 8 * FR_MAX_KERNEL_FRAMES, 0);
		nk = n > 0 ? (__u64)n >> 3 : 0;
		if (nk > FR_MAX_KERNEL_FRAMES)
			nk = FR_MAX_KERNEL_FRAMES;
	}
	__u32 at = (__u32)fr_ustack_head(s, bpf_get_current_pid_tgid(), nk);
	if (at > FR_USTACK_STACK_AT_MAX)
		return FR_DYNPTR_FALLBACK;
	__u32 stack = (__u32)fr_ustack_want(s);
	if (!stack || stack > FR_USTACK_MAX)
		return FR_DYNPTR_FALLBACK;
	/* the head, as it goes out: event, then trailer header and tail[0, at) */
	__u32 head = size + (__u32)sizeof(struct fr_ring_ustack) + at;
	struct fr_ev_common *c = (void *)rec;
	c->h.flags = FR_RECF_USTACK;
	c->h.size = head + stack;
	s->hdr.stack_len = stack;
	s->hdr.h.size = (__u32)sizeof(struct fr_ring_ustack) + at + stack;
	if (bpf_ringbuf_reserve_dynptr(&fr_events, head + stack, 0, &dp)) {
		bpf_ringbuf_discard_dynptr(&dp, BPF_RB_NO_WAKEUP);
		fr_count_drop(probe, FR_DROP_RING_FULL);
		return -1;
	}
	if (head > FR_RING_EV_MAX + sizeof(struct fr_ring_ustack) + FR_USTACK_STACK_AT_MAX ||
	    bpf_probe_read_user_dynptr(&dp, head, stack, (void *)s->hdr.regs[7]) ||
	    bpf_dynptr_write(&dp, 0, rec, head, 0)) {
		bpf_ringbuf_discard_dynptr(&dp, BPF_RB_NO_WAKEUP);
		return FR_DYNPTR_FALLBACK;
	}
	/* the return addresses a uretprobe replaced (ustack.bpf.h) */
	__u32 n_fix = (__u32)fr_ret_fixups_collect(s);
	__u64 sp = s->hdr.regs[7];
	for (int i = 0; i < FR_RET_FIXUPS; i++) {
		if (i >= n_fix)
			break;
		__u64 slot = s->fix.slot[i], v = 0;
		if (slot < sp || slot - sp + 8 > stack)
			continue;
		__u32 off = head + (__u32)(slot - sp);
		if (!bpf_dynptr_read(&v, 8, &dp, off, 0) && v == s->fix.tramp)
			bpf_dynptr_write(&dp, off, &s->fix.ra[i], 8, 0);
	}
	bpf_ringbuf_submit_dynptr(&dp, BPF_RB_NO_WAKEUP);
	return 0;
}
#endif

/* Sends one event as one ring record: ev, built by the caller (size bytes,
 * a constant, common part filled), followed by its stack in the mode of
 * --stack when want says so.  Every loss is counted with its reason: the
 * event when the ring is full, the stack alone when no scratch slot is free
 * (the event then goes out without one).  Returns 0 when the event was
 * sent. */
static __always_inline int fr_emit(void *ctx, void *ev, __u32 size, __u32 probe, int want)
{
	struct fr_ev_common *c = ev;

	c->h.flags = 0;
	c->h.size = size;
	if (want != FR_STACK_NO) {
		/* the event and its stack go together into a claimed slot, then
		 * out as one record of their real length */
		void *slot;
		__u8 *rec = NULL;
		__u32 len = 0;
		if (fr_stack_mode == FR_STACK_MODE_DWARF) {
			struct fr_ustack_scratch *s = fr_slot_claim(&fr_ustack_scratch);
			slot = s;
			if (s) {
				rec = &s->ev[FR_RING_EV_MAX - size];
				__builtin_memcpy(rec, ev, size);
#ifdef FR_USTACK_DYNPTR
				int sent = fr_emit_ustack_dynptr(ctx, s, rec, size, probe,
								 want == FR_STACK_KERNEL);
				if (sent != FR_DYNPTR_FALLBACK) {
					fr_scratch_release(slot);
					return sent;
				}
#endif
				len = fr_fill_ustack(ctx, s, bpf_get_current_pid_tgid(),
						     want == FR_STACK_KERNEL);
				c = (void *)rec;
				c->h.flags = FR_RECF_USTACK;
			}
		} else {
			struct fr_fp_scratch *s = fr_slot_claim(&fr_fp_scratch);
			slot = s;
			if (s) {
				rec = &s->ev[FR_RING_EV_MAX - size];
				__builtin_memcpy(rec, ev, size);
				len = fr_fill_fp(ctx, s, want);
				c = (void *)rec;
				c->h.flags = FR_RECF_RAW_STACK;
			}
		}
		if (rec) {
			c->h.size = size + len;
			long err = bpf_ringbuf_output(&fr_events, rec, size + len, BPF_RB_NO_WAKEUP);
			fr_scratch_release(slot);
			if (err) {
				fr_count_drop(probe, FR_DROP_RING_FULL);
				return -1;
			}
			return 0;
		}
		fr_count_drop(probe, FR_DROP_STACK_BUSY);
	}
	if (bpf_ringbuf_output(&fr_events, ev, size, BPF_RB_NO_WAKEUP)) {
		fr_count_drop(probe, FR_DROP_RING_FULL);
		return -1;
	}
	return 0;
}

/* A ring reservation of a stackless event, or NULL with the loss counted. */
static __always_inline void *fr_reserve(__u32 size, __u32 probe)
{
	void *e = bpf_ringbuf_reserve(&fr_events, size, 0);
	if (!e)
		fr_count_drop(probe, FR_DROP_RING_FULL);
	return e;
}

#endif
