/* What each CUDA function the cuda probe family records is, read from the
 * family's descriptor (bpf/families/family_cuda.c): its name.  What it does
 * to memory is the ledger's rule (ledger/mem_ledger.c). */
#include "cuda_funcs.h"
#include "fr_family.h"

const char *cuda_func_name(uint16_t func)
{
	return fr_func_name(FR_PROBE_CUDA, func);
}

