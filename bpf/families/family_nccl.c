/* The nccl family: NCCL collectives, point-to-point, groups and
 * communicator calls (bpf/nccl.bpf.c).  NCCL exports each function twice
 * (ncclX and its profiling alias pncclX at the same address): both are
 * listed so either is found, and each address is attached once, under the
 * first name listed. */
#include "fr_family.h"

static const struct fr_family_record records[] = {
	/* version 2: seq in what was _pad (events.h) */
	{ FR_EV_NCCL, 2, sizeof(struct fr_ev_nccl), "nccl",
	  FR_COMMON_FIELDS ",func:u16,flags:u16,stack_id:u32,duration_ns:u64,result:s64,"
	  "comm:u64,count:u64,datatype:u32,op:u32,peer:s32,rank:s32,nranks:s32,"
	  "seq:u32,stream:u64,uid_hash:u64", true },
};

static const struct fr_family_func funcs[] = {
	{ FR_NCCL_ALL_REDUCE, "ncclAllReduce", FR_FN_COLLECTIVE },
	{ FR_NCCL_REDUCE_SCATTER, "ncclReduceScatter", FR_FN_COLLECTIVE },
	{ FR_NCCL_ALL_GATHER, "ncclAllGather", FR_FN_COLLECTIVE },
	{ FR_NCCL_BROADCAST, "ncclBroadcast", FR_FN_COLLECTIVE },
	{ FR_NCCL_REDUCE, "ncclReduce", FR_FN_COLLECTIVE },
	{ FR_NCCL_SEND, "ncclSend", FR_FN_P2P },
	{ FR_NCCL_RECV, "ncclRecv", FR_FN_P2P },
	{ FR_NCCL_GROUP_START, "ncclGroupStart", FR_FN_GROUP },
	{ FR_NCCL_GROUP_END, "ncclGroupEnd", FR_FN_GROUP },
	{ FR_NCCL_COMM_INIT_RANK, "ncclCommInitRank", FR_FN_COMM_INIT },
	{ FR_NCCL_COMM_INIT_RANK_CONFIG, "ncclCommInitRankConfig", FR_FN_COMM_INIT },
	{ FR_NCCL_COMM_INIT_ALL, "ncclCommInitAll", FR_FN_COMM_INIT },
	{ FR_NCCL_COMM_SPLIT, "ncclCommSplit", FR_FN_COMM_INIT },
	{ FR_NCCL_COMM_DESTROY, "ncclCommDestroy", FR_FN_COMM_DESTROY },
	{ FR_NCCL_COMM_GET_ASYNC_ERROR, "ncclCommGetAsyncError", FR_FN_OTHER },
};

/* entry programs: 0 fr_nccl_enter, 1 fr_nccl_enter_init (reads the
 * unique id and rank of a communicator being created) */
#define FN(sym, fn) {sym, fn, 0, 0, 0, false}
#define INIT(sym, fn) {sym, fn, 0, 0, 1, false}

static const struct fr_family_symbol symbols[] = {
	FN("ncclAllReduce", FR_NCCL_ALL_REDUCE),
	FN("ncclReduceScatter", FR_NCCL_REDUCE_SCATTER),
	FN("ncclAllGather", FR_NCCL_ALL_GATHER),
	FN("ncclBroadcast", FR_NCCL_BROADCAST),
	FN("ncclReduce", FR_NCCL_REDUCE),
	FN("ncclSend", FR_NCCL_SEND),
	FN("ncclRecv", FR_NCCL_RECV),
	FN("ncclGroupStart", FR_NCCL_GROUP_START),
	FN("ncclGroupEnd", FR_NCCL_GROUP_END),
	INIT("ncclCommInitRank", FR_NCCL_COMM_INIT_RANK),
	INIT("ncclCommInitRankConfig", FR_NCCL_COMM_INIT_RANK_CONFIG),
	FN("ncclCommInitAll", FR_NCCL_COMM_INIT_ALL),
	FN("ncclCommSplit", FR_NCCL_COMM_SPLIT),
	FN("ncclCommDestroy", FR_NCCL_COMM_DESTROY),
	FN("ncclCommGetAsyncError", FR_NCCL_COMM_GET_ASYNC_ERROR),
	FN("pncclAllReduce", FR_NCCL_ALL_REDUCE),
	FN("pncclReduceScatter", FR_NCCL_REDUCE_SCATTER),
	FN("pncclAllGather", FR_NCCL_ALL_GATHER),
	FN("pncclBroadcast", FR_NCCL_BROADCAST),
	FN("pncclReduce", FR_NCCL_REDUCE),
	FN("pncclSend", FR_NCCL_SEND),
	FN("pncclRecv", FR_NCCL_RECV),
	FN("pncclGroupStart", FR_NCCL_GROUP_START),
	FN("pncclGroupEnd", FR_NCCL_GROUP_END),
	INIT("pncclCommInitRank", FR_NCCL_COMM_INIT_RANK),
	INIT("pncclCommInitRankConfig", FR_NCCL_COMM_INIT_RANK_CONFIG),
	FN("pncclCommInitAll", FR_NCCL_COMM_INIT_ALL),
	FN("pncclCommSplit", FR_NCCL_COMM_SPLIT),
	FN("pncclCommDestroy", FR_NCCL_COMM_DESTROY),
	FN("pncclCommGetAsyncError", FR_NCCL_COMM_GET_ASYNC_ERROR),
};

static const char *const knobs[] = {
	"fr_filter_mode", "fr_target_cgroup_id", "fr_stack_mode", "fr_ustack_bytes", NULL,
};

const struct fr_family fr_family_nccl = {
	.id = FR_PROBE_NCCL,
	.name = "nccl",
	.selectable = true,
	.help = "NCCL collectives, point-to-point, groups and\n"
		"communicator calls, in every libnccl mapped",
	.attach = FR_ATTACH_LIBRARY,
	.records = records,
	.n_records = sizeof(records) / sizeof(records[0]),
	.funcs = funcs,
	.n_funcs = sizeof(funcs) / sizeof(funcs[0]),
	.symbols = symbols,
	.n_symbols = sizeof(symbols) / sizeof(symbols[0]),
	.entry_progs = { "fr_nccl_enter", "fr_nccl_enter_init" },
	.exit_prog = "fr_nccl_exit",
	.knobs = knobs,
};
