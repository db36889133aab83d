/* The step marker: a uprobe on the function the user names with
 * --step-marker; every call is one training step beginning.  Not a probe
 * family of its own in --probes: it exists only when asked for. */
#include "common.bpf.h"

SEC("uprobe")
int BPF_KPROBE(fr_step_enter)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct fr_ev_step e;

	if (!fr_is_traced(id >> 32))
		return 0;
	fr_fill_common(&e.c, FR_EV_STEP, sizeof(e), 0, id);
	e._pad = 0;
	e.stack_id = 0;
	fr_emit(ctx, &e, sizeof(e), FR_PROBE_STEP, FR_STACK_AT_ENTRY);
	return 0;
}
