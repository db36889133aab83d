/* Offsets of the rdma-core verbs structures the rdma probes read
 * (<infiniband/verbs.h>, a stable ABI).  BPF code has no verbs header, so
 * they are spelled out here; recorder/attach/verbs_abi_check.c asserts each one
 * against the real header at build time. */
#ifndef FLIGHTREC_VERBS_ABI_H
#define FLIGHTREC_VERBS_ABI_H

#include "events.h"

#define VERBS_CONTEXT_OPS 8          /* struct ibv_context.ops */
#define VERBS_OPS_POLL_CQ 88         /* struct ibv_context_ops.poll_cq */
#define VERBS_OPS_POST_SEND 200      /* .post_send */
#define VERBS_OPS_POST_RECV 208      /* .post_recv */
#define VERBS_QP_CONTEXT 0           /* struct ibv_qp.context */
#define VERBS_QP_QP_NUM 52           /* struct ibv_qp.qp_num */
#define VERBS_SEND_WR_WR_ID 0        /* struct ibv_send_wr */
#define VERBS_SEND_WR_NEXT 8
#define VERBS_SEND_WR_SG_LIST 16
#define VERBS_SEND_WR_NUM_SGE 24
#define VERBS_SEND_WR_OPCODE 28
#define VERBS_SEND_WR_SEND_FLAGS 32
#define VERBS_RECV_WR_WR_ID 0        /* struct ibv_recv_wr */
#define VERBS_RECV_WR_NEXT 8
#define VERBS_RECV_WR_SG_LIST 16
#define VERBS_RECV_WR_NUM_SGE 24
#define VERBS_SGE_LENGTH 8           /* struct ibv_sge.length */
#define VERBS_SGE_SIZE 16
#define VERBS_WC_SIZE 48             /* struct ibv_wc */
#define VERBS_WC_STATUS 8
#define VERBS_WC_OPCODE 12
#define VERBS_WC_VENDOR_ERR 16
#define VERBS_WC_BYTE_LEN 20
#define VERBS_WC_QP_NUM 28
#define VERBS_WC_SRC_QP 32
#define VERBS_QP_ATTR_QP_STATE 0     /* struct ibv_qp_attr */
#define VERBS_QP_ATTR_PATH_MTU 8
#define VERBS_QP_ATTR_DEST_QP_NUM 28
#define VERBS_QP_ATTR_AH_ATTR 56     /* struct ibv_ah_attr: grh.dgid at 0 */
#define VERBS_AH_ATTR_DLID 24
#define VERBS_AH_ATTR_PORT_NUM 30
#define VERBS_MR_ADDR 16             /* struct ibv_mr */
#define VERBS_MR_LENGTH 24
#define VERBS_MR_LKEY 36
#define VERBS_MR_RKEY 40
#define VERBS_SEND_SIGNALED 2        /* IBV_SEND_SIGNALED */
#define VERBS_QPS_RTR 2              /* IBV_QPS_RTR */
#define VERBS_QP_STATE_MASK 1        /* IBV_QP_STATE */

/* Cookie function ids of the data-path probes, attached at the provider
 * functions found in a context's ops table (not event types). */
#define RDMA_DP_POST_SEND 100
#define RDMA_DP_POST_RECV 101
#define RDMA_DP_POLL_CQ 102

/* ---- the data-path hold (bpf/rdma.bpf.c, recorder/attach/attach_hold.c) ----------
 * A context handed back by ibv_open_device (or a QP by ibv_create_qp) whose
 * provider functions are not probed yet would post unseen work requests
 * while the recorder attaches them: the return probe stops the process
 * (SIGSTOP) and the recorder continues it once they are attached.  Shared
 * by the BPF side and the recorder; not part of the trace format. */

/* Map fr_rdma_ready: post_send's file and offset, as the kernel names it
 * (the mapping's inode), once the data path of that provider is attached.
 * Uprobes belong to a file, not a process: every process that maps the
 * provider is covered from then on, and is not held again. */
struct rdma_ready_key {
	fr_u64 ino;
	fr_u64 offset;
	fr_u32 dev; /* kernel dev_t (MAJOR << 20 | MINOR) */
	fr_u32 _pad;
};

/* Maps fr_rdma_held and fr_rdma_hold_cfg: struct fr_held and struct
 * fr_hold_cfg (hold_abi.h), as every hold's. */

/* How FR_RDMA_OPS events (struct fr_ev_rdma_ctrl) carry the hold, in fields
 * that event does not otherwise use: flags, the hold's id (its held_ns) in
 * result, and the ready key of post_send in gid (ino, offset) and lkey
 * (dev). */
#define RDMA_OPS_HELD 1  /* flags: the process is stopped until released */
#define RDMA_OPS_READY 2 /* flags: the data path was attached already */
#define RDMA_OPS_KEYED 4 /* flags: gid and lkey hold post_send's ready key */
#define RDMA_OPS_QP 8    /* flags: reported at a QP's creation (else a context's) */
#endif
