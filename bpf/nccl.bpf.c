/* The nccl probe family: collectives, point-to-point, groups and the
 * communicator calls of libnccl.  Entry saves the arguments (the unique id
 * of a communicator init is hashed at entry: it is passed by value on the
 * stack); return builds one event with entry time, duration, result and
 * the caller's stack.  Not for GPU-side completion: a collective's host call
 * returns when it is enqueued (a blocking one, like the stand-in's, when it
 * completes). */
#include "uprobe_common.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct call_key);
	__type(value, struct call_state);
} fr_nccl_calls SEC(".maps");

static __always_inline int nccl_enter(struct pt_regs *ctx, bool init)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct call_key k;
	struct call_state st;

	if (!fr_is_traced(id >> 32))
		return 0;
	k = call_key_of(ctx, id);
	save_args(ctx, &st);
	st.extra[0] = stack_arg(ctx, 0);
	st.extra[1] = stack_arg(ctx, 1);
	if (init) {
		/* FNV-1a over the 128-byte ncclUniqueId passed by value */
		__u64 h = 0xcbf29ce484222325ull;
		__u8 uid[128];
		if (bpf_probe_read_user(uid, sizeof(uid), (void *)(PT_REGS_SP(ctx) + 8)) == 0) {
			for (int i = 0; i < 128; i++) {
				h ^= uid[i];
				h *= 0x100000001b3ull;
			}
		}
		st.extra[1] = h;
	}
	bpf_map_update_elem(&fr_nccl_calls, &k, &st, BPF_ANY);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(fr_nccl_enter)
{
	return nccl_enter(ctx, false);
}

SEC("uprobe")
int BPF_KPROBE(fr_nccl_enter_init)
{
	return nccl_enter(ctx, true);
}

static __always_inline void nccl_fill(struct fr_ev_nccl *e, const struct call_state *st,
				      __u16 func)
{
	const __u64 *a = st->arg;

	switch (func) {
	case FR_NCCL_ALL_REDUCE: case FR_NCCL_REDUCE_SCATTER:
		e->count = a[2];
		e->datatype = (__u32)a[3];
		e->op = (__u32)a[4];
		e->comm = a[5];
		e->stream = st->extra[0];
		break;
	case FR_NCCL_ALL_GATHER:
		e->count = a[2];
		e->datatype = (__u32)a[3];
		e->comm = a[4];
		e->stream = a[5];
		break;
	case FR_NCCL_BROADCAST:
		e->count = a[2];
		e->datatype = (__u32)a[3];
		e->peer = (__s32)a[4];
		e->comm = a[5];
		e->stream = st->extra[0];
		break;
	case FR_NCCL_REDUCE:
		e->count = a[2];
		e->datatype = (__u32)a[3];
		e->op = (__u32)a[4];
		e->peer = (__s32)a[5];
		e->comm = st->extra[0];
		e->stream = st->extra[1];
		break;
	case FR_NCCL_SEND: case FR_NCCL_RECV:
		e->count = a[1];
		e->datatype = (__u32)a[2];
		e->peer = (__s32)a[3];
		e->comm = a[4];
		e->stream = a[5];
		break;
	case FR_NCCL_COMM_INIT_RANK: case FR_NCCL_COMM_INIT_RANK_CONFIG:
		/* (comm*, nranks, uniqueId by value, rank[, config]) */
		e->nranks = (__s32)a[1];
		e->rank = (__s32)a[2];
		e->uid_hash = st->extra[1];
		e->comm = e->result == 0 ? read_user_u64(a[0]) : 0;
		break;
	case FR_NCCL_COMM_INIT_ALL:
		e->nranks = (__s32)a[1];
		e->comm = e->result == 0 ? read_user_u64(a[0]) : 0;
		break;
	case FR_NCCL_COMM_SPLIT:
		/* (comm, color, key, newcomm*, config): count = the parent */
		e->count = a[0];
		e->peer = (__s32)a[1];
		e->rank = (__s32)a[2];
		e->comm = e->result == 0 ? read_user_u64(a[3]) : 0;
		break;
	case FR_NCCL_COMM_DESTROY:
		e->comm = a[0];
		break;
	default:
		break;
	}
}

SEC("uretprobe")
int BPF_KRETPROBE(fr_nccl_exit)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u64 cookie = bpf_get_attach_cookie(ctx);
	struct call_key k = call_key_of(ctx, id);
	struct call_state *st = bpf_map_lookup_elem(&fr_nccl_calls, &k);
	struct fr_ev_nccl e;
	__u16 func = cookie & 0xffff;

	if (!st) {
		if (fr_is_traced(id >> 32))
			fr_count_drop(FR_PROBE_NCCL, FR_DROP_NO_ENTRY);
		return 0;
	}
	__builtin_memset(&e, 0, sizeof(e));
	fr_fill_common(&e.c, FR_EV_NCCL, sizeof(e), 0, id);
	e.c.ts_ns = st->ts_ns;
	e.func = func;
	e.flags = (cookie >> 16) & 0xffff;
	e.duration_ns = bpf_ktime_get_ns() - st->ts_ns;
	e.result = (__s32)PT_REGS_RC(ctx);
	e.peer = -1;
	e.rank = -1;
	e.nranks = -1;
	nccl_fill(&e, st, func);
	bpf_map_delete_elem(&fr_nccl_calls, &k);
	fr_emit(ctx, &e, sizeof(e), FR_PROBE_NCCL, FR_STACK_USER);
	return 0;
}
