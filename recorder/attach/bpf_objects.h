/* The compiled BPF object of each probe family: the ELF bytes its libbpf
 * skeleton embeds (bpf/CMakeLists.txt builds one per family, named after
 * it).  The family descriptors (fr_family.h) are pure data and link no BPF
 * object; this table is the one place that ties a family id to its
 * program.  A new family adds one line in bpf_objects.c. */
#ifndef FLIGHTREC_BPF_OBJECTS_H
#define FLIGHTREC_BPF_OBJECTS_H

#include <stddef.h>

#include "events.h"

/* The ELF image of family id's object and its size, or NULL when this
 * build has none. */
const void *bpf_object_elf(enum fr_probe_id id, size_t *size);

#endif
