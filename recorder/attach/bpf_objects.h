/* The compiled BPF object of each probe family: the ELF bytes its libbpf
 * skeleton embeds (bpf/CMakeLists.txt builds one per family, named after
 * it).  The family descriptors (fr_family.h) are pure data and link no BPF
 * object; this table is the one place that ties a family id to its
 * programs.  A new family adds one line in bpf_objects.c. */
#ifndef FLIGHTREC_BPF_OBJECTS_H
#define FLIGHTREC_BPF_OBJECTS_H

#include <stdbool.h>
#include <stddef.h>

#include "events.h"

/* The ELF image of family id's object and its size, or NULL when this
 * build has none.  dynptr: the variant built with FR_USTACK_DYNPTR, whose
 * --stack dwarf copies go from user memory straight into the ring record
 * (NULL for a family that takes no stacks). */
const void *bpf_object_elf(enum fr_probe_id id, bool dynptr, size_t *size);

/* Whether the running kernel has the kfunc the dynptr variants call
 * (bpf_probe_read_user_dynptr, Linux 6.16 on), from its BTF.
 * FLIGHTREC_USTACK_DYNPTR=0 in the environment says no (for comparing the
 * two paths). */
bool bpf_kernel_has_dynptr_read(void);

#endif
