/* What each CUDA function the cuda probe family records is, read from the
 * family's descriptor (bpf/families/family_cuda.c): its name and what it does
 * to memory (see cuda_funcs.h). */
#include "cuda_funcs.h"
#include "fr_family.h"

const char *cuda_func_name(uint16_t func)
{
	return fr_func_name(FR_PROBE_CUDA, func);
}

enum mem_class mem_func_class(uint16_t func)
{
	switch (fr_func_class_of(FR_PROBE_CUDA, func)) {
	case FR_FN_ALLOC: return MEM_DEV_ALLOC;
	case FR_FN_FREE: return MEM_DEV_FREE;
	case FR_FN_PHYS_ALLOC: return MEM_PHYS_CREATE;
	case FR_FN_PHYS_FREE: return MEM_PHYS_RELEASE;
	case FR_FN_HOST_ALLOC: return MEM_HOST_ALLOC;
	case FR_FN_HOST_FREE: return MEM_HOST_FREE;
	default: return MEM_NONE;
	}
}
