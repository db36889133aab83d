/* CPU profile: a perf-event program on a per-CPU clock event samples the
 * traced processes with their kernel and user stacks.  The stacks travel in
 * the event itself; BPF stack-map ids are never used (they are reused and
 * collide).  Not for off-CPU time. */
#include "common.bpf.h"

struct cpu_sample_raw {
	struct fr_ev_cpu_sample ev;
	struct fr_raw_stack stack;
};

SEC("perf_event")
int fr_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct cpu_sample_raw *e;

	if (!fr_is_traced(id >> 32))
		return 0;
	struct fr_stack_plan sp = fr_stack_begin(ctx, id, true, true);
	if (sp.fp)
		e = bpf_ringbuf_reserve(&fr_events, sizeof(*e), 0);
	else
		e = bpf_ringbuf_reserve(&fr_events, sizeof(e->ev), 0);
	if (!e) {
		fr_count_drop(FR_PROBE_CPU);
		return 0;
	}
	fr_fill_common(&e->ev.c, FR_EV_CPU_SAMPLE, sp.fp ? sizeof(*e) : sizeof(e->ev),
		       fr_stack_flags(&sp), id);
	e->ev.cpu = bpf_get_smp_processor_id();
	e->ev.stack_id = sp.tag;
	if (sp.fp)
		fr_capture_stack(ctx, &e->stack, true);
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}
