/* GPU kernel times from libflightrec_cupti.so (gpu/), the CUDA injection
 * library: uprobes on its two probe functions.  flightrec_cupti_launch
 * (correlation id) runs on the launching thread at each launch: an event
 * with the launch's stack.  flightrec_cupti_kernels (records, n, dropped)
 * hands over finished kernels in flightrec's own 192-byte layout (struct
 * fr_gpu_kernel, gpu/flightrec_cupti.h, the tail of struct
 * fr_ev_gpu_kernel): one event each, copied from the caller's memory. */
#include "common.bpf.h"

#define GPU_KERNEL_WIRE 192 /* sizeof(struct fr_gpu_kernel) */
#define GPU_BATCH_MAX 32    /* FR_GPU_KERNEL_BATCH */

SEC("uprobe")
int BPF_KPROBE(fr_gpu_launch, __u64 correlation_id)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct fr_ev_gpu_launch e;

	if (!fr_is_traced(id >> 32))
		return 0;
	fr_fill_common(&e.c, FR_EV_GPU_LAUNCH, sizeof(e), 0, id);
	e._pad = 0;
	e.stack_id = 0;
	e.correlation_id = correlation_id;
	fr_emit(ctx, &e, sizeof(e), FR_PROBE_GPU, FR_STACK_AT_ENTRY);
	return 0;
}

struct batch {
	__u64 records;  /* user address of the first */
	__u64 id;
	__u64 dropped;
};

static long copy_kernel(__u64 i, void *arg)
{
	struct batch *b = arg;
	struct fr_ev_gpu_kernel *e = bpf_ringbuf_reserve(&fr_events, sizeof(*e), 0);
	if (!e) {
		fr_count_drop(FR_PROBE_GPU, FR_DROP_RING_FULL);
		return 0;
	}
	fr_fill_common(&e->c, FR_EV_GPU_KERNEL, sizeof(*e), 0, b->id);
	e->_pad = 0;
	e->dropped = i ? 0 : (b->dropped > 0xffffffffu ? 0xffffffffu : (__u32)b->dropped);
	if (bpf_probe_read_user(&e->start_ns, GPU_KERNEL_WIRE,
				(const void *)(b->records + i * GPU_KERNEL_WIRE))) {
		bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP);
		fr_count_drop(FR_PROBE_GPU, FR_DROP_MALFORMED);
		return 0;
	}
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(fr_gpu_kernels, __u64 records, __u32 n, __u64 dropped)
{
	__u64 id = bpf_get_current_pid_tgid();
	if (!fr_is_traced(id >> 32))
		return 0;
	struct batch b = { .records = records, .id = id, .dropped = dropped };
	bpf_loop(n < GPU_BATCH_MAX ? n : GPU_BATCH_MAX, copy_kernel, &b, 0);
	return 0;
}
