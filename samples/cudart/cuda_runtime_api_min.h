/* A minimal cuda_runtime_api.h: the part of NVIDIA's CUDA runtime API that
 * flightrec's stand-in libcudart implements, with NVIDIA's names, types,
 * prototypes and numeric values.
 *
 * What it is for: building the stand-in (samples/cudart/) and the samples
 * that use it on a machine without the CUDA toolkit.  Where NVIDIA's header
 * is installed the build uses that instead, and header_check.c compiles these
 * prototypes and error numbers against it, so this copy cannot drift.
 * What it is NOT for: a general CUDA header.  Only what the stand-in
 * exports is declared; C only (no default arguments, no C++ overloads).
 *
 * Defining CUDART_MIN_PROTOTYPES_ONLY before including it leaves out the
 * types and declares only the flag macros and the functions: header_check.c
 * includes it that way after NVIDIA's header, where C rejects a function
 * redeclaration whose prototype differs and warns on a macro redefined
 * differently.
 */
#ifndef FLIGHTREC_CUDA_RUNTIME_API_MIN_H
#define FLIGHTREC_CUDA_RUNTIME_API_MIN_H

#include <stddef.h>

#ifndef CUDART_MIN_PROTOTYPES_ONLY

#include "cudart_errors.h"

#define CUDART_VERSION 12000

#define CUDART_MIN_ENUMERATOR(name, value, msg) name = value,
enum cudaError { CUDART_STANDIN_ERRORS(CUDART_MIN_ENUMERATOR) };
#undef CUDART_MIN_ENUMERATOR
typedef enum cudaError cudaError_t;

enum cudaMemcpyKind {
	cudaMemcpyHostToHost = 0,
	cudaMemcpyHostToDevice = 1,
	cudaMemcpyDeviceToHost = 2,
	cudaMemcpyDeviceToDevice = 3,
	cudaMemcpyDefault = 4,
};

typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
typedef struct CUgraph_st *cudaGraph_t;
typedef struct CUgraphExec_st *cudaGraphExec_t;
typedef void (*cudaHostFn_t)(void *userData);

enum cudaStreamCaptureMode {
	cudaStreamCaptureModeGlobal = 0,
	cudaStreamCaptureModeThreadLocal = 1,
	cudaStreamCaptureModeRelaxed = 2,
};

struct dim3 {
	unsigned int x, y, z;
};
typedef struct dim3 dim3;

#endif /* CUDART_MIN_PROTOTYPES_ONLY */

/* Flags: C allows an identical redefinition, so header_check.c compiles
 * these after NVIDIA's header and any difference is a -Werror failure. */

#define cudaHostAllocDefault 0x00
#define cudaHostAllocPortable 0x01
#define cudaHostAllocMapped 0x02
#define cudaHostAllocWriteCombined 0x04

#define cudaHostRegisterDefault 0x00
#define cudaHostRegisterPortable 0x01
#define cudaHostRegisterMapped 0x02
#define cudaHostRegisterIoMemory 0x04
#define cudaHostRegisterReadOnly 0x08

#define cudaMemAttachGlobal 0x01
#define cudaMemAttachHost 0x02

#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)

#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02

#define cudaEventWaitDefault 0x00
#define cudaEventWaitExternal 0x01

#ifdef __cplusplus
extern "C" {
#endif

/* device management and errors */
extern cudaError_t cudaGetDeviceCount(int *count);
extern cudaError_t cudaSetDevice(int device);
extern cudaError_t cudaGetDevice(int *device);
extern cudaError_t cudaDeviceSynchronize(void);
extern cudaError_t cudaGetLastError(void);
extern cudaError_t cudaPeekAtLastError(void);
extern const char *cudaGetErrorString(cudaError_t error);
extern const char *cudaGetErrorName(cudaError_t error);
extern cudaError_t cudaDriverGetVersion(int *driverVersion);
extern cudaError_t cudaRuntimeGetVersion(int *runtimeVersion);

/* streams and events */
extern cudaError_t cudaStreamCreate(cudaStream_t *pStream);
extern cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags);
extern cudaError_t cudaStreamDestroy(cudaStream_t stream);
extern cudaError_t cudaStreamSynchronize(cudaStream_t stream);
extern cudaError_t cudaStreamQuery(cudaStream_t stream);
extern cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
extern cudaError_t cudaEventCreate(cudaEvent_t *event);
extern cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags);
extern cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
extern cudaError_t cudaEventQuery(cudaEvent_t event);
extern cudaError_t cudaEventSynchronize(cudaEvent_t event);
extern cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);
extern cudaError_t cudaEventDestroy(cudaEvent_t event);

/* memory */
extern cudaError_t cudaMalloc(void **devPtr, size_t size);
extern cudaError_t cudaFree(void *devPtr);
extern cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream);
extern cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream);
extern cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags);
extern cudaError_t cudaMallocHost(void **ptr, size_t size);
extern cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags);
extern cudaError_t cudaFreeHost(void *ptr);
extern cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags);
extern cudaError_t cudaHostUnregister(void *ptr);
extern cudaError_t cudaMemGetInfo(size_t *free, size_t *total);
extern cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
extern cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
				   enum cudaMemcpyKind kind, cudaStream_t stream);
extern cudaError_t cudaMemset(void *devPtr, int value, size_t count);
extern cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream);

/* execution */
extern cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
				    size_t sharedMem, cudaStream_t stream);
extern cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData);

/* stream capture and graphs */
extern cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode);
extern cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph);
extern cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
					unsigned long long flags);
extern cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream);
extern cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec);
extern cudaError_t cudaGraphDestroy(cudaGraph_t graph);

#ifdef __cplusplus
}
#endif

#endif /* FLIGHTREC_CUDA_RUNTIME_API_MIN_H */
