/* The rdma probe family's function table: the libibverbs control path
 * (exported; the default symbol version is the one found).  The data path
 * is attached from the ops table the BPF side reports: see
 * rdma_datapath.c. */
#include "probe_families.h"

#include "events.h"

#define CTRL(sym, fn) {sym, fn, 0, 0, 0, false}
#define MODIFY(sym, fn) {sym, fn, 0, 0, 1, false}
#define RELEASE(sym, fn) {sym, fn, 0, 0, 2, false}
/* extra: where ibv_reg_mr's access flags are (0: 4th arg, 1: 5th, 2: 6th) */
#define REG(sym, fn, where) {sym, fn, 0, where, 0, false}

const struct uprobe_spec rdma_specs[] = {
	CTRL("ibv_open_device", FR_RDMA_OPEN_DEVICE),
	CTRL("ibv_create_qp", FR_RDMA_CREATE_QP),
	CTRL("ibv_create_qp_ex", FR_RDMA_CREATE_QP_EX),
	MODIFY("ibv_modify_qp", FR_RDMA_MODIFY_QP),
	RELEASE("ibv_destroy_qp", FR_RDMA_DESTROY_QP),
	REG("ibv_reg_mr", FR_RDMA_REG_MR, 0),
	REG("ibv_reg_mr_iova2", FR_RDMA_REG_MR, 1),
	REG("ibv_reg_dmabuf_mr", FR_RDMA_REG_DMABUF_MR, 2),
	RELEASE("ibv_dereg_mr", FR_RDMA_DEREG_MR),
	CTRL("ibv_create_cq", FR_RDMA_CREATE_CQ),
};
const size_t n_rdma_specs = sizeof(rdma_specs) / sizeof(rdma_specs[0]);
