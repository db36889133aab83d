/* The rdma probe family.  Control path: the exported libibverbs calls
 * (open_device, create/modify/destroy qp, reg/dereg mr, create cq).  Data
 * path: ibv_post_send/post_recv/poll_cq are static inline in verbs.h and
 * jump through context->ops into the provider (libmlx5...), which exports
 * nothing: at open_device/create_qp return this program reports the ops
 * table (FR_RDMA_OPS), and the recorder attaches the data-path programs at
 * those addresses.  One event per work request posted and per completion
 * returned; empty polls (a proxy thread busy-polls millions of times a
 * second) only bump a counter.
 *
 * The attach takes the recorder milliseconds (more on a busy node), and a
 * program may post right after opening its device: whatever it posts
 * meanwhile goes straight to the provider, unseen and uncounted.  So the
 * return probe that reports an ops table whose provider is not attached yet
 * stops the process (SIGSTOP, delivered before the caller runs another
 * instruction) and the recorder continues it (SIGCONT) once the three
 * functions are attached; a guardian process continues it if the recorder
 * dies or takes longer than the hold's bound (recorder/attach/attach_hold.c).  Why a
 * stop: a uprobe program cannot sleep or spin, nor make the thread wait in
 * the kernel; a stop is the one wait it can impose, and the kernel keeps it
 * exact (the caller stops at the return, every other thread at its next
 * return to user space, so nobody posts).  Why at open_device (or
 * import_device; create_qp only for a context opened before the recording
 * started): it is the one call every verbs user makes before it can post
 * (QPs can be created
 * through calls that are not exported: ibv_create_qp_ex is inline,
 * mlx5dv_create_qp lives in the provider).  A provider is attached once per
 * file for every process (map fr_rdma_ready), so each provider is held for
 * once per recording, not once per process or device.  A process whose stop
 * its parent would see as job control (a foreground job of a terminal) or
 * that a debugger traces is not stopped: its QPs created before the attach
 * are counted as FR_DROP_NOT_ATTACHED instead (by the recorder, from the
 * ops event of each such QP).  What a stop does besides: the parent gets a
 * SIGCHLD (ignored unless handled; waitpid reports it only with WUNTRACED),
 * and Linux makes a few blocking calls of other threads (epoll_wait, socket
 * calls with SO_RCVTIMEO/SO_SNDTIMEO, semop, sigtimedwait) return EINTR
 * once after a stop, which code that retries on EINTR does not notice. */
#include "uprobe_common.bpf.h"
#include "hold.bpf.h"
#include "verbs_abi.h"

#define MAX_WR 64   /* work requests walked per post call */
#define MAX_SGE 8   /* SGEs summed per work request */
#define MAX_WC 256  /* completions reported per poll */

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct call_key);
	__type(value, struct call_state);
} fr_rdma_calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} fr_rdma_empty_polls SEC(".maps");

/* the data-path hold: see the top of this file and verbs_abi.h */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* tgid */
	__type(value, struct fr_held);
} fr_rdma_held SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct rdma_ready_key);
	__type(value, __u8);
} fr_rdma_ready SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fr_hold_cfg);
} fr_rdma_hold_cfg SEC(".maps");

static __always_inline __u32 read_u32(__u64 addr)
{
	__u32 v = 0;
	if (addr)
		bpf_probe_read_user(&v, sizeof(v), (void *)addr);
	return v;
}

static __always_inline int save(struct pt_regs *ctx, bool modify)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct call_key k;
	struct call_state st;

	if (!fr_is_traced(id >> 32))
		return 0;
	k = call_key_of(ctx, id);
	save_args(ctx, &st);
	if (modify) {
		/* the remote end, read from the attr argument before the call */
		__u64 ah = st.arg[1] + VERBS_QP_ATTR_AH_ATTR;
		bpf_probe_read_user(&st.extra[0], 16, (void *)ah);
	}
	bpf_map_update_elem(&fr_rdma_calls, &k, &st, BPF_ANY);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(fr_rdma_enter)
{
	return save(ctx, false);
}

SEC("uprobe")
int BPF_KPROBE(fr_rdma_enter_modify)
{
	return save(ctx, true);
}

struct vma_lookup {
	__u64 addr;
	struct rdma_ready_key key;
	bool found;
};

/* post_send's file and offset: the provider is attached per file, so this
 * names it for every process that maps it */
static long ready_key_of_vma(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct vma_lookup *l = data;
	struct file *f = BPF_CORE_READ(vma, vm_file);

	if (!f)
		return 0;
	l->key.ino = BPF_CORE_READ(f, f_inode, i_ino);
	l->key.dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev);
	l->key.offset = l->addr - BPF_CORE_READ(vma, vm_start) + (BPF_CORE_READ(vma, vm_pgoff) << 12);
	l->found = true;
	return 0;
}

/* The stop (bpf/hold.bpf.h) over this family's maps: the hold's id, 0
 * when the process is not held. */
static __always_inline __u64 hold_process(__u32 tgid)
{
	return fr_hold_process(&fr_rdma_held, &fr_rdma_hold_cfg, tgid);
}

static __always_inline void emit_ops(__u64 id, __u64 context, __u16 func)
{
	struct fr_ev_rdma_ctrl *e;
	__u64 ops = context + VERBS_CONTEXT_OPS;
	struct vma_lookup l = {};
	bool ready;
	__u64 held = 0;

	if (!context)
		return;
	/* the ring record first: a process is never stopped for an ops table
	 * the recorder will not see */
	e = fr_reserve(sizeof(*e), FR_PROBE_RDMA);
	if (!e)
		return;
	__builtin_memset(e, 0, sizeof(*e));
	fr_fill_common(&e->c, FR_EV_RDMA_CTRL, sizeof(*e), 0, id);
	e->func = FR_RDMA_OPS;
	e->ptr = context;
	e->addr = read_user_u64(ops + VERBS_OPS_POST_SEND);
	e->length = read_user_u64(ops + VERBS_OPS_POST_RECV);
	e->obj = read_user_u64(ops + VERBS_OPS_POLL_CQ);
	l.addr = e->addr;
	if (l.addr)
		bpf_find_vma(bpf_get_current_task_btf(), l.addr, ready_key_of_vma, &l, 0);
	ready = l.found && bpf_map_lookup_elem(&fr_rdma_ready, &l.key);
	if (l.found) {
		e->flags |= RDMA_OPS_KEYED;
		__builtin_memcpy(e->gid, &l.key.ino, 8);
		__builtin_memcpy(e->gid + 8, &l.key.offset, 8);
		e->lkey = l.key.dev;
	}
	if (ready) {
		e->flags |= RDMA_OPS_READY;
	} else if (e->addr) {
		held = hold_process(id >> 32);
		if (held) {
			e->flags |= RDMA_OPS_HELD;
			e->result = (__s64)held;
		}
	}
	/* reported at a QP's creation: one handed back unattached and unheld
	 * is counted by the recorder as not_attached (with the contexts it
	 * lets go too late, in one counter) */
	if (func != FR_RDMA_OPEN_DEVICE)
		e->flags |= RDMA_OPS_QP;
	/* a held process's ops table must reach the recorder now, not at its
	 * next timed drain */
	bpf_ringbuf_submit(e, held ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

SEC("uretprobe")
int BPF_KRETPROBE(fr_rdma_exit)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u64 cookie = bpf_get_attach_cookie(ctx);
	struct call_key k = call_key_of(ctx, id);
	struct call_state *st = bpf_map_lookup_elem(&fr_rdma_calls, &k);
	struct fr_ev_rdma_ctrl ev, *e = &ev;
	__u16 func = CALL_COOKIE_FUNC(cookie);
	__u64 rc = PT_REGS_RC(ctx);
	__u64 ops_context = 0;

	if (!st) {
		if (fr_is_traced(id >> 32))
			fr_count_drop(FR_PROBE_RDMA, FR_DROP_NO_ENTRY);
		return 0;
	}
	__builtin_memset(e, 0, sizeof(*e));
	fr_fill_common(&e->c, FR_EV_RDMA_CTRL, sizeof(*e), 0, id);
	e->c.ts_ns = st->ts_ns;
	e->func = func;
	e->duration_ns = bpf_ktime_get_ns() - st->ts_ns;
	const __u64 *a = st->arg;
	switch (func) {
	case FR_RDMA_OPEN_DEVICE:
		e->ptr = rc;
		e->result = rc ? 0 : -1;
		ops_context = rc;
		break;
	case FR_RDMA_CREATE_QP: case FR_RDMA_CREATE_QP_EX:
		e->ptr = rc;
		e->obj = a[0];
		e->result = rc ? 0 : -1;
		e->qp_num = read_u32(rc ? rc + VERBS_QP_QP_NUM : 0);
		ops_context = read_user_u64(rc ? rc + VERBS_QP_CONTEXT : 0);
		break;
	case FR_RDMA_MODIFY_QP: {
		__u64 attr = a[1];
		e->result = (__s32)rc;
		e->ptr = a[0];
		e->qp_num = read_u32(a[0] + VERBS_QP_QP_NUM);
		e->attr_mask = (__u32)a[2];
		e->qp_state = read_u32(attr + VERBS_QP_ATTR_QP_STATE);
		if (e->qp_state == VERBS_QPS_RTR) {
			__u16 dlid = 0;
			__u8 port = 0;
			e->dest_qp_num = read_u32(attr + VERBS_QP_ATTR_DEST_QP_NUM);
			e->path_mtu = read_u32(attr + VERBS_QP_ATTR_PATH_MTU);
			bpf_probe_read_user(&dlid, 2, (void *)(attr + VERBS_QP_ATTR_AH_ATTR + VERBS_AH_ATTR_DLID));
			bpf_probe_read_user(&port, 1, (void *)(attr + VERBS_QP_ATTR_AH_ATTR + VERBS_AH_ATTR_PORT_NUM));
			e->dlid = dlid;
			e->port_num = port;
			__builtin_memcpy(e->gid, st->extra, 16);
		}
		break;
	}
	case FR_RDMA_DESTROY_QP:
		e->result = (__s32)rc;
		e->ptr = a[0];
		e->qp_num = (__u32)st->extra[0];
		break;
	case FR_RDMA_REG_MR: case FR_RDMA_REG_DMABUF_MR:
		e->ptr = rc;
		e->obj = a[0];
		e->result = rc ? 0 : -1;
		e->addr = a[1];
		e->length = a[2];
		/* ibv_reg_mr(pd, addr, len, access); _iova2 and dmabuf move access */
		e->access = (__u32)(CALL_COOKIE_EXTRA(cookie) == 2 ? a[5] :
				    CALL_COOKIE_EXTRA(cookie) == 1 ? a[4] : a[3]);
		if (rc) {
			e->lkey = read_u32(rc + VERBS_MR_LKEY);
			e->rkey = read_u32(rc + VERBS_MR_RKEY);
		}
		break;
	case FR_RDMA_DEREG_MR:
		e->result = (__s32)rc;
		e->ptr = a[0];
		e->lkey = (__u32)st->extra[0];
		break;
	case FR_RDMA_CREATE_CQ:
		e->ptr = rc;
		e->obj = a[0];
		e->length = a[1];
		e->result = rc ? 0 : -1;
		break;
	default:
		break;
	}
	bpf_map_delete_elem(&fr_rdma_calls, &k);
	fr_emit(ctx, e, sizeof(*e), FR_PROBE_RDMA, FR_STACK_USER);
	if (ops_context)
		emit_ops(id, ops_context, func);
	return 0;
}

/* destroy_qp and dereg_mr: the object is gone at return; read it now */
SEC("uprobe")
int BPF_KPROBE(fr_rdma_enter_release)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct call_key k;
	struct call_state st;
	__u16 func;

	if (!fr_is_traced(id >> 32))
		return 0;
	k = call_key_of(ctx, id);
	func = CALL_COOKIE_FUNC(k.cookie_lo);
	save_args(ctx, &st);
	if (func == FR_RDMA_DESTROY_QP)
		st.extra[0] = read_u32(st.arg[0] + VERBS_QP_QP_NUM);
	else
		st.extra[0] = read_u32(st.arg[0] + VERBS_MR_LKEY);
	bpf_map_update_elem(&fr_rdma_calls, &k, &st, BPF_ANY);
	return 0;
}

/* ---- data path ----------------------------------------------------------- */

SEC("uprobe")
int BPF_KPROBE(fr_rdma_dp_enter)
{
	return save(ctx, false);
}

/* The walks below run as bpf_loop callbacks: the verifier checks one
 * iteration instead of every path through MAX_WR x MAX_SGE (or MAX_WC)
 * unrolled iterations, which made this object most of the recorder's
 * start-up (1.7 s of verification for the return program alone). */
struct post_walk_ctx {
	__u64 id, ts_ns, wr, bad;
	__u32 qp_num;
	__s32 result;
	bool recv, failed;
};

static long post_one(__u32 i, void *data)
{
	struct post_walk_ctx *c = data;
	__u64 wr = c->wr;
	bool recv = c->recv;

	if (!wr)
		return 1;
	if (c->bad && wr == c->bad)
		c->failed = true;
	c->wr = read_user_u64(wr + (recv ? VERBS_RECV_WR_NEXT : VERBS_SEND_WR_NEXT));

	struct fr_ev_rdma_post *e = bpf_ringbuf_reserve(&fr_events, sizeof(*e), 0);
	if (!e) {
		/* counted per work request, and the walk goes on: every one the
		 * program posted is recorded or counted */
		fr_count_drop(FR_PROBE_RDMA, FR_DROP_RING_FULL);
		return 0;
	}
	__u64 sg = read_user_u64(wr + (recv ? VERBS_RECV_WR_SG_LIST : VERBS_SEND_WR_SG_LIST));
	__s32 num_sge = (__s32)read_u32(wr + (recv ? VERBS_RECV_WR_NUM_SGE : VERBS_SEND_WR_NUM_SGE));
	__u64 bytes = 0;

	for (int s = 0; s < MAX_SGE; s++) {
		if (s >= num_sge)
			break;
		bytes += read_u32(sg + s * VERBS_SGE_SIZE + VERBS_SGE_LENGTH);
	}
	fr_fill_common(&e->c, FR_EV_RDMA_POST, sizeof(*e), 0, c->id);
	e->c.ts_ns = c->ts_ns;
	e->wr_id = read_user_u64(wr);
	e->bytes = bytes;
	e->qp_num = c->qp_num;
	e->num_sge = num_sge > 0 ? (__u16)num_sge : 0;
	e->wr_index = (__u16)i;
	e->result = c->result;
	e->_pad = 0;
	e->_pad2 = 0;
	if (recv) {
		e->opcode = 0;
		e->flags = FR_RDMA_POST_RECV;
	} else {
		e->opcode = read_u32(wr + VERBS_SEND_WR_OPCODE);
		e->flags = (read_u32(wr + VERBS_SEND_WR_SEND_FLAGS) & VERBS_SEND_SIGNALED) ?
				   FR_RDMA_POST_SIGNALED : 0;
	}
	if (c->failed)
		e->flags |= FR_RDMA_POST_FAILED;
	if (i == MAX_WR - 1 && c->wr)
		e->flags |= FR_RDMA_POST_TRUNCATED;
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}

static __always_inline void post_walk(__u64 id, const struct call_state *st, bool recv,
				      __s32 result)
{
	struct post_walk_ctx c = {
		.id = id,
		.ts_ns = st->ts_ns,
		.wr = st->arg[1],
		.bad = result ? read_user_u64(st->arg[2]) : 0,
		.qp_num = read_u32(st->arg[0] + VERBS_QP_QP_NUM),
		.result = result,
		.recv = recv,
	};

	bpf_loop(MAX_WR, post_one, &c, 0);
}

struct poll_walk_ctx {
	__u64 id, wc, cq;
	__u32 n;
};

static long poll_one(__u32 i, void *data)
{
	struct poll_walk_ctx *c = data;

	if (i >= c->n)
		return 1;
	struct fr_ev_rdma_cqe *e = bpf_ringbuf_reserve(&fr_events, sizeof(*e), 0);
	__u64 w = c->wc + (__u64)i * VERBS_WC_SIZE;
	if (!e) {
		fr_count_drop(FR_PROBE_RDMA, FR_DROP_RING_FULL);  /* per completion */
		return 0;
	}
	fr_fill_common(&e->c, FR_EV_RDMA_CQE, sizeof(*e), 0, c->id);
	e->wr_id = read_user_u64(w);
	e->status = read_u32(w + VERBS_WC_STATUS);
	e->opcode = read_u32(w + VERBS_WC_OPCODE);
	e->byte_len = read_u32(w + VERBS_WC_BYTE_LEN);
	e->qp_num = read_u32(w + VERBS_WC_QP_NUM);
	e->src_qp = read_u32(w + VERBS_WC_SRC_QP);
	e->vendor_err = read_u32(w + VERBS_WC_VENDOR_ERR);
	e->cq = c->cq;
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}

static __always_inline void poll_report(__u64 id, const struct call_state *st, int n)
{
	struct poll_walk_ctx c = {
		.id = id, .wc = st->arg[2], .cq = st->arg[0],
		.n = n > MAX_WC ? MAX_WC : (__u32)n,
	};

	bpf_loop(MAX_WC, poll_one, &c, 0);
}

SEC("uretprobe")
int BPF_KRETPROBE(fr_rdma_dp_exit)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct call_key k = call_key_of(ctx, id);
	struct call_state *st = bpf_map_lookup_elem(&fr_rdma_calls, &k);
	__u16 func = CALL_COOKIE_FUNC(k.cookie_lo);
	int rc = (int)PT_REGS_RC(ctx);

	if (!st)
		return 0;
	if (func == RDMA_DP_POLL_CQ) {
		if (rc <= 0) {
			__u32 zero = 0;
			__u64 *n = bpf_map_lookup_elem(&fr_rdma_empty_polls, &zero);
			if (n)
				*n += 1;
		} else {
			poll_report(id, st, rc);
		}
	} else {
		post_walk(id, st, func == RDMA_DP_POST_RECV, rc);
	}
	bpf_map_delete_elem(&fr_rdma_calls, &k);
	return 0;
}
