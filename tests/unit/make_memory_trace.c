/* Writes OUT (a trace file) with every case the GPU memory ledger knows, for
 * tests/integration/test_memory_agreement.py, which checks that `memory
 * --json`, SQLite and the report's data agree on it exactly.  Not a test
 * itself.
 *
 * pid 100 (device 0 and 1, tids 100 and 101):
 *   cudaMalloc around cuMemAlloc_v2 (both probed: one allocation), freed
 *   the same way (cudaFree around cuMemFree_v2); cudaMallocManaged;
 *   cuMemCreate / cuMemRelease (a handle); cudaHostRegister /
 *   cudaHostUnregister and cudaMallocHost / cudaFreeHost (pinned host);
 *   an address returned again without its free (a missed free); a failed
 *   allocation; a free of an address allocated before the recording; free
 *   of NULL; a failed free; allocations on device 1 from thread 101; leaks.
 * pid 200 (device 0): a caching allocator's segments, never freed.
 *
 * usage: make_memory_trace OUT */
#include "test_analyzer_common.h"

#define MS(x) (1000000000ull + (uint64_t)(x) * 1000000ull)

static uint64_t t_ms = 1;

static void call(struct synth *s, uint32_t pid, uint32_t tid, uint16_t func, uint64_t ptr,
		 uint64_t bytes, uint32_t stack, int64_t result, int32_t device)
{
	synth_cuda(s, (struct fr_ev_cuda){ .c = { .ts_ns = MS(t_ms), .pid = pid, .tid = tid },
					   .func = func, .stack_id = stack, .duration_ns = 2000,
					   .result = result, .ptr = ptr, .bytes = bytes,
					   .device = device });
	t_ms += 3;
}

/* A runtime call around a driver call: the driver call returns first. */
static void nested(struct synth *s, uint32_t pid, uint16_t outer, uint16_t inner, uint64_t ptr,
		   uint64_t bytes, uint32_t stack)
{
	struct fr_ev_cuda in = { .c = { .ts_ns = MS(t_ms) + 100, .pid = pid, .tid = pid },
				 .func = inner, .stack_id = stack, .duration_ns = 1000,
				 .ptr = ptr, .bytes = bytes };
	struct fr_ev_cuda out = in;
	out.c.ts_ns = MS(t_ms);
	out.func = outer;
	out.duration_ns = 2000;
	synth_cuda(s, in);
	synth_cuda(s, out);
	t_ms += 3;
}

int main(int argc, char **argv)
{
	struct synth s;
	if (argc != 2) {
		fprintf(stderr, "usage: make_memory_trace OUT\n");
		return 2;
	}
	if (synth_open(&s, argv[1]))
		return 1;
	synth_process(&s, 100, 1, "trainer", "python train.py");
	synth_process(&s, 200, 1, "cacher", "python cache.py");
	synth_mapping(&s, 100, 0x400000, 0x500000, 0, 1, "/usr/bin/trainer");
	synth_mapping(&s, 200, 0x400000, 0x500000, 0, 1, "/usr/bin/trainer");
	for (uint32_t i = 1; i <= 6; i++) {
		uint64_t ips[] = { 0x401010 + 0x1000 * i, 0x401010 };
		synth_stack(&s, i, 100, ips, 0, 2);
		synth_stack(&s, 10 + i, 200, ips, 0, 2);
	}
	nested(&s, 100, FR_CUDA_MALLOC, FR_CU_MEM_ALLOC, 0xA000, 1000, 1);
	nested(&s, 100, FR_CUDA_MALLOC, FR_CU_MEM_ALLOC, 0xB000, 3000, 2);
	call(&s, 100, 100, FR_CUDA_MALLOC_MANAGED, 0xC000, 700, 3, 0, 0);
	call(&s, 100, 100, FR_CU_MEM_CREATE, 0x77, 1 << 20, 4, 0, 0);
	call(&s, 100, 100, FR_CUDA_HOST_REGISTER, 0x7f0000, 8192, 5, 0, 0);
	call(&s, 100, 100, FR_CUDA_MALLOC_HOST, 0x7f4000, 4096, 5, 0, 0);
	call(&s, 100, 101, FR_CUDA_MALLOC, 0x1000000, 5000, 6, 0, 1);
	nested(&s, 100, FR_CUDA_FREE, FR_CU_MEM_FREE, 0xA000, 0, 1);
	call(&s, 100, 100, FR_CUDA_MALLOC, 0xD000, 2000, 1, 0, 0);
	call(&s, 100, 100, FR_CUDA_MALLOC, 0xD000, 2500, 2, 0, 0); /* its free was missed */
	call(&s, 100, 100, FR_CUDA_MALLOC, 0, 1ull << 40, 3, 2, 0); /* out of memory */
	call(&s, 100, 100, FR_CUDA_FREE, 0xDEAD, 0, 1, 0, 0);       /* allocated before */
	call(&s, 100, 100, FR_CUDA_FREE, 0, 0, 1, 0, 0);            /* NULL */
	call(&s, 100, 100, FR_CUDA_FREE, 0xB000, 0, 2, 1, 0);       /* failed: not applied */
	call(&s, 100, 100, FR_CU_MEM_RELEASE, 0x77, 0, 4, 0, 0);
	call(&s, 100, 100, FR_CUDA_HOST_UNREGISTER, 0x7f0000, 0, 5, 0, 0);
	call(&s, 100, 100, FR_CUDA_FREE, 0xC000, 0, 3, 0, 0);
	call(&s, 100, 101, FR_CUDA_MALLOC, 0x2000000, 6000, 6, 0, 1);
	call(&s, 100, 101, FR_CUDA_FREE, 0x1000000, 0, 6, 0, 1);
	for (uint32_t i = 0; i < 6; i++)
		call(&s, 200, 200, FR_CUDA_MALLOC, 0x10000000ull * (i + 1), 2ull << 20, 11 + i % 3,
		     0, 0);
	call(&s, 100, 100, FR_CUDA_FREE_HOST, 0x7f4000, 0, 5, 0, 0);
	static const struct synth_sym syms[] = {
		{ 0x1000, 0x100, "main" }, { 0x2000, 0x100, "alloc_a" }, { 0x3000, 0x100, "alloc_b" },
		{ 0x4000, 0x100, "managed_fn" }, { 0x5000, 0x100, "vmm_fn" },
		{ 0x6000, 0x100, "pin_fn" }, { 0x7000, 0x100, "other_gpu" },
	};
	synth_dso(&s, 1, 0, "/usr/bin/trainer", syms, 7);
	return synth_close(&s, 0, 0) ? 1 : 0;
}
