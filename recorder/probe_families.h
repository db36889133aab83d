/* The user-space function probe families and their tables. */
#ifndef FLIGHTREC_PROBE_FAMILIES_H
#define FLIGHTREC_PROBE_FAMILIES_H

#include <stddef.h>

#include "uprobe_family.h"

extern const struct uprobe_spec cuda_specs[];
extern const size_t n_cuda_specs;
extern const struct uprobe_spec nccl_specs[];
extern const size_t n_nccl_specs;
extern const struct uprobe_spec rdma_specs[];
extern const size_t n_rdma_specs;

#endif
