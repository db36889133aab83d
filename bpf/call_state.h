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

/* A uprobe's BPF cookie, written by the recorder (uprobe_family.c) from
 * the family descriptor's symbol (fr_family.h) and read by the programs:
 * the function id in bits 0-15, its flags in 16-31, a per-function extra
 * value in 32-63.  The *_FUNC and *_FLAGS macros also take the cookie's
 * low 32 bits (struct call_key.cookie_lo). */
#define FR_COOKIE(func, flags, extra) \
	((fr_u64)(func) | (fr_u64)(flags) << 16 | (fr_u64)(extra) << 32)
#define CALL_COOKIE_FUNC(cookie) ((fr_u16)((cookie) & 0xffff))
#define CALL_COOKIE_FLAGS(cookie) ((fr_u16)(((cookie) >> 16) & 0xffff))
#define CALL_COOKIE_EXTRA(cookie) ((fr_u32)((fr_u64)(cookie) >> 32))

#endif
