/* The classes of the cuda family's functions (see mem_ledger.h), from the
 * family descriptor's function classes. */
#include "mem_ledger.h"

#include "fr_family.h"

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
