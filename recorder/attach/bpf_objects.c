/* Family id -> embedded BPF object (see bpf_objects.h). */
#include "attach/bpf_objects.h"

/* Only each skeleton's elf_bytes() is used: opening, loading and attaching
 * are bpf_probes.c's, generic over the descriptors.  The skeletons' other
 * static helpers go unused here. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "cpu.skel.h"
#include "cuda.skel.h"
#include "nccl.skel.h"
#include "proc.skel.h"
#include "rdma.skel.h"
#include "sched.skel.h"
#include "gpu.skel.h"
#include "step.skel.h"
#include "syscalls.skel.h"
#include "cpu_dynptr.skel.h"
#include "cuda_dynptr.skel.h"
#include "nccl_dynptr.skel.h"
#include "rdma_dynptr.skel.h"
#include "sched_dynptr.skel.h"
#include "gpu_dynptr.skel.h"
#include "step_dynptr.skel.h"
#include "syscalls_dynptr.skel.h"
#pragma GCC diagnostic pop

#include <bpf/btf.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	enum fr_probe_id id;
	const void *(*elf_bytes)(size_t *size);
	const void *(*dynptr_elf_bytes)(size_t *size); /* NULL: takes no stacks */
} objects[] = {
	{ FR_PROBE_PROC, fr_proc_bpf__elf_bytes, NULL },
	{ FR_PROBE_CPU, fr_cpu_bpf__elf_bytes, fr_cpu_dynptr_bpf__elf_bytes },
	{ FR_PROBE_SYSCALLS, fr_syscalls_bpf__elf_bytes, fr_syscalls_dynptr_bpf__elf_bytes },
	{ FR_PROBE_CUDA, fr_cuda_bpf__elf_bytes, fr_cuda_dynptr_bpf__elf_bytes },
	{ FR_PROBE_NCCL, fr_nccl_bpf__elf_bytes, fr_nccl_dynptr_bpf__elf_bytes },
	{ FR_PROBE_RDMA, fr_rdma_bpf__elf_bytes, fr_rdma_dynptr_bpf__elf_bytes },
	{ FR_PROBE_STEP, fr_step_bpf__elf_bytes, fr_step_dynptr_bpf__elf_bytes },
	{ FR_PROBE_SCHED, fr_sched_bpf__elf_bytes, fr_sched_dynptr_bpf__elf_bytes },
	{ FR_PROBE_GPU, fr_gpu_bpf__elf_bytes, fr_gpu_dynptr_bpf__elf_bytes },
};

const void *bpf_object_elf(enum fr_probe_id id, bool dynptr, size_t *size)
{
	for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++)
		if (objects[i].id == id) {
			if (dynptr)
				return objects[i].dynptr_elf_bytes ? objects[i].dynptr_elf_bytes(size)
								   : NULL;
			return objects[i].elf_bytes(size);
		}
	return NULL;
}

bool bpf_kernel_has_dynptr_read(void)
{
	const char *env = getenv("FLIGHTREC_USTACK_DYNPTR");
	if (env && !strcmp(env, "0"))
		return false;
	struct btf *vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux)
		return false;
	bool has = btf__find_by_name_kind(vmlinux, "bpf_probe_read_user_dynptr", BTF_KIND_FUNC) > 0;
	btf__free(vmlinux);
	return has;
}
