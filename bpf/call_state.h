/* The per-call entry state of the uprobe families (cuda, nccl, rdma): what
 * an entry program saves for its return program, in the LRU hash map
 * fr_<family>_calls keyed by (thread, cookie).  Shared by the BPF programs
 * (uprobe_common.bpf.h) and the recorder, which reads these maps to find
 * the calls entered and not returned (recorder/drain/inflight.c): a collective
 * or a synchronize that never returns writes no event, so the entry state
 * is the only trace of it.  Plain fixed-width types only; not part of the
 * trace format (the recorder and its BPF objects are built together). */
#ifndef FLIGHTREC_CALL_STATE_H
#define FLIGHTREC_CALL_STATE_H

#include "events.h"

struct call_key {
	fr_u32 tid;
	fr_u32 cookie_lo; /* low 32 bits of the cookie: function id and flags */
};

struct call_state {
	fr_u64 ts_ns;    /* entry, CLOCK_MONOTONIC */
	fr_u64 arg[6];   /* the integer argument registers at entry */
	fr_u64 extra[2]; /* values read at entry from the stack or memory */
	fr_u32 pid;      /* thread group of the caller: the key has only the thread */
	fr_u32 seq;      /* nccl: the call's number on its communicator (FR_EV_NCCL.seq) */
};

/* The function id in a cookie (func | flags << 16 | extra << 32). */
#define CALL_COOKIE_FUNC(cookie_lo) ((fr_u16)((cookie_lo) & 0xffff))

#endif
