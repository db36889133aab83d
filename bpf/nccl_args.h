/* Where an NCCL call's arguments are in its entry state (struct call_state):
 * which register or stack slot holds the communicator, the count, the
 * type, the operation, the root or peer and the stream of each collective,
 * send/recv and group end.  Written once for both readers: the nccl return
 * program builds its event from it (bpf/nccl.bpf.c), and the recorder
 * describes the calls still in flight from the same state (recorder/
 * inflight.c).  Not for the communicator calls (init, split, destroy): their
 * results are read from user memory at return, in BPF only. */
#ifndef FLIGHTREC_NCCL_ARGS_H
#define FLIGHTREC_NCCL_ARGS_H

#include "call_state.h"

#ifdef __bpf__
#define NCCL_ARGS_FN static __always_inline
#else
#define NCCL_ARGS_FN static inline
#endif

NCCL_ARGS_FN int nccl_args_is_collective(fr_u16 func)
{
	return func >= FR_NCCL_ALL_REDUCE && func <= FR_NCCL_REDUCE;
}

NCCL_ARGS_FN int nccl_args_is_p2p(fr_u16 func)
{
	return func == FR_NCCL_SEND || func == FR_NCCL_RECV;
}

/* The communicator of a collective or send/recv at entry; 0 for others. */
NCCL_ARGS_FN fr_u64 nccl_args_comm(const struct call_state *st, fr_u16 func)
{
	switch (func) {
	case FR_NCCL_ALL_REDUCE: case FR_NCCL_REDUCE_SCATTER: case FR_NCCL_BROADCAST:
		return st->arg[5];
	case FR_NCCL_ALL_GATHER: case FR_NCCL_SEND: case FR_NCCL_RECV:
		return st->arg[4];
	case FR_NCCL_REDUCE:
		return st->extra[0]; /* the 7th argument, on the stack */
	default:
		return 0;
	}
}

/* Fills comm, count, datatype, op, peer (root) and stream of a collective,
 * a send/recv or a group end from its entry state; leaves e alone for
 * other functions.  The outermost ncclGroupEnd's entry state holds the
 * group's first call: extra[0] its comm, extra[1] the calls queued, arg[0]
 * its function (nccl.bpf.c, group_end). */
NCCL_ARGS_FN void nccl_args_fill(struct fr_ev_nccl *e, const struct call_state *st, fr_u16 func)
{
	const fr_u64 *a = st->arg;

	switch (func) {
	case FR_NCCL_ALL_REDUCE: case FR_NCCL_REDUCE_SCATTER:
		/* (send, recv, count, type, op, comm, stream) */
		e->count = a[2];
		e->datatype = (fr_u32)a[3];
		e->op = (fr_u32)a[4];
		e->comm = a[5];
		e->stream = st->extra[0];
		break;
	case FR_NCCL_ALL_GATHER: /* (send, recv, count, type, comm, stream) */
		e->count = a[2];
		e->datatype = (fr_u32)a[3];
		e->comm = a[4];
		e->stream = a[5];
		break;
	case FR_NCCL_BROADCAST: /* (send, recv, count, type, root, comm, stream) */
		e->count = a[2];
		e->datatype = (fr_u32)a[3];
		e->peer = (fr_s32)a[4];
		e->comm = a[5];
		e->stream = st->extra[0];
		break;
	case FR_NCCL_REDUCE: /* (send, recv, count, type, op, root, comm, stream) */
		e->count = a[2];
		e->datatype = (fr_u32)a[3];
		e->op = (fr_u32)a[4];
		e->peer = (fr_s32)a[5];
		e->comm = st->extra[0];
		e->stream = st->extra[1];
		break;
	case FR_NCCL_SEND: case FR_NCCL_RECV: /* (buf, count, type, peer, comm, stream) */
		e->count = a[1];
		e->datatype = (fr_u32)a[2];
		e->peer = (fr_s32)a[3];
		e->comm = a[4];
		e->stream = a[5];
		break;
	case FR_NCCL_GROUP_END:
		e->comm = st->extra[0];
		e->count = st->extra[1];
		break;
	default:
		break;
	}
}

/* The function of the call a group end's state names (see nccl_args_fill);
 * func itself for every other call. */
NCCL_ARGS_FN fr_u16 nccl_args_named_func(const struct call_state *st, fr_u16 func)
{
	return func == FR_NCCL_GROUP_END && st->seq ? (fr_u16)st->arg[0] : func;
}

#endif
