/* The BPF programs' read-only knobs (`const volatile` variables, fixed
 * before loading), set from the options.  Each family's descriptor names
 * the knobs its object reads (fr_family.h, `knobs`); they are found by name
 * in the object's .rodata BTF and checked for size.  The table at the top
 * of bpf_knobs.c is the one place that says what each knob is set to: a
 * new knob is one line there.  Not for opening or loading objects
 * (bpf_probes.c). */
#ifndef FLIGHTREC_BPF_KNOBS_H
#define FLIGHTREC_BPF_KNOBS_H

#include <stddef.h>
#include <stdint.h>

#include "fr_family.h"
#include "options.h"

struct bpf_object;

/* Sets the knobs family f lists in obj, opened and not yet loaded
 * (cgroup_id != 0: filter by cgroup).  0, or -1 with one line in msg when
 * the descriptor, the object and the table disagree: a knob without a
 * value here, a knob the object lacks, a size that differs (programming
 * errors, whatever the options). */
int bpf_knobs_set(struct bpf_object *obj, const struct fr_family *f,
		  const struct record_opts *o, uint64_t cgroup_id, char *msg, size_t len);

#endif
