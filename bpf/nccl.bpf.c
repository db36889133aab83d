/* The nccl probe family: collectives, point-to-point, groups and the
 * communicator calls of libnccl.  Entry saves the arguments (the unique id
 * of a communicator init is hashed at entry: it is passed by value on the
 * stack) and numbers collectives and send/recv per communicator; return
 * builds one event with entry time, duration, result, that number and the
 * caller's stack.  A call that never returns writes no event: its entry
 * state stays in fr_nccl_calls, where the recorder finds it
 * (recorder/drain/inflight.c).  Not for GPU-side completion: a collective's host
 * call returns when it is enqueued (a blocking one, like the stand-in's,
 * when it completes). */
#include "uprobe_common.bpf.h"
#include "nccl_args.h"

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct call_key);
	__type(value, struct call_state);
} fr_nccl_calls SEC(".maps");

/* Sequence numbers per (process, communicator): counted at entry, so a
 * collective that never returns still has its number, and in the kernel,
 * so a lost event does not shift the numbers after it.  Reset when a
 * communicator is created (a destroyed one's address may be reused). */
struct nccl_seq_key {
	__u32 pid;
	__u32 _pad;
	__u64 comm;
};
struct nccl_seq {
	__u32 coll; /* collectives: the same order on every rank */
	__u32 p2p;  /* send/recv: per process */
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct nccl_seq_key);
	__type(value, struct nccl_seq);
} fr_nccl_seq SEC(".maps");

/* NCCL's group state is per thread: the depth, and the first call queued
 * in the outermost group, which its ncclGroupEnd reports. */
struct nccl_group {
	__u32 depth;
	__u32 queued;
	__u64 comm;
	__u32 seq;
	__u16 func;
	__u16 _pad;
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tid */
	__type(value, struct nccl_group);
} fr_nccl_group SEC(".maps");

/* The next number of a collective or send/recv on its communicator. */
static __always_inline __u32 next_seq(__u32 pid, __u64 comm, bool collective)
{
	struct nccl_seq_key k = { .pid = pid, .comm = comm };
	struct nccl_seq *s = bpf_map_lookup_elem(&fr_nccl_seq, &k);

	if (!s) {
		struct nccl_seq zero = {};
		bpf_map_update_elem(&fr_nccl_seq, &k, &zero, BPF_NOEXIST);
		s = bpf_map_lookup_elem(&fr_nccl_seq, &k);
		if (!s)
			return 0;
	}
	/* two threads may drive one communicator (NCCL forbids concurrent
	 * calls on one, but a number must never repeat) */
	return __sync_fetch_and_add(collective ? &s->coll : &s->p2p, 1) + 1;
}

static __always_inline void forget_seq(__u32 pid, __u64 comm)
{
	struct nccl_seq_key k = { .pid = pid, .comm = comm };
	bpf_map_delete_elem(&fr_nccl_seq, &k);
}

/* Group bookkeeping at the entry of func; fills st for an outermost
 * ncclGroupEnd (see nccl_args_fill). */
static __always_inline void group_enter(__u32 tid, __u16 func, struct call_state *st,
					__u64 comm)
{
	struct nccl_group *g = bpf_map_lookup_elem(&fr_nccl_group, &tid);

	if (func == FR_NCCL_GROUP_START) {
		if (!g) {
			struct nccl_group zero = {};
			bpf_map_update_elem(&fr_nccl_group, &tid, &zero, BPF_ANY);
			g = bpf_map_lookup_elem(&fr_nccl_group, &tid);
			if (!g)
				return;
		}
		if (g->depth++ == 0)
			g->queued = 0;
		return;
	}
	if (!g || !g->depth)
		return;
	if (func == FR_NCCL_GROUP_END) {
		if (--g->depth == 0 && g->queued) {
			st->extra[0] = g->comm;
			st->extra[1] = g->queued;
			st->seq = g->seq;
			st->arg[0] = g->func;
		}
		return;
	}
	if (g->queued++ == 0) {
		g->comm = comm;
		g->seq = st->seq;
		g->func = func;
	}
}

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
	if (!init) {
		__u16 func = CALL_COOKIE_FUNC(k.cookie_lo);
		__u64 comm = 0;
		if (nccl_args_is_collective(func) || nccl_args_is_p2p(func)) {
			comm = nccl_args_comm(&st, func);
			/* a NULL communicator fails its argument check: no number */
			if (comm)
				st.seq = next_seq(st.pid, comm, nccl_args_is_collective(func));
		}
		if (func == FR_NCCL_GROUP_START || func == FR_NCCL_GROUP_END || comm)
			group_enter(k.tid, func, &st, comm);
	} else {
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

/* Fills the event's argument fields from the saved arguments. */
static __always_inline void nccl_fill(struct fr_ev_nccl *e, const struct call_state *st,
				      __u16 func)
{
	const __u64 *a = st->arg;

	switch (func) {
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
		nccl_args_fill(e, st, func);
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
	__u16 func = CALL_COOKIE_FUNC(cookie);

	if (!st) {
		if (fr_is_traced(id >> 32))
			fr_count_drop(FR_PROBE_NCCL, FR_DROP_NO_ENTRY);
		return 0;
	}
	__builtin_memset(&e, 0, sizeof(e));
	fr_fill_common(&e.c, FR_EV_NCCL, sizeof(e), 0, id);
	e.c.ts_ns = st->ts_ns;
	e.func = func;
	e.flags = CALL_COOKIE_FLAGS(cookie);
	e.duration_ns = bpf_ktime_get_ns() - st->ts_ns;
	e.result = (__s32)PT_REGS_RC(ctx);
	e.peer = -1;
	e.rank = -1;
	e.nranks = -1;
	e.seq = st->seq;
	nccl_fill(&e, st, func);
	if (func == FR_NCCL_COMM_GET_ASYNC_ERROR) {
		/* (comm, ncclResult_t *asyncError): a healthy answer (success,
		 * or ncclInProgress on a nonblocking communicator) is no event */
		__s32 async = 0;
		bpf_probe_read_user(&async, sizeof(async), (void *)st->arg[1]);
		if (e.result == 0 && (async == 0 || async == 7)) {
			bpf_map_delete_elem(&fr_nccl_calls, &k);
			return 0;
		}
		e.comm = st->arg[0];
		e.count = (__u64)(__s64)async;
	}
	/* a new communicator counts from 1 (ncclCommInitAll's others are not
	 * read: their numbers start wherever a reused address left off) */
	if ((func == FR_NCCL_COMM_INIT_RANK || func == FR_NCCL_COMM_INIT_RANK_CONFIG ||
	     func == FR_NCCL_COMM_INIT_ALL || func == FR_NCCL_COMM_SPLIT ||
	     func == FR_NCCL_COMM_DESTROY) && e.comm)
		forget_seq(id >> 32, e.comm);
	bpf_map_delete_elem(&fr_nccl_calls, &k);
	fr_emit(ctx, &e, sizeof(e), FR_PROBE_NCCL, FR_STACK_USER);
	return 0;
}
