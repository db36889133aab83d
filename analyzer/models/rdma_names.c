/* The names and classes of the RDMA model's tables: work completion
 * statuses (enum ibv_wc_status), their error classes, work request and
 * completion opcodes, message size buckets (declared in model_rdma.h, which
 * commands and outputs share).  Not for counting (rdma_conn_stats.c). */
#include "model_rdma.h"

#include <stdio.h>

static const char *const wc_status_names[RDMA_WC_STATUSES] = {
	"IBV_WC_SUCCESS", "IBV_WC_LOC_LEN_ERR", "IBV_WC_LOC_QP_OP_ERR",
	"IBV_WC_LOC_EEC_OP_ERR", "IBV_WC_LOC_PROT_ERR", "IBV_WC_WR_FLUSH_ERR",
	"IBV_WC_MW_BIND_ERR", "IBV_WC_BAD_RESP_ERR", "IBV_WC_LOC_ACCESS_ERR",
	"IBV_WC_REM_INV_REQ_ERR", "IBV_WC_REM_ACCESS_ERR", "IBV_WC_REM_OP_ERR",
	"IBV_WC_RETRY_EXC_ERR", "IBV_WC_RNR_RETRY_EXC_ERR", "IBV_WC_LOC_RDD_VIOL_ERR",
	"IBV_WC_REM_INV_RD_REQ_ERR", "IBV_WC_REM_ABORT_ERR", "IBV_WC_INV_EECN_ERR",
	"IBV_WC_INV_EEC_STATE_ERR", "IBV_WC_FATAL_ERR", "IBV_WC_RESP_TIMEOUT_ERR",
	"IBV_WC_GENERAL_ERR", "IBV_WC_TM_ERR", "IBV_WC_TM_RNDV_INCOMPLETE",
};

const char *rdma_wc_status_name(uint32_t status)
{
	return status < RDMA_WC_STATUSES ? wc_status_names[status] : NULL;
}

enum rdma_err_class rdma_err_class_of(uint32_t status)
{
	switch (status) {
	case RDMA_WC_RETRY_EXC_ERR:
		return RDMA_ERR_RETRY_EXHAUSTED;
	case RDMA_WC_RNR_RETRY_EXC_ERR:
		return RDMA_ERR_RNR_RETRY_EXHAUSTED;
	case 9: case 10: case 11: case 15: case 16: /* REM_INV_REQ, REM_ACCESS, REM_OP,
						       REM_INV_RD_REQ, REM_ABORT */
		return RDMA_ERR_REMOTE_NAK;
	case 1: case 2: case 3: case 4: case 6: case 7: case 8: case 14:
		return RDMA_ERR_LOCAL;
	}
	return RDMA_ERR_OTHER;
}

const char *rdma_err_class_name(enum rdma_err_class c)
{
	static const char *const names[RDMA_ERR_CLASSES] = {
		"retry_exhausted", "rnr_retry_exhausted", "remote_nak", "local", "other",
	};
	return (unsigned)c < RDMA_ERR_CLASSES ? names[c] : "other";
}

const char *rdma_opcode_name(int recv, uint32_t opcode, char *buf, size_t len)
{
	static const char *const wr_names[] = {
		"RDMA_WRITE", "RDMA_WRITE_WITH_IMM", "SEND", "SEND_WITH_IMM", "RDMA_READ",
		"ATOMIC_CMP_AND_SWP", "ATOMIC_FETCH_AND_ADD", "LOCAL_INV", "BIND_MW",
		"SEND_WITH_INV", "TSO", "DRIVER1",
	};
	static const char *const recv_names[] = {
		"RECV", "RECV_RDMA_WITH_IMM", "TM_ADD", "TM_DEL", "TM_SYNC", "TM_RECV",
		"TM_NO_TAG",
	};
	if (!recv && opcode < sizeof(wr_names) / sizeof(wr_names[0]))
		return wr_names[opcode];
	if (!recv && opcode == 15)
		return "ATOMIC_WRITE";
	if (recv && opcode >= RDMA_WC_RECV &&
	    opcode - RDMA_WC_RECV < sizeof(recv_names) / sizeof(recv_names[0]))
		return recv_names[opcode - RDMA_WC_RECV];
	snprintf(buf, len, "%s_%u", recv ? "RECV_OPCODE" : "OPCODE", opcode);
	return buf;
}

const char *rdma_size_bucket_name(enum rdma_size_bucket b)
{
	static const char *const names[RDMA_SIZE_BUCKETS] = { "<4K", "4K-64K", "64K-1M", ">=1M" };
	return (unsigned)b < RDMA_SIZE_BUCKETS ? names[b] : "?";
}

enum rdma_size_bucket rdma_size_bucket_of(uint64_t bytes)
{
	if (bytes < 4096)
		return RDMA_SIZE_LT_4K;
	if (bytes < 65536)
		return RDMA_SIZE_4K_64K;
	if (bytes < 1048576)
		return RDMA_SIZE_64K_1M;
	return RDMA_SIZE_GE_1M;
}
