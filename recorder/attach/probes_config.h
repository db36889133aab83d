/* What loading and attaching the probe families needs to know of the
 * recording (main.c fills it from the command line): which families, how
 * big the shared maps are, and the values of the programs' knobs
 * (bpf_knobs.c).  The field names are those of struct record_opts. */
#ifndef FLIGHTREC_PROBES_CONFIG_H
#define FLIGHTREC_PROBES_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

struct probes_config {
	unsigned probes;            /* PROBE_BIT of each family chosen (fr_family.h) */
	bool probes_given;          /* named by --probes: a family that fails is an error */
	const char *step_marker;    /* --step-marker SYMBOL, or NULL */
	unsigned buffer_mib;        /* the BPF ring buffer's size */
	unsigned freq_hz;           /* CPU sampling frequency */
	bool stack_dwarf;           /* --stack dwarf (else frame pointers) */
	unsigned stack_kib;         /* bytes of user stack copied, in KiB */
	bool ustack_dynptr;         /* dwarf: load the one-copy variants
				       (bpf_objects.h) where a family has one */
	uint64_t syscall_min_ns;
	uint64_t sched_min_ns;
	bool syscall_stacks;
	unsigned launch_stack_every; /* cuda: one launch in N takes a stack */
};

#endif
