/* What a CUDA call does to GPU memory, as the analyzer's memory model and
 * the recorder's flight-recorder ring both count it: the class of each
 * function of the cuda family, the owner key of the live-allocation table
 * (mem_live.h), and which allocations hold memory.  One rule in one place,
 * so the allocations a snapshot carries are the ones `memory` counts. */
#ifndef FLIGHTREC_MEM_LEDGER_H
#define FLIGHTREC_MEM_LEDGER_H

#include <stdint.h>

/* What a CUDA function does to memory. */
enum mem_class {
	MEM_NONE = 0,
	MEM_DEV_ALLOC,    /* cudaMalloc, cudaMallocAsync, cudaMallocManaged, cuMemAlloc(_Async) */
	MEM_DEV_FREE,     /* cudaFree(Async), cuMemFree(Async) */
	MEM_PHYS_CREATE,  /* cuMemCreate: physical memory, handle in ptr */
	MEM_PHYS_RELEASE, /* cuMemRelease(handle) */
	MEM_HOST_ALLOC,   /* pinned host: cudaMallocHost, cudaHostAlloc, cuMemHostAlloc, cudaHostRegister */
	MEM_HOST_FREE,    /* cudaFreeHost, cudaHostUnregister */
};
enum mem_class mem_func_class(uint16_t func);

/* Which addresses a call names: device pointers, physical-memory handles
 * and pinned host pointers are three spaces, so one number in two of them
 * is two allocations. */
enum mem_kind { MEM_KIND_DEV = 0, MEM_KIND_HOST = 1, MEM_KIND_HANDLE = 2 };

static inline int mem_class_is_alloc(enum mem_class c)
{
	return c == MEM_DEV_ALLOC || c == MEM_PHYS_CREATE || c == MEM_HOST_ALLOC;
}

static inline enum mem_kind mem_class_kind(enum mem_class c)
{
	return c == MEM_HOST_ALLOC || c == MEM_HOST_FREE ? MEM_KIND_HOST :
	       c == MEM_PHYS_CREATE || c == MEM_PHYS_RELEASE ? MEM_KIND_HANDLE : MEM_KIND_DEV;
}

/* The live table's owner: one per (trace file, address kind, process). */
static inline uint64_t mem_ledger_owner(uint32_t file, enum mem_kind kind, uint32_t pid)
{
	return (uint64_t)file << 34 | (uint64_t)kind << 32 | pid;
}

/* No allocation is that big (256 TiB): a size past it is damage. */
#define MEM_IMPLAUSIBLE_BYTES (1ull << 48)

/* A successful allocation holds memory unless it is empty (cudaMalloc(&p,
 * 0) succeeds with p = NULL) or implausible. */
static inline int mem_alloc_holds(uint64_t ptr, uint64_t bytes)
{
	return ptr && bytes && bytes < MEM_IMPLAUSIBLE_BYTES;
}

#endif
