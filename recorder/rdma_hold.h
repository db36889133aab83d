/* Holding a process while the verbs data path is attached, and making sure
 * it is let go.
 *
 * The rdma return probe stops a process (SIGSTOP) that just got a verbs
 * context whose provider functions are not probed yet (bpf/rdma.bpf.c), so
 * it cannot post a work request nobody sees.  This module is the other
 * half: it finds the hold's maps, continues a held process (SIGCONT) once
 * the drain has attached its data path, marks that provider attached so
 * nobody is held for it again, and runs the guardian: a small process of
 * its own (the recorder's executable, re-executed with nothing but two map
 * fds and a pipe) that continues every held process when the recorder dies
 * however it dies (the pipe's write end closes with it, SIGKILL included),
 * and any hold that outlasts RDMA_HOLD_MAX_MS while the recorder lives (a
 * recorder stopped with Ctrl-Z, or starved).  Holds are enabled only once
 * the guardian runs.
 *
 * Not for: deciding whom to hold (the BPF side does, at the return of
 * ibv_open_device / ibv_create_qp), nor attaching (rdma_datapath.c). */
#ifndef FLIGHTREC_RDMA_HOLD_H
#define FLIGHTREC_RDMA_HOLD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "verbs_abi.h"

struct bpf_program;

/* The longest a process stays held while the recorder lives: normally the
 * attach takes a few milliseconds; the drain gives up on a mapping after
 * one second and continues the process itself. */
#define RDMA_HOLD_MAX_MS 2000

struct rdma_hold {
	int held_fd, ready_fd, cfg_fd; /* the rdma object's maps; -1 when absent */
	int guard_fd;                  /* our end of the guardian's pipe; -1: none */
	pid_t guardian;
	bool enabled;
};

/* Before anything else: no maps, no guardian. */
void rdma_hold_init(struct rdma_hold *h);
/* prog: a program of the rdma object that uses the hold maps (its return
 * program).  Starts the guardian and enables holds.  0, or -1 with the
 * reason in err (holds stay off). */
int rdma_hold_start(struct rdma_hold *h, struct bpf_program *prog, char *err, size_t errlen);
/* The data path of key's provider is attached: processes that open it from
 * now on are not held. */
void rdma_hold_mark_ready(struct rdma_hold *h, const struct rdma_ready_key *key);
/* Continues pid, held since held_ns (the hold's id).  true when that hold
 * was still in force; false when it was let go before (by the guardian,
 * past its bound): the process ran meanwhile. */
bool rdma_hold_release(struct rdma_hold *h, uint32_t pid, uint64_t held_ns);
/* Holds off, every held process continued, the guardian stopped and
 * reaped, the maps closed. */
void rdma_hold_stop(struct rdma_hold *h);

#endif
