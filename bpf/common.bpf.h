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
	__uint(max_entries, FR_PROBE_MAX);
	__type(key, __u32);
	__type(value, __u64);
} fr_drops SEC(".maps");

/* Knobs, set by the recorder before load (one copy per object). */
const volatile __u32 fr_filter_mode = FR_FILTER_PIDS;
const volatile __u64 fr_target_cgroup_id = 0;

static __always_inline void fr_count_drop(__u32 probe)
{
	__u64 *n = bpf_map_lookup_elem(&fr_drops, &probe);
	if (n)
		*n += 1;
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

/* Capture kernel and user stacks into a raw-stack trailer. */
static __always_inline void fr_capture_stack(void *ctx, struct fr_raw_stack *st,
					     bool kernel)
{
	long n;

	st->_pad = 0;
	st->n_kernel = 0;
	if (kernel) {
		n = bpf_get_stack(ctx, st->kernel_ips, sizeof(st->kernel_ips), 0);
		st->n_kernel = n > 0 ? (__u64)n >> 3 : 0;
	}
	n = bpf_get_stack(ctx, st->user_ips, sizeof(st->user_ips), BPF_F_USER_STACK);
	st->n_user = n > 0 ? (__u64)n >> 3 : 0;
}

#include "ustack.bpf.h"

/* Everything a stack-carrying program does about its stack, in both modes:
 * fr_stack_begin (before reserving the event) sends the dwarf-mode record
 * and says how big the event's reservation is; fr_stack_finish fills the
 * event's stack fields.  want: this event takes a stack at all. */
struct fr_stack_plan {
	__u32 tag;     /* dwarf: the stack_id the event carries */
	bool fp;       /* frame-pointer ips follow the event */
	bool dwarf;
};

static __always_inline struct fr_stack_plan fr_stack_begin(void *ctx, __u64 pid_tgid,
							   bool want, bool kernel)
{
	struct fr_stack_plan p = {0, false, false};
	if (!want)
		return p;
	if (fr_stack_mode == FR_STACK_MODE_DWARF) {
		p.tag = fr_emit_ustack(ctx, pid_tgid, kernel);
		p.dwarf = p.tag != 0;
	} else {
		p.fp = true;
	}
	return p;
}

static __always_inline __u16 fr_stack_flags(const struct fr_stack_plan *p)
{
	return p->fp ? FR_RECF_RAW_STACK : p->dwarf ? FR_RECF_USTACK : 0;
}

/* User stack at the entry of a probed function, before its prologue ran:
 * the frame-pointer walk starts from the caller's frame and so would skip
 * the caller itself; its return address is at the top of the stack. */
static __always_inline void fr_capture_stack_at_entry(struct pt_regs *ctx,
						      struct fr_raw_stack *st)
{
	long n;
	__u64 ret = 0;

	st->_pad = 0;
	st->n_kernel = 0;
	n = bpf_get_stack(ctx, &st->user_ips[1], sizeof(st->user_ips) - 8, BPF_F_USER_STACK);
	if (n <= 0) {
		st->n_user = 0;
		return;
	}
	bpf_probe_read_user(&ret, sizeof(ret), (void *)PT_REGS_SP(ctx));
	st->user_ips[0] = st->user_ips[1]; /* the function itself */
	st->user_ips[1] = ret;             /* its caller */
	st->n_user = ((__u64)n >> 3) + 1;
}

#endif
