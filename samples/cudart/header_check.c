/* Build-time check that cuda_runtime_api_min.h matches NVIDIA's header.
 *
 * What it is for: compiled (never linked, never run) where NVIDIA's
 * cuda_runtime_api.h is installed.  It includes NVIDIA's header, then the
 * minimal header's prototypes and flag macros (a differing prototype is a
 * "conflicting types" error, a differing macro a -Werror redefinition), and
 * asserts every error number in cudart_errors.h, every cudaMemcpyKind and
 * every cudaStreamCaptureMode.
 * What it is NOT for: checking behaviour; see test_cudart_standin.c.
 */
#undef CUDA_API_PER_THREAD_DEFAULT_STREAM
#include <cuda_runtime_api.h>

#define CUDART_MIN_PROTOTYPES_ONLY
#include "cuda_runtime_api_min.h"
#include "cudart_errors.h"

#define ASSERT_ERROR_VALUE(name, value, msg) _Static_assert(name == value, #name " differs");
CUDART_STANDIN_ERRORS(ASSERT_ERROR_VALUE)

_Static_assert(cudaMemcpyHostToHost == 0, "cudaMemcpyHostToHost");
_Static_assert(cudaMemcpyHostToDevice == 1, "cudaMemcpyHostToDevice");
_Static_assert(cudaMemcpyDeviceToHost == 2, "cudaMemcpyDeviceToHost");
_Static_assert(cudaMemcpyDeviceToDevice == 3, "cudaMemcpyDeviceToDevice");
_Static_assert(cudaMemcpyDefault == 4, "cudaMemcpyDefault");
_Static_assert(sizeof(dim3) == 12, "dim3");
_Static_assert(cudaStreamCaptureModeGlobal == 0, "cudaStreamCaptureModeGlobal");
_Static_assert(cudaStreamCaptureModeThreadLocal == 1, "cudaStreamCaptureModeThreadLocal");
_Static_assert(cudaStreamCaptureModeRelaxed == 2, "cudaStreamCaptureModeRelaxed");
