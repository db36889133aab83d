/* Holding a process while the recorder attaches probes it is about to need
 * (bpf/hold.bpf.h, recorder/attach/attach_hold.c).  A return probe stops the
 * process (SIGSTOP) and the recorder continues it (SIGCONT) once the probes
 * are attached; a guardian process continues it if the recorder cannot.
 * Shared by the BPF side and the recorder; not part of the trace format.
 *
 * Two users: the rdma data path (bpf/rdma.bpf.c, maps fr_rdma_*) and
 * libraries of the library families mapped by dlopen
 * (bpf/lib_hold.bpf.h, maps fr_lib_*). */
#ifndef FLIGHTREC_HOLD_ABI_H
#define FLIGHTREC_HOLD_ABI_H

#include "events.h"

/* Map <prefix>_held, keyed by tgid: a process stopped for an attach. */
struct fr_held {
	fr_u64 held_ns; /* CLOCK_MONOTONIC when the stop was sent: the hold's id */
	fr_u32 state;   /* FR_HELD_* */
	fr_u32 _pad;
};
#define FR_HELD_HOLDING 0
#define FR_HELD_RELEASING 1 /* being continued: a new hold must stop it again */
#define FR_HELD_EXPIRED 2   /* continued by the guardian past the bound, before the
			       recorder attached: not held again until the
			       recorder has seen it (it is behind) */

/* Map <prefix>_hold_cfg[0]: holds are off until the recorder has a
 * guardian that continues held processes if the recorder dies. */
struct fr_hold_cfg {
	fr_u32 enabled;
	fr_u32 _pad;
};

/* ---- libraries mapped by dlopen (bpf/lib_hold.bpf.h, recorder/attach/lib_hold.c) */

/* Map fr_lib_ready: a file the recorder has handled (attached, or found
 * nothing to attach in), as the kernel names it.  Uprobes belong to a
 * file: nobody is held for it again. */
struct lib_ready_key {
	fr_u64 ino;
	fr_u32 dev; /* kernel dev_t (MAJOR << 20 | MINOR) */
	fr_u32 _pad;
};

/* Map fr_lib_names[i]: the file names a library family's probes are for
 * (prefix of the name's last component, NUL-terminated; "" ends the
 * list), filled by the recorder for the families it loaded. */
#define LIB_HOLD_NAMES 8
#define LIB_HOLD_NAME_LEN 23
struct lib_hold_name {
	char prefix[LIB_HOLD_NAME_LEN];
	fr_u8 probe; /* FR_PROBE_* of the family */
};

/* Ring fr_lib_notes: a process held at dlopen's return.  keys: the files
 * that dlopen mapped and the recorder had not handled. */
#define LIB_HOLD_KEYS 4
struct lib_hold_note {
	fr_u64 held_ns; /* the hold's id */
	fr_u32 tgid;
	fr_u32 probes;  /* PROBE_BIT of the families whose files were mapped */
	fr_u32 n_keys;
	fr_u32 _pad;
	struct lib_ready_key keys[LIB_HOLD_KEYS];
};
#endif
