/* The nccl probe family's function table.  NCCL exports each function
 * twice (ncclX and its profiling alias pncclX at the same address): the
 * table lists both so either name is found, and uprobe_family attaches each
 * address once, under the first name listed. */
#include "probe_families.h"

#include "events.h"

#define FN(sym, fn) {sym, fn, 0, 0, 0, false}
#define INIT(sym, fn) {sym, fn, 0, 0, 1, false}

const struct uprobe_spec nccl_specs[] = {
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
};
const size_t n_nccl_specs = sizeof(nccl_specs) / sizeof(nccl_specs[0]);
