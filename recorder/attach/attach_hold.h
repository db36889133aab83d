/* Holding a process while probes it is about to need are attached, and
 * making sure it is let go: one module for every such hold (the rdma data
 * path, maps fr_rdma_*; libraries mapped by dlopen, maps fr_lib_*).
 *
 * A BPF return probe stops a process (SIGSTOP) that is about to use code
 * the recorder has not probed yet (bpf/hold.bpf.h), so it cannot make a
 * call nobody sees.  This module is the other half: it finds a hold's maps,
 * continues a held process (SIGCONT) once the recorder has attached what it
 * needed, marks files handled so nobody is held for them again, and runs
 * the guardian: a small process of its own (the recorder's executable,
 * re-executed with nothing but two map fds and a pipe) that continues every
 * held process when the recorder dies however it dies (the pipe's write
 * end closes with it, SIGKILL included), and any hold that outlasts
 * ATTACH_HOLD_MAX_MS while the recorder lives (a recorder stopped with
 * Ctrl-Z, or starved).  Holds are enabled only once the guardian runs.
 *
 * Not for: deciding whom to hold (the BPF side does), nor attaching
 * (rdma_datapath.c, lib_attach.c). */
#ifndef FLIGHTREC_ATTACH_HOLD_H
#define FLIGHTREC_ATTACH_HOLD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "hold_abi.h"

struct bpf_program;

/* The longest a process stays held while the recorder lives: normally the
 * attach takes a few milliseconds; the drain gives up on a mapping after
 * one second and continues the process itself. */
#define ATTACH_HOLD_MAX_MS 2000

struct attach_hold {
	int held_fd, ready_fd, cfg_fd; /* the hold's maps; -1 when absent */
	int guard_fd;                  /* our end of the guardian's pipe; -1: none */
	pid_t guardian;
	bool enabled;
};

/* Before anything else: no maps, no guardian. */
void attach_hold_init(struct attach_hold *h);
/* prog: a program that uses the hold's maps, named maps_prefix followed by
 * _held, _ready and _hold_cfg (its return program: "fr_rdma", "fr_lib").
 * Starts the guardian and enables holds.  0, or -1 with the reason in err
 * (holds stay off). */
int attach_hold_start(struct attach_hold *h, struct bpf_program *prog, const char *maps_prefix,
		      char *err, size_t errlen);
/* key (the ready map's key type) is handled: processes that need it from
 * now on are not held. */
void attach_hold_mark_ready(struct attach_hold *h, const void *key);
/* Continues pid, held since held_ns (the hold's id).  true when that hold
 * was still in force; false when it was let go before (by the guardian,
 * past its bound): the process ran meanwhile. */
bool attach_hold_release(struct attach_hold *h, uint32_t pid, uint64_t held_ns);
/* Holds off, every held process continued, the guardian stopped and
 * reaped, the maps closed. */
void attach_hold_stop(struct attach_hold *h);

#endif
