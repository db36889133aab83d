/* --probe-cost: what each BPF program of the recording cost per call, from
 * the kernel's own run-time statistics, printed when the recording ends. */
#ifndef FLIGHTREC_PROBE_COST_H
#define FLIGHTREC_PROBE_COST_H

#include <stdio.h>

#include "attach/bpf_probes.h"

/* Turns the kernel's run-time statistics on for as long as the returned fd
 * is open (BPF_ENABLE_STATS: counted, so a kernel.bpf_stats_enabled others
 * rely on is left alone); -errno when the kernel refuses. */
int probe_cost_enable(void);

/* Prints every program of p that ran: calls, ns per call, total.  Read
 * while the programs are still loaded (after detaching is fine). */
void probe_cost_print(const struct bpf_probes *p, FILE *out);

#endif
