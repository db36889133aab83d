/* Build-time proof that bpf/verbs_abi.h matches the real verbs header: the
 * rdma probes read these offsets from live processes. */
#include <infiniband/verbs.h>
#include <stddef.h>

#include "verbs_abi.h"

#define SAME(c, e) _Static_assert((c) == (e), #c " differs from <infiniband/verbs.h>")
SAME(VERBS_CONTEXT_OPS, offsetof(struct ibv_context, ops));
SAME(VERBS_OPS_POLL_CQ, offsetof(struct ibv_context_ops, poll_cq));
SAME(VERBS_OPS_POST_SEND, offsetof(struct ibv_context_ops, post_send));
SAME(VERBS_OPS_POST_RECV, offsetof(struct ibv_context_ops, post_recv));
SAME(VERBS_QP_CONTEXT, offsetof(struct ibv_qp, context));
SAME(VERBS_QP_QP_NUM, offsetof(struct ibv_qp, qp_num));
SAME(VERBS_SEND_WR_WR_ID, offsetof(struct ibv_send_wr, wr_id));
SAME(VERBS_SEND_WR_NEXT, offsetof(struct ibv_send_wr, next));
SAME(VERBS_SEND_WR_SG_LIST, offsetof(struct ibv_send_wr, sg_list));
SAME(VERBS_SEND_WR_NUM_SGE, offsetof(struct ibv_send_wr, num_sge));
SAME(VERBS_SEND_WR_OPCODE, offsetof(struct ibv_send_wr, opcode));
SAME(VERBS_SEND_WR_SEND_FLAGS, offsetof(struct ibv_send_wr, send_flags));
SAME(VERBS_RECV_WR_WR_ID, offsetof(struct ibv_recv_wr, wr_id));
SAME(VERBS_RECV_WR_NEXT, offsetof(struct ibv_recv_wr, next));
SAME(VERBS_RECV_WR_SG_LIST, offsetof(struct ibv_recv_wr, sg_list));
SAME(VERBS_RECV_WR_NUM_SGE, offsetof(struct ibv_recv_wr, num_sge));
SAME(VERBS_SGE_LENGTH, offsetof(struct ibv_sge, length));
SAME(VERBS_SGE_SIZE, sizeof(struct ibv_sge));
SAME(VERBS_WC_SIZE, sizeof(struct ibv_wc));
SAME(VERBS_WC_STATUS, offsetof(struct ibv_wc, status));
SAME(VERBS_WC_OPCODE, offsetof(struct ibv_wc, opcode));
SAME(VERBS_WC_VENDOR_ERR, offsetof(struct ibv_wc, vendor_err));
SAME(VERBS_WC_BYTE_LEN, offsetof(struct ibv_wc, byte_len));
SAME(VERBS_WC_QP_NUM, offsetof(struct ibv_wc, qp_num));
SAME(VERBS_WC_SRC_QP, offsetof(struct ibv_wc, src_qp));
SAME(VERBS_QP_ATTR_QP_STATE, offsetof(struct ibv_qp_attr, qp_state));
SAME(VERBS_QP_ATTR_PATH_MTU, offsetof(struct ibv_qp_attr, path_mtu));
SAME(VERBS_QP_ATTR_DEST_QP_NUM, offsetof(struct ibv_qp_attr, dest_qp_num));
SAME(VERBS_QP_ATTR_AH_ATTR, offsetof(struct ibv_qp_attr, ah_attr));
SAME(0, offsetof(struct ibv_ah_attr, grh) + offsetof(struct ibv_global_route, dgid));
SAME(VERBS_AH_ATTR_DLID, offsetof(struct ibv_ah_attr, dlid));
SAME(VERBS_AH_ATTR_PORT_NUM, offsetof(struct ibv_ah_attr, port_num));
SAME(VERBS_MR_ADDR, offsetof(struct ibv_mr, addr));
SAME(VERBS_MR_LENGTH, offsetof(struct ibv_mr, length));
SAME(VERBS_MR_LKEY, offsetof(struct ibv_mr, lkey));
SAME(VERBS_MR_RKEY, offsetof(struct ibv_mr, rkey));
SAME(VERBS_SEND_SIGNALED, IBV_SEND_SIGNALED);
SAME(VERBS_QPS_RTR, IBV_QPS_RTR);
SAME(VERBS_QP_STATE_MASK, IBV_QP_STATE);
