/* The cuda probe family's function table: which exported names of the CUDA
 * runtime (libcudart) and driver (libcuda) are probed, and as what.  The
 * BPF side is bpf/cuda.bpf.c; attaching is uprobe_family.c's job. */
#include "probe_families.h"

#include "events.h"

#define RT(sym, fn) {sym, fn, 0, 0, 0, false}
#define PTSZ(sym, fn) {sym, fn, FR_CUDAF_PTSZ, 0, 0, false}
#define LAUNCH(sym, fn, fl) {sym, fn, fl, 0, 1, false}
#define COPY(sym, fn, kind, fl) {sym, fn, fl, kind, 0, false}

const struct uprobe_spec cuda_specs[] = {
	RT("cudaMalloc", FR_CUDA_MALLOC),
	RT("cudaFree", FR_CUDA_FREE),
	RT("cudaMallocAsync", FR_CUDA_MALLOC_ASYNC),
	PTSZ("cudaMallocAsync_ptsz", FR_CUDA_MALLOC_ASYNC),
	RT("cudaFreeAsync", FR_CUDA_FREE_ASYNC),
	PTSZ("cudaFreeAsync_ptsz", FR_CUDA_FREE_ASYNC),
	RT("cudaMallocManaged", FR_CUDA_MALLOC_MANAGED),
	RT("cudaMallocHost", FR_CUDA_MALLOC_HOST),
	RT("cudaHostAlloc", FR_CUDA_HOST_ALLOC),
	RT("cudaFreeHost", FR_CUDA_FREE_HOST),
	RT("cudaHostRegister", FR_CUDA_HOST_REGISTER),
	RT("cudaHostUnregister", FR_CUDA_HOST_UNREGISTER),
	RT("cudaMemcpy", FR_CUDA_MEMCPY),
	PTSZ("cudaMemcpy_ptds", FR_CUDA_MEMCPY),
	RT("cudaMemcpyAsync", FR_CUDA_MEMCPY_ASYNC),
	PTSZ("cudaMemcpyAsync_ptsz", FR_CUDA_MEMCPY_ASYNC),
	LAUNCH("cudaLaunchKernel", FR_CUDA_LAUNCH_KERNEL, 0),
	LAUNCH("cudaLaunchKernel_ptsz", FR_CUDA_LAUNCH_KERNEL, FR_CUDAF_PTSZ),
	RT("cudaStreamSynchronize", FR_CUDA_STREAM_SYNC),
	PTSZ("cudaStreamSynchronize_ptsz", FR_CUDA_STREAM_SYNC),
	RT("cudaDeviceSynchronize", FR_CUDA_DEVICE_SYNC),
	RT("cudaEventSynchronize", FR_CUDA_EVENT_SYNC),
	RT("cudaSetDevice", FR_CUDA_SET_DEVICE),
	/* driver API */
	RT("cuMemAlloc_v2", FR_CU_MEM_ALLOC),
	RT("cuMemFree_v2", FR_CU_MEM_FREE),
	RT("cuMemAllocAsync", FR_CU_MEM_ALLOC_ASYNC),
	PTSZ("cuMemAllocAsync_ptsz", FR_CU_MEM_ALLOC_ASYNC),
	RT("cuMemFreeAsync", FR_CU_MEM_FREE_ASYNC),
	PTSZ("cuMemFreeAsync_ptsz", FR_CU_MEM_FREE_ASYNC),
	RT("cuMemCreate", FR_CU_MEM_CREATE),
	RT("cuMemRelease", FR_CU_MEM_RELEASE),
	RT("cuMemMap", FR_CU_MEM_MAP),
	RT("cuMemUnmap", FR_CU_MEM_UNMAP),
	RT("cuMemHostAlloc", FR_CU_MEM_HOST_ALLOC),
	LAUNCH("cuLaunchKernel", FR_CU_LAUNCH_KERNEL, 0),
	LAUNCH("cuLaunchKernel_ptsz", FR_CU_LAUNCH_KERNEL, FR_CUDAF_PTSZ),
	LAUNCH("cuLaunchKernelEx", FR_CU_LAUNCH_KERNEL_EX, 0),
	LAUNCH("cuLaunchKernelEx_ptsz", FR_CU_LAUNCH_KERNEL_EX, FR_CUDAF_PTSZ),
	COPY("cuMemcpy", FR_CU_MEMCPY, FR_COPY_DEFAULT, 0),
	COPY("cuMemcpy_ptds", FR_CU_MEMCPY, FR_COPY_DEFAULT, FR_CUDAF_PTSZ),
	COPY("cuMemcpyHtoD_v2", FR_CU_MEMCPY, FR_COPY_H2D, 0),
	COPY("cuMemcpyHtoD_v2_ptds", FR_CU_MEMCPY, FR_COPY_H2D, FR_CUDAF_PTSZ),
	COPY("cuMemcpyDtoH_v2", FR_CU_MEMCPY, FR_COPY_D2H, 0),
	COPY("cuMemcpyDtoH_v2_ptds", FR_CU_MEMCPY, FR_COPY_D2H, FR_CUDAF_PTSZ),
	COPY("cuMemcpyDtoD_v2", FR_CU_MEMCPY, FR_COPY_D2D, 0),
	COPY("cuMemcpyDtoD_v2_ptds", FR_CU_MEMCPY, FR_COPY_D2D, FR_CUDAF_PTSZ),
	COPY("cuMemcpyAsync", FR_CU_MEMCPY_ASYNC, FR_COPY_DEFAULT, 0),
	COPY("cuMemcpyAsync_ptsz", FR_CU_MEMCPY_ASYNC, FR_COPY_DEFAULT, FR_CUDAF_PTSZ),
	COPY("cuMemcpyHtoDAsync_v2", FR_CU_MEMCPY_ASYNC, FR_COPY_H2D, 0),
	COPY("cuMemcpyHtoDAsync_v2_ptsz", FR_CU_MEMCPY_ASYNC, FR_COPY_H2D, FR_CUDAF_PTSZ),
	COPY("cuMemcpyDtoHAsync_v2", FR_CU_MEMCPY_ASYNC, FR_COPY_D2H, 0),
	COPY("cuMemcpyDtoHAsync_v2_ptsz", FR_CU_MEMCPY_ASYNC, FR_COPY_D2H, FR_CUDAF_PTSZ),
	COPY("cuMemcpyDtoDAsync_v2", FR_CU_MEMCPY_ASYNC, FR_COPY_D2D, 0),
	COPY("cuMemcpyDtoDAsync_v2_ptsz", FR_CU_MEMCPY_ASYNC, FR_COPY_D2D, FR_CUDAF_PTSZ),
};
const size_t n_cuda_specs = sizeof(cuda_specs) / sizeof(cuda_specs[0]);
