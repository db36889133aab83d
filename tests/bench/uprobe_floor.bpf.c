/* The floor of a probed call on this kernel: a uprobe and a uretprobe that
 * each write one small ring-buffer event (no wakeup), nothing else.  The
 * cuda family's cost is compared against this. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 << 20);
} floor_events SEC(".maps");

static __always_inline int one_event(void)
{
	__u64 *e = bpf_ringbuf_reserve(&floor_events, 48, 0);
	if (!e)
		return 0;
	e[0] = bpf_ktime_get_ns();
	e[1] = bpf_get_current_pid_tgid();
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(floor_enter)
{
	return one_event();
}

SEC("uretprobe")
int BPF_KRETPROBE(floor_exit)
{
	return one_event();
}
