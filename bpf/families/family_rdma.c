/* The rdma family: the libibverbs control path (exported; the default
 * symbol version is the one found) and the data path: every work request
 * posted and every completion polled (bpf/rdma.bpf.c).  The data path has
 * no exported symbols: the recorder attaches it at the provider functions a
 * live context's ops table names (FR_RDMA_OPS, recorder/attach/rdma_datapath.c). */
#include "fr_family.h"

static const struct fr_family_record records[] = {
	{ FR_EV_RDMA_CTRL, 1, sizeof(struct fr_ev_rdma_ctrl), "rdma_ctrl",
	  FR_COMMON_FIELDS ",func:u16,flags:u16,stack_id:u32,duration_ns:u64,result:s64,"
	  "ptr:u64,obj:u64,qp_num:u32,dest_qp_num:u32,qp_state:u32,attr_mask:u32,"
	  "path_mtu:u32,dlid:u16,port_num:u8,_pad:u8,gid:u8[16],addr:u64,"
	  "length:u64,lkey:u32,rkey:u32,access:u32,_pad2:u32", true },
	{ FR_EV_RDMA_POST, 1, sizeof(struct fr_ev_rdma_post), "rdma_post",
	  FR_COMMON_FIELDS ",wr_id:u64,bytes:u64,qp_num:u32,opcode:u32,num_sge:u16,"
	  "flags:u16,wr_index:u16,_pad:u16,result:s32,_pad2:u32", false },
	{ FR_EV_RDMA_CQE, 1, sizeof(struct fr_ev_rdma_cqe), "rdma_cqe",
	  FR_COMMON_FIELDS ",wr_id:u64,status:u32,opcode:u32,byte_len:u32,qp_num:u32,"
	  "src_qp:u32,vendor_err:u32,cq:u64", false },
};

static const struct fr_family_func funcs[] = {
	{ FR_RDMA_OPEN_DEVICE, "ibv_open_device", FR_FN_OPEN },
	{ FR_RDMA_CREATE_QP, "ibv_create_qp", FR_FN_CREATE },
	{ FR_RDMA_MODIFY_QP, "ibv_modify_qp", FR_FN_MODIFY },
	{ FR_RDMA_DESTROY_QP, "ibv_destroy_qp", FR_FN_DESTROY },
	{ FR_RDMA_REG_MR, "ibv_reg_mr", FR_FN_REGISTER },
	{ FR_RDMA_DEREG_MR, "ibv_dereg_mr", FR_FN_DEREGISTER },
	{ FR_RDMA_CREATE_CQ, "ibv_create_cq", FR_FN_CREATE },
	{ FR_RDMA_REG_DMABUF_MR, "ibv_reg_dmabuf_mr", FR_FN_REGISTER },
	{ FR_RDMA_CREATE_QP_EX, "ibv_create_qp_ex", FR_FN_CREATE },
	{ FR_RDMA_OPS, "ops", FR_FN_OPS },
};

/* entry programs: 0 fr_rdma_enter, 1 fr_rdma_enter_modify (reads the
 * attributes), 2 fr_rdma_enter_release (reads the object before it goes);
 * extra of ibv_reg_mr*: where the access flags are (0: 4th argument,
 * 1: 5th, 2: 6th) */
#define CTRL(sym, fn) {sym, fn, 0, 0, 0, false}
#define MODIFY(sym, fn) {sym, fn, 0, 0, 1, false}
#define RELEASE(sym, fn) {sym, fn, 0, 0, 2, false}
#define REG(sym, fn, where) {sym, fn, 0, where, 0, false}

static const struct fr_family_symbol symbols[] = {
	CTRL("ibv_open_device", FR_RDMA_OPEN_DEVICE),
	/* a context shared from another process's: one more way to get an ops
	 * table, reported (and held for) like ibv_open_device's */
	CTRL("ibv_import_device", FR_RDMA_OPEN_DEVICE),
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

static const char *const knobs[] = {
	"fr_filter_mode", "fr_target_cgroup_id", "fr_stack_mode", "fr_ustack_bytes", NULL,
};

const struct fr_family fr_family_rdma = {
	.id = FR_PROBE_RDMA,
	.name = "rdma",
	.selectable = true,
	.help = "verbs control path (open device, create/modify/\n"
		"destroy QP, register MR, create CQ) and data\n"
		"path: every work request posted and every\n"
		"completion, found through the provider\n"
		"functions in a live context's ops table;\n"
		"empty polls are only counted",
	.attach = FR_ATTACH_LIBRARY,
	.records = records,
	.n_records = sizeof(records) / sizeof(records[0]),
	.funcs = funcs,
	.n_funcs = sizeof(funcs) / sizeof(funcs[0]),
	.symbols = symbols,
	.n_symbols = sizeof(symbols) / sizeof(symbols[0]),
	.entry_progs = { "fr_rdma_enter", "fr_rdma_enter_modify", "fr_rdma_enter_release" },
	.exit_prog = "fr_rdma_exit",
	.knobs = knobs,
};
