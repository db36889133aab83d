/* The cudaError_t values the flightrec CUDA stand-in knows, as one list.
 *
 * What it is for: a single place for the name, number and message of each
 * error code, used three ways: cuda_runtime_api_min.h builds its enum from
 * it, cudart_standin.c builds cudaGetErrorName/cudaGetErrorString from it,
 * and header_check.c asserts every number against NVIDIA's header when that
 * header is installed (so a wrong number here fails the build).
 * What it is NOT for: a complete copy of NVIDIA's list; only codes the
 * stand-in returns, plus a few a caller commonly compares against.
 *
 * X(name, value, message); values are NVIDIA's (driver_types.h). */
#ifndef FLIGHTREC_CUDART_ERRORS_H
#define FLIGHTREC_CUDART_ERRORS_H

#define CUDART_STANDIN_ERRORS(X)                                                 \
	X(cudaSuccess, 0, "no error")                                            \
	X(cudaErrorInvalidValue, 1, "invalid argument")                          \
	X(cudaErrorMemoryAllocation, 2, "out of memory")                         \
	X(cudaErrorInitializationError, 3, "initialization error")               \
	X(cudaErrorCudartUnloading, 4, "driver shutting down")                   \
	X(cudaErrorInvalidConfiguration, 9, "invalid configuration argument")    \
	X(cudaErrorInvalidHostPointer, 16, "invalid host pointer")               \
	X(cudaErrorInvalidDevicePointer, 17, "invalid device pointer")           \
	X(cudaErrorInvalidMemcpyDirection, 21, "invalid copy direction for memcpy") \
	X(cudaErrorStubLibrary, 34, "CUDA driver is a stub library")             \
	X(cudaErrorInsufficientDriver, 35,                                       \
	  "CUDA driver version is insufficient for CUDA runtime version")        \
	X(cudaErrorInvalidDeviceFunction, 98, "invalid device function")         \
	X(cudaErrorNoDevice, 100, "no CUDA-capable device is detected")          \
	X(cudaErrorInvalidDevice, 101, "invalid device ordinal")                 \
	X(cudaErrorInvalidResourceHandle, 400, "invalid resource handle")        \
	X(cudaErrorIllegalState, 401,                                            \
	  "the operation cannot be performed in the present state")              \
	X(cudaErrorNotReady, 600, "device not ready")                            \
	X(cudaErrorHostMemoryAlreadyRegistered, 712,                             \
	  "part or all of the requested memory range is already mapped")         \
	X(cudaErrorHostMemoryNotRegistered, 713,                                 \
	  "pointer does not correspond to a registered memory region")           \
	X(cudaErrorNotSupported, 801, "operation not supported")                 \
	X(cudaErrorStreamCaptureUnsupported, 900,                                \
	  "operation not permitted when stream is capturing")                    \
	X(cudaErrorStreamCaptureInvalidated, 901,                                \
	  "operation failed due to a previous error during capture")             \
	X(cudaErrorStreamCaptureWrongThread, 908,                                \
	  "attempt to terminate a thread-local capture sequence from another thread") \
	X(cudaErrorUnknown, 999, "unknown error")

#endif
