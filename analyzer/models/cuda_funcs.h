/* The CUDA functions of the cuda probe family (enum fr_cuda_func in
 * bpf/events.h), as every model and output names and classifies them: the
 * family's descriptor, so `memory`, `cuda`, SQLite, the timeline and the
 * report say the same.  Not for error codes (model_cuda.h). */
#ifndef FLIGHTREC_CUDA_FUNCS_H
#define FLIGHTREC_CUDA_FUNCS_H

#include <stdint.h>
#include "events.h"

/* "cudaMalloc", "cuMemAlloc_v2", ...; NULL for a number the table lacks. */
const char *cuda_func_name(uint16_t func);
/* Function numbers are below this (tables indexed by function use it). */
#define CUDA_FUNC_LIMIT 64

/* What a CUDA function does to memory: the ledger's rule (mem_ledger.h). */
#include "mem_ledger.h"

#endif
