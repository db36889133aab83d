/* The gpu family: GPU kernel times handed over by libflightrec_cupti.so,
 * the CUDA injection library (gpu/), through its two probe functions
 * (bpf/gpu.bpf.c).  Only in processes that load it: CUDA_INJECTION64_PATH
 * names it when the job starts. */
#include "fr_family.h"

static const struct fr_family_record records[] = {
	{ FR_EV_GPU_LAUNCH, 1, sizeof(struct fr_ev_gpu_launch), "gpu_launch",
	  FR_COMMON_FIELDS ",_pad:u32,stack_id:u32,correlation_id:u64", true },
	{ FR_EV_GPU_KERNEL, 1, sizeof(struct fr_ev_gpu_kernel), "gpu_kernel",
	  FR_COMMON_FIELDS ",_pad:u32,dropped:u32,start_ns:u64,end_ns:u64,correlation_id:u64,"
	  "device:u32,context:u32,stream:u32,grid:u32[3],block:u32[3],shared_bytes:u32,"
	  "registers:u32,name:char[124]", false },
};

enum { GPU_LAUNCH = 1, GPU_KERNELS = 2 };

static const struct fr_family_func funcs[] = {
	{ GPU_LAUNCH, "flightrec_cupti_launch", FR_FN_OTHER },
	{ GPU_KERNELS, "flightrec_cupti_kernels", FR_FN_OTHER },
};

static const struct fr_family_symbol symbols[] = {
	{ "flightrec_cupti_launch", GPU_LAUNCH, 0, 0, 0, true },
	{ "flightrec_cupti_kernels", GPU_KERNELS, 0, 0, 1, true },
};

static const char *const knobs[] = {
	"fr_filter_mode", "fr_target_cgroup_id", "fr_stack_mode", "fr_ustack_bytes", NULL,
};

const struct fr_family fr_family_gpu = {
	.id = FR_PROBE_GPU,
	.name = "gpu",
	.selectable = true,
	.help = "GPU kernel times (start, end, device, stream,\n"
		"grid, name) with their launches' stacks, from\n"
		"libflightrec_cupti.so in processes started with\n"
		"CUDA_INJECTION64_PATH naming it; by default only\n"
		"with --gpu-kernels or that variable set for\n"
		"-- COMMAND",
	.attach = FR_ATTACH_LIBRARY,
	.records = records,
	.n_records = sizeof(records) / sizeof(records[0]),
	.funcs = funcs,
	.n_funcs = sizeof(funcs) / sizeof(funcs[0]),
	.symbols = symbols,
	.n_symbols = sizeof(symbols) / sizeof(symbols[0]),
	.entry_progs = { "fr_gpu_launch", "fr_gpu_kernels" },
	.knobs = knobs,
};
