/* The syscalls family's ring-full losses per call number (bpf/syscalls.bpf.c,
 * map fr_sys_drops_by_nr) into one FR_REC_SYSCALL_DROPS record, so a reader
 * can say exactly how many of one kind of call were made: the recorded ones
 * plus these.  Not for the per-probe drop counts (collect_stats, STATS, END),
 * which count every loss of the family, fd path records included. */
#ifndef FLIGHTREC_SYSCALL_DROPS_H
#define FLIGHTREC_SYSCALL_DROPS_H

#include <stdint.h>

struct bpf_probes;
struct frec_writer;

/* Reads the counters (after the probes are gone, so they are final) and
 * writes the record in a metadata chunk of its own; nothing when the
 * syscalls family is not loaded.  0, or -1 (out of memory, map unreadable:
 * the per-probe counts still hold every loss). */
int syscall_drops_write(const struct bpf_probes *p, struct frec_writer *w, uint64_t now_ns);

#endif
