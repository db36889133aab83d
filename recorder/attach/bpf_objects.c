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
#include "step.skel.h"
#include "syscalls.skel.h"
#pragma GCC diagnostic pop

static const struct {
	enum fr_probe_id id;
	const void *(*elf_bytes)(size_t *size);
} objects[] = {
	{ FR_PROBE_PROC, fr_proc_bpf__elf_bytes },
	{ FR_PROBE_CPU, fr_cpu_bpf__elf_bytes },
	{ FR_PROBE_SYSCALLS, fr_syscalls_bpf__elf_bytes },
	{ FR_PROBE_CUDA, fr_cuda_bpf__elf_bytes },
	{ FR_PROBE_NCCL, fr_nccl_bpf__elf_bytes },
	{ FR_PROBE_RDMA, fr_rdma_bpf__elf_bytes },
	{ FR_PROBE_STEP, fr_step_bpf__elf_bytes },
};

const void *bpf_object_elf(enum fr_probe_id id, size_t *size)
{
	for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++)
		if (objects[i].id == id)
			return objects[i].elf_bytes(size);
	return NULL;
}
