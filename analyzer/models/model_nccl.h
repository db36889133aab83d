/* The NCCL model: who the ranks are, their communicators, the collective
 * instances matched across ranks (and nodes), and training steps.
 *
 *   rank        a process that made NCCL calls (a node = a trace file);
 *               its global rank is RANK from the launcher environment, else
 *               its rank in the largest communicator it initialized
 *   communicator  identified across processes by the uid_hash of its
 *               ncclCommInitRank(Config) (the same on every rank); within a
 *               process a comm pointer maps to it
 *   instance    (communicator, seq): seq is the index of the collective call
 *               on that communicator in that process, from 0: the recorder's
 *               own number less one (FR_EV_NCCL.seq, counted in the kernel at
 *               entry, so lost events do not shift it) where the
 *               communicator's init was recorded, else the index in time
 *               order of the calls recorded
 *   hang        a collective that some ranks entered and never left, and
 *               the ranks that never entered it (nccl_hang.c)
 *   step        from FR_EV_STEP (a --step-marker uprobe) when every rank has
 *               them, else from the period K of the repeating (op, count,
 *               communicator) sequence: every K-th collective
 *
 * finish() also aligns the clocks of the files: the exits of one instance
 * are simultaneous across ranks (align_refine), and every call carries its
 * times on the common timeline.  Not for straggler verdicts
 * (model_stragglers.c) nor for output. */
#ifndef FLIGHTREC_MODEL_NCCL_H
#define FLIGHTREC_MODEL_NCCL_H

#include <stddef.h>
#include <stdint.h>
#include "model.h"

extern const struct model_ops model_nccl_ops;

#define NCCL_NONE UINT32_MAX

/* One blocking NCCL call of a rank: a collective, or send/recv.  Its
 * times on the common timeline are nccl_call_entry_common() and
 * nccl_call_exit_common(), not fields: at 16,384 ranks the calls are most
 * of the analyzer's memory, and the offset is the rank's. */
struct nccl_call {
	uint64_t entry_ns;        /* CLOCK_MONOTONIC of the rank's node */
	uint64_t exit_ns;
	uint64_t count;           /* elements */
	uint64_t comm_ptr;        /* ncclComm_t in this process */
	uint64_t seq;             /* collectives: index on its communicator here */
	uint64_t stream;          /* cudaStream_t it was enqueued on */
	uint32_t bpf_seq;         /* FR_EV_NCCL.seq as recorded; 0 none */
	int32_t result;           /* ncclResult_t; a recorded value outside 32 bits
				   * is INT32_MIN (a failure either way) */
	uint32_t comm_index;      /* into comms; NCCL_NONE: init not seen */
	uint32_t instance;        /* into instances; NCCL_NONE: not matched */
	uint32_t stack_id;
	uint32_t tid;
	int32_t step;             /* this rank's step index; -1 outside steps */
	uint16_t func;            /* enum fr_nccl_func */
	uint16_t datatype;
};

/* A communicator a rank created (init or split), as the process names it. */
struct nccl_rank_comm {
	uint64_t ptr;             /* ncclComm_t in the process */
	uint32_t comm_index;      /* into comms */
	int32_t comm_rank;        /* its rank in it (init); -1 unknown (split) */
};

struct nccl_rank {
	uint32_t file_index;
	uint32_t pid;
	int32_t rank;             /* global rank; -1 unknown */
	int rank_from_env;        /* RANK came from the launcher environment */
	int32_t local_rank;       /* -1 unknown */
	int32_t world_size;       /* -1 unknown */
	const char *host;         /* the file header's host */
	int64_t offset_ns;        /* its file's clock to the common timeline */
	struct nccl_call *calls;  /* entry order */
	size_t n_calls;
	struct nccl_rank_comm *joined; /* communicators it created, in order */
	size_t n_joined;
	/* step i spans [step_begin_ns[i], step_end_ns[i]) on the node's clock */
	uint64_t *step_begin_ns;
	uint64_t *step_end_ns;
	size_t n_steps;
};

struct nccl_comm {
	uint64_t uid_hash;        /* derived from the parent for split communicators;
				   * 0: inferred (see inferred_ranks) */
	int32_t nranks;           /* -1 unknown */
	uint64_t instances;
};

struct nccl_member {
	uint32_t rank_index;      /* into ranks */
	uint32_t call_index;      /* into that rank's calls */
};

struct nccl_instance {
	uint32_t comm_index;
	uint16_t func;
	int consistent;           /* every member: same function and count */
	uint64_t seq;
	uint64_t count;
	size_t first_member;      /* into members */
	uint32_t n_members;
	int64_t first_entry_common_ns; /* instances are sorted by this */
};

/* How a waiting rank of a hang waits (see nccl_hang.c). */
enum nccl_hang_how {
	NCCL_HANG_IN_CALL,        /* inside the collective (or its group's end) */
	NCCL_HANG_SYNC,           /* enqueued it; inside a synchronize on its stream */
	NCCL_HANG_POLL,           /* enqueued it; polls an event after it, never complete */
};

struct nccl_hang_rank {
	uint32_t rank_index;      /* into ranks */
	enum nccl_hang_how how;
	int64_t entry_common_ns;  /* its entry into the collective */
	double waiting_s;         /* from then to when its recorder last looked */
};

/* A collective (communicator, seq) that some ranks entered and never left,
 * with the ranks of that communicator that never entered it. */
struct nccl_hang {
	int found;
	uint32_t comm_index;
	uint16_t func;            /* enum fr_nccl_func */
	uint64_t seq;             /* the instance's seq (from 0; shown from 1) */
	uint64_t count;
	struct nccl_hang_rank *waiting; /* by rank */
	size_t n_waiting;
	int32_t *missing;         /* global ranks that never entered it, ascending */
	size_t n_missing;
	uint32_t without_trace;   /* more ranks of the communicator that no trace
				   * shows and missing cannot name */
	int32_t nranks;           /* of the communicator; -1 unknown */
	double waiting_s;         /* the longest wait */
	double threshold_s;       /* what a wait had to exceed */
	char why_none[256];       /* !found but something waited: why it is no hang */
};

enum nccl_step_source {
	NCCL_STEPS_MARKER,        /* FR_EV_STEP events */
	NCCL_STEPS_PERIOD,        /* every K-th collective */
	NCCL_STEPS_EACH,          /* no period found: one step per collective */
};

struct nccl_result {
	struct nccl_rank *ranks;  /* sorted by rank, then file and pid */
	size_t n_ranks;
	struct nccl_comm *comms;
	size_t n_comms;
	struct nccl_instance *instances;
	size_t n_instances;
	struct nccl_member *members; /* grouped by instance, by rank_index within */
	size_t n_members;
	enum nccl_step_source step_source;
	uint32_t period;          /* collectives per step (PERIOD); 1 for EACH */
	double period_match;      /* share of the sequence the period explains */
	uint64_t events;          /* nccl events seen */
	uint64_t step_events;     /* FR_EV_STEP events seen */
	uint64_t unknown_comm_calls; /* collectives on a comm whose init was not seen
				      * and that could not be inferred */
	/* Ranks whose only communicator's init was not recorded (attach
	 * latency, --pid): their comms form one inferred communicator, each
	 * rank's call i matched to the reference rank's call i - lag, the lag
	 * chosen so the exit times differ by the most constant amount (exits
	 * of one instance are simultaneous; a wrong lag adds step jitter). */
	uint32_t inferred_ranks;
	uint64_t failed_calls;    /* result != ncclSuccess */
	struct nccl_hang hang;
};

const struct nccl_result *model_nccl_result(const void *state);

/* Ignore FR_EV_STEP events: steps come from the collective period. */
void model_nccl_ignore_step_markers(void *state);

/* 1 when func is a collective (all-reduce, all-gather, reduce-scatter,
 * broadcast, reduce). */
int nccl_is_collective(uint16_t func);
const char *nccl_func_name(uint16_t func);
/* The operation's name without "nccl" ("AllReduce"), as NCCL's logs and
 * CLI.md's hang say it. */
const char *nccl_op_name(uint16_t func);

/* A call's entry and exit on the common timeline (saturating: a hostile
 * trace can carry any timestamp and offset). */
int64_t nccl_call_entry_common(const struct nccl_rank *rk, const struct nccl_call *c);
int64_t nccl_call_exit_common(const struct nccl_rank *rk, const struct nccl_call *c);

/* The time one member was ready for its instance, on the common timeline:
 * its entry into the call.  Hook: with RDMA data, the rank's first post for
 * the instance is a better ready time. */
int64_t nccl_member_ready_ns(const struct nccl_result *r, const struct nccl_member *m);

/* 1 when every rank of the instance's communicator is in it (its nranks
 * unknown: two or more members) and they agree on function and count: its
 * latest ready time is then the one every member waited for (the
 * stragglers verdict and the findings' split of a collective's time read
 * only these). */
int nccl_instance_complete(const struct nccl_result *r, const struct nccl_instance *in);

#endif
