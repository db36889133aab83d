/* The BPF programs' read-only knobs (`const volatile` variables, fixed
 * before loading), set from the recording's probes_config.  Each family's descriptor names
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
#include "frec_error.h"
#include "attach/probes_config.h"

struct bpf_object;

/* Sets the knobs family f lists in obj, opened and not yet loaded
 * (cgroup_id != 0: filter by cgroup).  0, or -EINVAL with one line in fe->what when
 * the descriptor, the object and the table disagree: a knob without a
 * value here, a knob the object lacks, a size that differs (programming
 * errors, whatever the options). */
int bpf_knobs_set(struct bpf_object *obj, const struct fr_family *f,
		  const struct probes_config *o, uint64_t cgroup_id, struct frec_error *fe);

#endif
