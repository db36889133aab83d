/* What each CUDA function the cuda probe family records is: its name and
 * what it does to memory (see cuda_funcs.h). */
#include "cuda_funcs.h"

static const char *const func_names[] = {
	[FR_CUDA_MALLOC] = "cudaMalloc",
	[FR_CUDA_FREE] = "cudaFree",
	[FR_CUDA_MALLOC_ASYNC] = "cudaMallocAsync",
	[FR_CUDA_FREE_ASYNC] = "cudaFreeAsync",
	[FR_CUDA_MALLOC_MANAGED] = "cudaMallocManaged",
	[FR_CUDA_MALLOC_HOST] = "cudaMallocHost",
	[FR_CUDA_HOST_ALLOC] = "cudaHostAlloc",
	[FR_CUDA_FREE_HOST] = "cudaFreeHost",
	[FR_CUDA_HOST_REGISTER] = "cudaHostRegister",
	[FR_CUDA_HOST_UNREGISTER] = "cudaHostUnregister",
	[FR_CUDA_MEMCPY] = "cudaMemcpy",
	[FR_CUDA_MEMCPY_ASYNC] = "cudaMemcpyAsync",
	[FR_CUDA_LAUNCH_KERNEL] = "cudaLaunchKernel",
	[FR_CUDA_STREAM_SYNC] = "cudaStreamSynchronize",
	[FR_CUDA_DEVICE_SYNC] = "cudaDeviceSynchronize",
	[FR_CUDA_EVENT_SYNC] = "cudaEventSynchronize",
	[FR_CUDA_SET_DEVICE] = "cudaSetDevice",
	[FR_CU_MEM_ALLOC] = "cuMemAlloc_v2",
	[FR_CU_MEM_FREE] = "cuMemFree_v2",
	[FR_CU_MEM_ALLOC_ASYNC] = "cuMemAllocAsync",
	[FR_CU_MEM_FREE_ASYNC] = "cuMemFreeAsync",
	[FR_CU_MEM_CREATE] = "cuMemCreate",
	[FR_CU_MEM_RELEASE] = "cuMemRelease",
	[FR_CU_MEM_MAP] = "cuMemMap",
	[FR_CU_MEM_UNMAP] = "cuMemUnmap",
	[FR_CU_MEM_HOST_ALLOC] = "cuMemHostAlloc",
	[FR_CU_LAUNCH_KERNEL] = "cuLaunchKernel",
	[FR_CU_LAUNCH_KERNEL_EX] = "cuLaunchKernelEx",
	[FR_CU_MEMCPY] = "cuMemcpy*",
	[FR_CU_MEMCPY_ASYNC] = "cuMemcpy*Async",
};
#define N_FUNCS (sizeof(func_names) / sizeof(func_names[0]))
_Static_assert(N_FUNCS <= CUDA_FUNC_LIMIT, "CUDA_FUNC_LIMIT");

const char *cuda_func_name(uint16_t func)
{
	return func < N_FUNCS ? func_names[func] : NULL;
}

enum mem_class mem_func_class(uint16_t func)
{
	switch (func) {
	case FR_CUDA_MALLOC: case FR_CUDA_MALLOC_ASYNC: case FR_CUDA_MALLOC_MANAGED:
	case FR_CU_MEM_ALLOC: case FR_CU_MEM_ALLOC_ASYNC:
		return MEM_DEV_ALLOC;
	case FR_CUDA_FREE: case FR_CUDA_FREE_ASYNC: case FR_CU_MEM_FREE: case FR_CU_MEM_FREE_ASYNC:
		return MEM_DEV_FREE;
	case FR_CU_MEM_CREATE:
		return MEM_PHYS_CREATE;
	case FR_CU_MEM_RELEASE:
		return MEM_PHYS_RELEASE;
	case FR_CUDA_MALLOC_HOST: case FR_CUDA_HOST_ALLOC: case FR_CU_MEM_HOST_ALLOC:
	case FR_CUDA_HOST_REGISTER:
		return MEM_HOST_ALLOC;
	case FR_CUDA_FREE_HOST: case FR_CUDA_HOST_UNREGISTER:
		return MEM_HOST_FREE;
	}
	return MEM_NONE;
}
