/* The dlopen hold of the library families (cuda, nccl): a process whose
 * dlopen mapped a library of theirs that the recorder has not attached yet
 * is stopped at dlopen's return (bpf/lib_hold.bpf.h) and continued here once
 * the tracking thread has handled the new mappings (lib_attach_try), so no
 * call made right after dlopen returns goes unseen.  This module attaches
 * the dlopen probes (to the recorder's own libc before the command starts,
 * and to every other libc a traced process maps), fills the family file
 * names the BPF side matches, reads its notes of held processes, lets them
 * go and counts what was not held in time (not_attached).  The hold itself
 * (guardian, bound) is attach_hold.c's.  Runs on the tracking thread. */
#ifndef FLIGHTREC_LIB_HOLD_H
#define FLIGHTREC_LIB_HOLD_H

#include <stdbool.h>
#include <stdint.h>

#include "attach/attach_hold.h"
#include "attach/bpf_probes.h"
#include "attach/uprobe_family.h"

struct ring_buffer;

struct lib_hold {
	struct bpf_probes *probes;
	struct attach_hold hold;
	struct uprobe_family dlopen; /* dlopen and dlmopen, in each libc */
	struct ring_buffer *notes;   /* held processes, from the BPF side */
	struct lib_hold_note pending[64];
	int n_pending;
	bool on, quiet;
	uint64_t holds;        /* processes held and let go */
	uint64_t late;         /* holds the guardian ended before the recorder */
	uint64_t held_ns_max;  /* the longest hold */
};

void lib_hold_init(struct lib_hold *lh);
/* Starts the hold when the cuda or nccl family is loaded (nothing to do
 * otherwise: 0, holds off).  -1 with the reason in err: libraries loaded
 * with dlopen are then attached after they are mapped. */
int lib_hold_start(struct lib_hold *lh, struct bpf_probes *p, bool quiet, char *err,
		   size_t errlen);
/* The fd to poll for notes; -1 when off. */
int lib_hold_fd(const struct lib_hold *lh);
/* A file a traced process mapped for the first time: a libc gets the
 * dlopen probes.  name: its path (its last component says whether it is a
 * libc); fd: the file itself, opened as mapped (dso_table), so the probes
 * go on the inode the process maps whatever its name says now. */
void lib_hold_on_file(struct lib_hold *lh, const char *name, int fd);
/* Takes the notes that arrived: the processes held now.  Returns how many
 * wait; the caller handles the mappings made so far, then calls
 * lib_hold_release. */
int lib_hold_collect(struct lib_hold *lh);
/* Lets go the processes collected, their files marked handled. */
void lib_hold_release(struct lib_hold *lh);
/* Holds off, everyone let go, the probes detached, the guardian stopped. */
void lib_hold_stop(struct lib_hold *lh);

#endif
