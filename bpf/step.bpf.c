/* The step marker: a uprobe on the function the user names with
 * --step-marker; every call is one training step beginning.  Not a probe
 * family of its own in --probes: it exists only when asked for. */
#include "common.bpf.h"

struct step_raw {
	struct fr_ev_step ev;
	struct fr_raw_stack stack;
};

SEC("uprobe")
int BPF_KPROBE(fr_step_enter)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct step_raw *e;

	if (!fr_is_traced(id >> 32))
		return 0;
	struct fr_stack_plan sp = fr_stack_begin(ctx, id, true, false);
	if (sp.fp)
		e = bpf_ringbuf_reserve(&fr_events, sizeof(*e), 0);
	else
		e = bpf_ringbuf_reserve(&fr_events, sizeof(e->ev), 0);
	if (!e) {
		fr_count_drop(FR_PROBE_STEP);
		return 0;
	}
	fr_fill_common(&e->ev.c, FR_EV_STEP, sp.fp ? sizeof(*e) : sizeof(e->ev),
		       fr_stack_flags(&sp), id);
	e->ev._pad = 0;
	e->ev.stack_id = sp.tag;
	if (sp.fp)
		fr_capture_stack_at_entry(ctx, &e->stack);
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}
