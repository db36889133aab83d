/* The cuda probe family: CUDA runtime (libcudart) and driver (libcuda)
 * calls.  Entry saves the arguments; return builds one event with the
 * result, the duration, the pointer the call returned (read from *devPtr)
 * and the caller's stack (taken at return: the frame-pointer chain is then
 * the caller's, complete).  The entry state lives in the thread's own
 * storage (uprobe_common.bpf.h); synchronizes also go to fr_cuda_calls,
 * where the recorder finds one that never returns.  Kernel launches are frequent, so only one in
 * fr_launch_stack_every takes a stack.  Not for GPU-side timing: flightrec
 * sees the host side of the API. */
#include "uprobe_common.bpf.h"

const volatile __u32 fr_launch_stack_every = 64;

/* Synchronizes only: the calls the recorder reports when they never
 * return (recorder/drain/inflight.c). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct call_key);
	__type(value, struct call_state);
} fr_cuda_calls SEC(".maps");

/* Every call, and the thread's current device. */
FR_CALL_STACK_MAP(fr_cuda_thread);

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} fr_launch_tick SEC(".maps");

static __always_inline bool is_sync(__u16 func)
{
	return func == FR_CUDA_STREAM_SYNC || func == FR_CUDA_DEVICE_SYNC ||
	       func == FR_CUDA_EVENT_SYNC || func == FR_CU_EVENT_SYNC;
}

static __always_inline int enter(struct pt_regs *ctx, bool launch)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct call_stack *cs;
	struct call_state *st;
	struct call_key k;

	if (!fr_is_traced(id >> 32))
		return 0;
	k = call_key_of(ctx, id);
	cs = call_stack_get(&fr_cuda_thread);
	if (!cs)
		return 0; /* its return counts it: no entry */
	st = call_push(cs, k.cookie_lo);
	if (!st)
		return 0;
	save_args(ctx, st);
	__u16 func = CALL_COOKIE_FUNC(k.cookie_lo);
	if (launch) {
		if (func == FR_CUDA_LAUNCH_KERNEL)
			st->extra[0] = stack_arg(ctx, 1);      /* stream after sharedMem */
		else if (func == FR_CU_LAUNCH_KERNEL)
			st->extra[0] = stack_arg(ctx, 2);      /* blockDimZ, sharedMem, hStream */
		else if (func == FR_CU_LAUNCH_KERNEL_EX)
			st->extra[0] = read_user_u64(st->arg[0] + 32); /* CUlaunchConfig.hStream */
	}
	if (is_sync(func))
		bpf_map_update_elem(&fr_cuda_calls, &k, st, BPF_ANY);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(fr_cuda_enter)
{
	return enter(ctx, false);
}

SEC("uprobe")
int BPF_KPROBE(fr_cuda_enter_launch)
{
	return enter(ctx, true);
}

static __always_inline bool is_launch(__u16 func)
{
	return func == FR_CUDA_LAUNCH_KERNEL || func == FR_CU_LAUNCH_KERNEL ||
	       func == FR_CU_LAUNCH_KERNEL_EX;
}

static __always_inline bool take_stack(__u16 func)
{
	if (!is_launch(func))
		return true;
	__u32 zero = 0, *tick = bpf_map_lookup_elem(&fr_launch_tick, &zero);
	if (!tick)
		return false;
	*tick += 1;
	return fr_launch_stack_every && (*tick % fr_launch_stack_every) == 0;
}

/* Fills the event's argument fields from the saved arguments. */
static __always_inline void fill_args(struct fr_ev_cuda *e, const struct call_state *st,
				      __u16 func, __u32 copy_kind)
{
	const __u64 *a = st->arg;

	switch (func) {
	case FR_CUDA_MALLOC: case FR_CUDA_MALLOC_HOST: case FR_CU_MEM_ALLOC:
	case FR_CU_MEM_CREATE:
		e->bytes = a[1];
		e->ptr = e->result == 0 ? read_user_u64(a[0]) : 0;
		break;
	case FR_CUDA_MALLOC_ASYNC: case FR_CU_MEM_ALLOC_ASYNC:
		e->bytes = a[1];
		e->stream = a[2];
		e->ptr = e->result == 0 ? read_user_u64(a[0]) : 0;
		break;
	case FR_CUDA_MALLOC_MANAGED: case FR_CUDA_HOST_ALLOC: case FR_CU_MEM_HOST_ALLOC:
		e->bytes = a[1];
		e->kind = (__u32)a[2];
		e->ptr = e->result == 0 ? read_user_u64(a[0]) : 0;
		break;
	case FR_CUDA_FREE: case FR_CUDA_FREE_HOST: case FR_CUDA_HOST_UNREGISTER:
	case FR_CU_MEM_FREE: case FR_CU_MEM_RELEASE:
	case FR_CUDA_STREAM_SYNC: case FR_CUDA_EVENT_SYNC: case FR_CU_EVENT_SYNC:
	case FR_CUDA_EVENT_QUERY: case FR_CU_EVENT_QUERY:
		e->ptr = a[0];
		break;
	case FR_CUDA_EVENT_RECORD: case FR_CU_EVENT_RECORD:   /* (event, stream) */
	case FR_CUDA_GRAPH_LAUNCH: case FR_CU_GRAPH_LAUNCH:   /* (graphExec, stream) */
		e->ptr = a[0];
		e->stream = a[1];
		break;
	case FR_CUDA_STREAM_WAIT_EVENT: case FR_CU_STREAM_WAIT_EVENT: /* (stream, event, flags) */
		e->stream = a[0];
		e->ptr = a[1];
		e->kind = (__u32)a[2];
		break;
	case FR_CUDA_FREE_ASYNC: case FR_CU_MEM_FREE_ASYNC:
		e->ptr = a[0];
		e->stream = a[1];
		break;
	case FR_CUDA_HOST_REGISTER:
		e->ptr = a[0];
		e->bytes = a[1];
		e->kind = (__u32)a[2];
		break;
	case FR_CU_MEM_UNMAP:
		e->ptr = a[0];
		e->bytes = a[1];
		break;
	case FR_CU_MEM_MAP:
		e->ptr = a[0];
		e->bytes = a[1];
		e->src = a[3]; /* the physical allocation handle */
		break;
	case FR_CUDA_MEMCPY:
		e->ptr = a[0];
		e->src = a[1];
		e->bytes = a[2];
		e->kind = (__u32)a[3];
		break;
	case FR_CUDA_MEMCPY_ASYNC:
		e->ptr = a[0];
		e->src = a[1];
		e->bytes = a[2];
		e->kind = (__u32)a[3];
		e->stream = a[4];
		break;
	case FR_CU_MEMCPY:
		e->ptr = a[0];
		e->src = a[1];
		e->bytes = a[2];
		e->kind = copy_kind;
		break;
	case FR_CU_MEMCPY_ASYNC:
		e->ptr = a[0];
		e->src = a[1];
		e->bytes = a[2];
		e->kind = copy_kind;
		e->stream = a[3];
		break;
	case FR_CUDA_LAUNCH_KERNEL: case FR_CU_LAUNCH_KERNEL:
		e->ptr = a[0];
		e->stream = st->extra[0];
		break;
	case FR_CU_LAUNCH_KERNEL_EX:
		e->ptr = a[1];
		e->stream = st->extra[0];
		break;
	default:
		break;
	}
}

SEC("uretprobe")
int BPF_KRETPROBE(fr_cuda_exit)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u64 cookie = bpf_get_attach_cookie(ctx);
	struct call_key k = call_key_of(ctx, id);
	struct call_stack *cs = call_stack_get(&fr_cuda_thread);
	struct call_state *st = cs ? call_pop(cs, k.cookie_lo) : NULL;
	struct fr_ev_cuda e;
	__u16 func = CALL_COOKIE_FUNC(cookie);
	__s32 result = (__s32)PT_REGS_RC(ctx);
	bool stack;

	if (!st) {
		if (fr_is_traced(id >> 32))
			fr_count_drop(FR_PROBE_CUDA, FR_DROP_NO_ENTRY);
		return 0;
	}
	if (func == FR_CUDA_SET_DEVICE && result == 0) {
		cs->device = (__s32)st->arg[0];
		cs->device_known = 1;
	}
	stack = take_stack(func);
	fr_fill_common(&e.c, FR_EV_CUDA, sizeof(e), 0, id);
	e.c.ts_ns = st->ts_ns;
	e.func = func;
	e.flags = CALL_COOKIE_FLAGS(cookie) | (is_launch(func) && !stack ? FR_CUDAF_UNSAMPLED : 0);
	e.stack_id = 0;
	e.duration_ns = bpf_ktime_get_ns() - st->ts_ns;
	e.result = result;
	e.ptr = 0;
	e.src = 0;
	e.bytes = 0;
	e.stream = 0;
	e.kind = 0;
	fill_args(&e, st, func, CALL_COOKIE_EXTRA(cookie));
	if (func == FR_CUDA_SET_DEVICE)
		e.device = (__s32)st->arg[0];
	else
		e.device = cs->device_known ? cs->device : -1;
	if (is_sync(func))
		bpf_map_delete_elem(&fr_cuda_calls, &k);
	fr_emit(ctx, &e, sizeof(e), FR_PROBE_CUDA, stack ? FR_STACK_USER : FR_STACK_NO);
	return 0;
}
