/* The public NCCL ABI, as far as flightrec's stand-in libnccl and the samples
 * need it: a minimal mirror of NVIDIA's nccl.h (2.18 API).  Enum values,
 * struct layouts and function signatures are NVIDIA's, so a recorder that
 * reads arguments of the real libnccl.so.2 reads these the same way.
 *
 * Not NVIDIA's header: no CUDA types beyond cudaStream_t (an opaque pointer
 * here, unless a CUDA runtime header was included first: then its type),
 * no user-defined reduction ops, no ncclMemAlloc.
 */
#ifndef FLIGHTREC_SAMPLES_NCCL_H
#define FLIGHTREC_SAMPLES_NCCL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NCCL_MAJOR 2
#define NCCL_MINOR 18
#define NCCL_PATCH 3
#define NCCL_SUFFIX ""
#define NCCL_VERSION(X, Y, Z) \
	(((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))
#define NCCL_VERSION_CODE NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH)

/* CUDA's stream handle (struct CUstream_st *); never dereferenced here.  A
 * program that includes a CUDA runtime header first (NVIDIA's, or the
 * stand-in's cuda_runtime_api_min.h) keeps that header's type: same ABI. */
#if !defined(__CUDA_RUNTIME_API_H__) && !defined(FLIGHTREC_CUDA_RUNTIME_API_MIN_H)
typedef void *cudaStream_t;
#endif

typedef struct ncclComm *ncclComm_t;
#define NCCL_COMM_NULL NULL

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
	char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
	ncclSuccess = 0,
	ncclUnhandledCudaError = 1,
	ncclSystemError = 2,
	ncclInternalError = 3,
	ncclInvalidArgument = 4,
	ncclInvalidUsage = 5,
	ncclRemoteError = 6,
	ncclInProgress = 7,
	ncclNumResults = 8
} ncclResult_t;

#define NCCL_CONFIG_UNDEF_INT (-2147483647 - 1)
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR (-1)

/* ncclConfig_v21700: the first two fields let NCCL check the caller's view. */
typedef struct ncclConfig_v21700 {
	size_t size;
	unsigned int magic;
	unsigned int version;
	int blocking;
	int cgaClusterSize;
	int minCTAs;
	int maxCTAs;
	const char *netName;
	int splitShare;
} ncclConfig_t;

#define NCCL_CONFIG_INITIALIZER {                                        \
	sizeof(ncclConfig_t), 0xcafebeef, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), \
	NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,  \
	NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT }

typedef enum {
	ncclSum = 0,
	ncclProd = 1,
	ncclMax = 2,
	ncclMin = 3,
	ncclAvg = 4,
	ncclNumOps = 5,
	ncclMaxRedOp = 0x7fffffff /* keeps the enum int-sized, as NVIDIA's does */
} ncclRedOp_t;

typedef enum {
	ncclInt8 = 0, ncclChar = 0,
	ncclUint8 = 1,
	ncclInt32 = 2, ncclInt = 2,
	ncclUint32 = 3,
	ncclInt64 = 4,
	ncclUint64 = 5,
	ncclFloat16 = 6, ncclHalf = 6,
	ncclFloat32 = 7, ncclFloat = 7,
	ncclFloat64 = 8, ncclDouble = 8,
	ncclBfloat16 = 9,
	ncclNumTypes = 10
} ncclDataType_t;

/* Every entry point also exists as pnccl<Name> (the profiling alias), at the
 * same address. */
#define FR_NCCL_DECLARE(ret, name, args) ret name args; ret p##name args;

FR_NCCL_DECLARE(ncclResult_t, ncclGetVersion, (int *version))
FR_NCCL_DECLARE(ncclResult_t, ncclGetUniqueId, (ncclUniqueId *uniqueId))
FR_NCCL_DECLARE(const char *, ncclGetErrorString, (ncclResult_t result))
FR_NCCL_DECLARE(ncclResult_t, ncclCommInitRank,
	(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank))
FR_NCCL_DECLARE(ncclResult_t, ncclCommInitRankConfig,
	(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t *config))
FR_NCCL_DECLARE(ncclResult_t, ncclCommInitAll, (ncclComm_t *comm, int ndev, const int *devlist))
FR_NCCL_DECLARE(ncclResult_t, ncclCommSplit,
	(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config))
FR_NCCL_DECLARE(ncclResult_t, ncclCommDestroy, (ncclComm_t comm))
FR_NCCL_DECLARE(ncclResult_t, ncclCommAbort, (ncclComm_t comm))
FR_NCCL_DECLARE(ncclResult_t, ncclCommCount, (const ncclComm_t comm, int *count))
FR_NCCL_DECLARE(ncclResult_t, ncclCommUserRank, (const ncclComm_t comm, int *rank))
FR_NCCL_DECLARE(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t *asyncError))

FR_NCCL_DECLARE(ncclResult_t, ncclAllReduce,
	(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
	 ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream))
FR_NCCL_DECLARE(ncclResult_t, ncclReduceScatter,
	(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
	 ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream))
FR_NCCL_DECLARE(ncclResult_t, ncclAllGather,
	(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
	 ncclComm_t comm, cudaStream_t stream))
FR_NCCL_DECLARE(ncclResult_t, ncclBroadcast,
	(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
	 int root, ncclComm_t comm, cudaStream_t stream))
FR_NCCL_DECLARE(ncclResult_t, ncclReduce,
	(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
	 ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream))
FR_NCCL_DECLARE(ncclResult_t, ncclSend,
	(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
	 ncclComm_t comm, cudaStream_t stream))
FR_NCCL_DECLARE(ncclResult_t, ncclRecv,
	(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
	 ncclComm_t comm, cudaStream_t stream))
FR_NCCL_DECLARE(ncclResult_t, ncclGroupStart, (void))
FR_NCCL_DECLARE(ncclResult_t, ncclGroupEnd, (void))

#undef FR_NCCL_DECLARE

#ifdef __cplusplus
}
#endif
#endif
