/* The cuda family: CUDA runtime (libcudart) and driver (libcuda) calls with
 * their stacks (bpf/cuda.bpf.c), in every copy of those libraries a traced
 * process maps. */
#include "fr_family.h"

static const struct fr_family_record records[] = {
	{ FR_EV_CUDA, 1, sizeof(struct fr_ev_cuda), "cuda",
	  FR_COMMON_FIELDS ",func:u16,flags:u16,stack_id:u32,duration_ns:u64,result:s64,"
	  "ptr:u64,src:u64,bytes:u64,stream:u64,kind:u32,device:s32", true },
};

static const struct fr_family_func funcs[] = {
	{ FR_CUDA_MALLOC, "cudaMalloc", FR_FN_ALLOC },
	{ FR_CUDA_FREE, "cudaFree", FR_FN_FREE },
	{ FR_CUDA_MALLOC_ASYNC, "cudaMallocAsync", FR_FN_ALLOC },
	{ FR_CUDA_FREE_ASYNC, "cudaFreeAsync", FR_FN_FREE },
	{ FR_CUDA_MALLOC_MANAGED, "cudaMallocManaged", FR_FN_ALLOC },
	{ FR_CUDA_MALLOC_HOST, "cudaMallocHost", FR_FN_HOST_ALLOC },
	{ FR_CUDA_HOST_ALLOC, "cudaHostAlloc", FR_FN_HOST_ALLOC },
	{ FR_CUDA_FREE_HOST, "cudaFreeHost", FR_FN_HOST_FREE },
	{ FR_CUDA_HOST_REGISTER, "cudaHostRegister", FR_FN_HOST_ALLOC },
	{ FR_CUDA_HOST_UNREGISTER, "cudaHostUnregister", FR_FN_HOST_FREE },
	{ FR_CUDA_MEMCPY, "cudaMemcpy", FR_FN_COPY },
	{ FR_CUDA_MEMCPY_ASYNC, "cudaMemcpyAsync", FR_FN_COPY },
	{ FR_CUDA_LAUNCH_KERNEL, "cudaLaunchKernel", FR_FN_LAUNCH },
	{ FR_CUDA_STREAM_SYNC, "cudaStreamSynchronize", FR_FN_SYNC },
	{ FR_CUDA_DEVICE_SYNC, "cudaDeviceSynchronize", FR_FN_SYNC },
	{ FR_CUDA_EVENT_SYNC, "cudaEventSynchronize", FR_FN_SYNC },
	{ FR_CUDA_SET_DEVICE, "cudaSetDevice", FR_FN_DEVICE },
	{ FR_CUDA_EVENT_RECORD, "cudaEventRecord", FR_FN_EVENT },
	{ FR_CUDA_EVENT_QUERY, "cudaEventQuery", FR_FN_QUERY },
	{ FR_CUDA_STREAM_WAIT_EVENT, "cudaStreamWaitEvent", FR_FN_EVENT },
	{ FR_CUDA_GRAPH_LAUNCH, "cudaGraphLaunch", FR_FN_GRAPH_LAUNCH },
	{ FR_CU_MEM_ALLOC, "cuMemAlloc_v2", FR_FN_ALLOC },
	{ FR_CU_MEM_FREE, "cuMemFree_v2", FR_FN_FREE },
	{ FR_CU_MEM_ALLOC_ASYNC, "cuMemAllocAsync", FR_FN_ALLOC },
	{ FR_CU_MEM_FREE_ASYNC, "cuMemFreeAsync", FR_FN_FREE },
	{ FR_CU_MEM_CREATE, "cuMemCreate", FR_FN_PHYS_ALLOC },
	{ FR_CU_MEM_RELEASE, "cuMemRelease", FR_FN_PHYS_FREE },
	{ FR_CU_MEM_MAP, "cuMemMap", FR_FN_MAP },
	{ FR_CU_MEM_UNMAP, "cuMemUnmap", FR_FN_UNMAP },
	{ FR_CU_MEM_HOST_ALLOC, "cuMemHostAlloc", FR_FN_HOST_ALLOC },
	{ FR_CU_LAUNCH_KERNEL, "cuLaunchKernel", FR_FN_LAUNCH },
	{ FR_CU_LAUNCH_KERNEL_EX, "cuLaunchKernelEx", FR_FN_LAUNCH },
	{ FR_CU_MEMCPY, "cuMemcpy*", FR_FN_COPY },
	{ FR_CU_MEMCPY_ASYNC, "cuMemcpy*Async", FR_FN_COPY },
	{ FR_CU_EVENT_RECORD, "cuEventRecord", FR_FN_EVENT },
	{ FR_CU_EVENT_QUERY, "cuEventQuery", FR_FN_QUERY },
	{ FR_CU_EVENT_SYNC, "cuEventSynchronize", FR_FN_SYNC },
	{ FR_CU_STREAM_WAIT_EVENT, "cuStreamWaitEvent", FR_FN_EVENT },
	{ FR_CU_GRAPH_LAUNCH, "cuGraphLaunch", FR_FN_GRAPH_LAUNCH },
};

/* entry programs: 0 fr_cuda_enter, 1 fr_cuda_enter_launch (launches take
 * one stack in --launch-stack-every) */
#define RT(sym, fn) {sym, fn, 0, 0, 0, false}
#define PTSZ(sym, fn) {sym, fn, FR_CUDAF_PTSZ, 0, 0, false}
#define LAUNCH(sym, fn, fl) {sym, fn, fl, 0, 1, false}
#define COPY(sym, fn, kind, fl) {sym, fn, fl, kind, 0, false}

static const struct fr_family_symbol symbols[] = {
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
	RT("cudaEventRecord", FR_CUDA_EVENT_RECORD),
	PTSZ("cudaEventRecord_ptsz", FR_CUDA_EVENT_RECORD),
	RT("cudaEventQuery", FR_CUDA_EVENT_QUERY),
	RT("cudaStreamWaitEvent", FR_CUDA_STREAM_WAIT_EVENT),
	PTSZ("cudaStreamWaitEvent_ptsz", FR_CUDA_STREAM_WAIT_EVENT),
	RT("cudaGraphLaunch", FR_CUDA_GRAPH_LAUNCH),
	PTSZ("cudaGraphLaunch_ptsz", FR_CUDA_GRAPH_LAUNCH),
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
	RT("cuEventRecord", FR_CU_EVENT_RECORD),
	PTSZ("cuEventRecord_ptsz", FR_CU_EVENT_RECORD),
	RT("cuEventQuery", FR_CU_EVENT_QUERY),
	RT("cuEventSynchronize", FR_CU_EVENT_SYNC),
	RT("cuStreamWaitEvent", FR_CU_STREAM_WAIT_EVENT),
	PTSZ("cuStreamWaitEvent_ptsz", FR_CU_STREAM_WAIT_EVENT),
	RT("cuGraphLaunch", FR_CU_GRAPH_LAUNCH),
	PTSZ("cuGraphLaunch_ptsz", FR_CU_GRAPH_LAUNCH),
};

static const char *const knobs[] = {
	"fr_filter_mode", "fr_target_cgroup_id", "fr_stack_mode", "fr_ustack_bytes",
	"fr_launch_stack_every", NULL,
};

const struct fr_family fr_family_cuda = {
	.id = FR_PROBE_CUDA,
	.name = "cuda",
	.selectable = true,
	.help = "CUDA runtime and driver calls (allocations,\n"
		"frees, copies, launches, synchronizes, event\n"
		"records/queries/stream waits, graph launches)\n"
		"with their stacks, in every libcudart/libcuda\n"
		"the traced processes map, including ones\n"
		"loaded later with dlopen (attached within\n"
		"10-20 ms of the mapping here; calls made before\n"
		"that are not seen)",
	.attach = FR_ATTACH_LIBRARY,
	.records = records,
	.n_records = sizeof(records) / sizeof(records[0]),
	.funcs = funcs,
	.n_funcs = sizeof(funcs) / sizeof(funcs[0]),
	.symbols = symbols,
	.n_symbols = sizeof(symbols) / sizeof(symbols[0]),
	.entry_progs = { "fr_cuda_enter", "fr_cuda_enter_launch" },
	.exit_prog = "fr_cuda_exit",
	.knobs = knobs,
};
