/* CPU profile: a perf-event program on a per-CPU clock event samples the
 * traced processes with their kernel and user stacks.  The stacks travel in
 * the event's own ring record; BPF stack-map ids are never used (they are
 * reused and collide).  Not for off-CPU time. */
#include "common.bpf.h"

SEC("perf_event")
int fr_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct fr_ev_cpu_sample e;

	if (!fr_is_traced(id >> 32))
		return 0;
	fr_fill_common(&e.c, FR_EV_CPU_SAMPLE, sizeof(e), 0, id);
	e.cpu = bpf_get_smp_processor_id();
	e.stack_id = 0;
	fr_emit(ctx, &e, sizeof(e), FR_PROBE_CPU, FR_STACK_KERNEL);
	return 0;
}
