/* The probe family table (see probe_catalog.h). */
#include "probe_catalog.h"

#include <string.h>

static const struct probe_family_desc catalog[] = {
	{ FR_PROBE_PROC, "proc", false, false, NULL },
	{ FR_PROBE_CPU, "cpu", true, false, "stack samples at --freq" },
	{ FR_PROBE_SYSCALLS, "syscalls", true, false,
	  "every system call with duration, fd, bytes\n"
	  "and user stack.  While attached, EVERY\n"
	  "process on the node pays about 140 ns per\n"
	  "system call (the kernel's tracepoint slow\n"
	  "path), traced or not." },
	{ FR_PROBE_CUDA, "cuda", true, true,
	  "CUDA runtime and driver calls (allocations,\n"
	  "frees, copies, launches, synchronizes) with\n"
	  "their stacks, in every libcudart/libcuda\n"
	  "the traced processes map, including ones\n"
	  "loaded later with dlopen (attached within\n"
	  "10-20 ms of the mapping here; calls made before\n"
	  "that are not seen)" },
	{ FR_PROBE_NCCL, "nccl", true, true,
	  "NCCL collectives, point-to-point, groups and\n"
	  "communicator calls, in every libnccl mapped" },
	{ FR_PROBE_RDMA, "rdma", true, true,
	  "verbs control path (open device, create/modify/\n"
	  "destroy QP, register MR, create CQ) and data\n"
	  "path: every work request posted and every\n"
	  "completion, found through the provider\n"
	  "functions in a live context's ops table;\n"
	  "empty polls are only counted" },
	{ FR_PROBE_STEP, "step", false, false, NULL },
};

_Static_assert(sizeof(catalog) / sizeof(catalog[0]) <= FR_PROBE_MAX, "FR_PROBE_MAX");

const struct probe_family_desc *probe_catalog(size_t *n)
{
	*n = sizeof(catalog) / sizeof(catalog[0]);
	return catalog;
}

const struct probe_family_desc *probe_family(unsigned id)
{
	for (size_t i = 0; i < sizeof(catalog) / sizeof(catalog[0]); i++)
		if ((unsigned)catalog[i].id == id)
			return &catalog[i];
	return NULL;
}

const struct probe_family_desc *probe_family_named(const char *name)
{
	for (size_t i = 0; i < sizeof(catalog) / sizeof(catalog[0]); i++)
		if (catalog[i].selectable && !strcmp(catalog[i].name, name))
			return &catalog[i];
	return NULL;
}
