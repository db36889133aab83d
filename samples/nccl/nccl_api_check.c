/* Checks the stand-in libnccl's entry points that nccl_train does not use:
 * the other collectives, Send/Recv in a group, ncclCommSplit,
 * ncclCommInitAll, the pnccl aliases, argument checks, and the failure
 * paths (a rank that exits, a rank that never arrives, mismatched calls).
 * Ranks are forked children of this process, which calls ncclGetUniqueId
 * first (rank 0 inherits its listening socket).
 *
 * Not a test of NCCL semantics beyond what the stand-in promises: no data
 * moves, only arrival order, results and timing.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_DEFAULT, clock_gettime, setenv */
#endif
#include "nccl.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failures;

#define CHECK(cond)                                                                    \
	do {                                                                           \
		if (!(cond)) {                                                         \
			fprintf(stderr, "%s:%d: pid %d: check failed: %s\n", __FILE__,     \
				__LINE__, (int)getpid(), #cond);                           \
			failures++;                                                    \
		}                                                                      \
	} while (0)

#define CHECK_RES(call, want)                                                          \
	do {                                                                           \
		ncclResult_t r_ = (call);                                              \
		if (r_ != (want)) {                                                    \
			fprintf(stderr, "%s:%d: pid %d: %s = %d (%s), want %d\n", __FILE__, \
				__LINE__, (int)getpid(), #call, (int)r_,                   \
				ncclGetErrorString(r_), (int)(want));                      \
			failures++;                                                    \
		}                                                                      \
	} while (0)

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define FAKE(n) ((void *)(uintptr_t)(0x7f0000000000ull + (uintptr_t)(n) * 0x100000))

/* Runs body(rank, nranks, id) in nranks forked children; returns the number
 * of children that failed. */
static int run_ranks(int nranks, void (*body)(int, int, ncclUniqueId))
{
	ncclUniqueId id;
	CHECK_RES(ncclGetUniqueId(&id), ncclSuccess);
	fflush(NULL);
	pid_t pids[16];
	for (int r = 0; r < nranks; r++) {
		pids[r] = fork();
		if (pids[r] == 0) {
			body(r, nranks, id);
			fflush(NULL);
			_exit(failures ? 1 : 0);
		}
	}
	int bad = 0;
	for (int r = 0; r < nranks; r++) {
		int status;
		waitpid(pids[r], &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "rank %d failed (status 0x%x)\n", r, status);
			bad++;
		}
	}
	return bad;
}

static void collectives_and_split(int rank, int nranks, ncclUniqueId id)
{
	ncclComm_t comm = NULL;
	CHECK_RES(ncclCommInitRank(&comm, nranks, id, rank), ncclSuccess);
	int n = -1, me = -1;
	CHECK_RES(ncclCommCount(comm, &n), ncclSuccess);
	CHECK_RES(ncclCommUserRank(comm, &me), ncclSuccess);
	CHECK(n == nranks && me == rank);

	CHECK_RES(ncclAllReduce(FAKE(1), FAKE(2), 1000, ncclFloat32, ncclSum, comm, NULL), ncclSuccess);
	CHECK_RES(ncclBroadcast(FAKE(1), FAKE(2), 1000, ncclBfloat16, 1, comm, NULL), ncclSuccess);
	CHECK_RES(ncclReduce(FAKE(1), FAKE(2), 1000, ncclInt64, ncclMax, 2, comm, NULL), ncclSuccess);
	CHECK_RES(ncclAllGather(FAKE(1), FAKE(2), 10, ncclInt8, comm, NULL), ncclSuccess);
	CHECK_RES(ncclReduceScatter(FAKE(1), FAKE(2), 10, ncclFloat64, ncclAvg, comm, NULL),
		  ncclSuccess);

	/* a ring exchange: deadlocks unless the group defers the waits */
	CHECK_RES(ncclGroupStart(), ncclSuccess);
	CHECK_RES(ncclSend(FAKE(1), 64, ncclFloat32, (rank + 1) % nranks, comm, NULL), ncclSuccess);
	CHECK_RES(ncclRecv(FAKE(2), 64, ncclFloat32, (rank + nranks - 1) % nranks, comm, NULL),
		  ncclSuccess);
	CHECK_RES(ncclAllReduce(FAKE(1), FAKE(2), 8, ncclFloat32, ncclSum, comm, NULL), ncclSuccess);
	CHECK_RES(ncclGroupEnd(), ncclSuccess);

	/* plain send/recv to a neighbour, outside a group */
	if (rank % 2 == 0)
		CHECK_RES(ncclSend(FAKE(1), 5, ncclInt32, rank + 1, comm, NULL), ncclSuccess);
	else
		CHECK_RES(ncclRecv(FAKE(1), 5, ncclInt32, rank - 1, comm, NULL), ncclSuccess);

	/* split: even and odd ranks, reversed order by key; the last rank opts out */
	ncclComm_t sub = FAKE(9);
	int color = rank == nranks - 1 ? NCCL_SPLIT_NOCOLOR : rank % 2;
	CHECK_RES(ncclCommSplit(comm, color, -rank, &sub, NULL), ncclSuccess);
	if (color == NCCL_SPLIT_NOCOLOR) {
		CHECK(sub == NULL);
	} else {
		int members = 0;
		for (int r = 0; r < nranks - 1; r++)
			members += r % 2 == color;
		int above = 0; /* members with a higher parent rank come first */
		for (int r = rank + 1; r < nranks - 1; r++)
			above += r % 2 == color;
		CHECK(sub != NULL);
		CHECK_RES(ncclCommCount(sub, &n), ncclSuccess);
		CHECK_RES(ncclCommUserRank(sub, &me), ncclSuccess);
		CHECK(n == members && me == above);
		CHECK_RES(ncclAllReduce(FAKE(1), FAKE(2), 4, ncclFloat16, ncclSum, sub, NULL),
			  ncclSuccess);
		CHECK_RES(ncclCommDestroy(sub), ncclSuccess);
	}
	CHECK_RES(ncclAllReduce(FAKE(1), FAKE(2), 4, ncclUint8, ncclMin, comm, NULL), ncclSuccess);
	CHECK_RES(ncclCommDestroy(comm), ncclSuccess);
}

static void mismatch(int rank, int nranks, ncclUniqueId id)
{
	ncclComm_t comm;
	CHECK_RES(ncclCommInitRank(&comm, nranks, id, rank), ncclSuccess);
	CHECK_RES(ncclAllReduce(FAKE(1), FAKE(2), rank == 0 ? 10 : 20, ncclFloat32, ncclSum, comm,
				NULL), ncclInvalidUsage);
	/* the communicator is broken from then on */
	CHECK_RES(ncclAllReduce(FAKE(1), FAKE(2), 10, ncclFloat32, ncclSum, comm, NULL),
		  ncclInvalidUsage);
	ncclCommAbort(comm);
}

/* rank 1 stays alive but never calls the collective: rank 0 times out */
static void straggler_never_arrives(int rank, int nranks, ncclUniqueId id)
{
	ncclComm_t comm;
	CHECK_RES(ncclCommInitRank(&comm, nranks, id, rank), ncclSuccess);
	if (rank == 1) {
		sleep(2);
	} else {
		double t0 = now_s();
		CHECK_RES(ncclAllReduce(FAKE(1), FAKE(2), 10, ncclFloat32, ncclSum, comm, NULL),
			  ncclSystemError);
		double waited = now_s() - t0;
		CHECK(waited > 0.9 && waited < 2.5);
	}
	ncclCommAbort(comm);
}

/* rank 1 exits: the others see ncclRemoteError at once */
static void rank_exits(int rank, int nranks, ncclUniqueId id)
{
	ncclComm_t comm;
	CHECK_RES(ncclCommInitRank(&comm, nranks, id, rank), ncclSuccess);
	if (rank == 1)
		_exit(0);
	double t0 = now_s();
	CHECK_RES(ncclAllReduce(FAKE(1), FAKE(2), 10, ncclFloat32, ncclSum, comm, NULL),
		  ncclRemoteError);
	CHECK(now_s() - t0 < 0.5);
	ncclCommAbort(comm);
}

/* rank 2 of 3 never starts: init times out */
static void init_timeout(int rank, int nranks, ncclUniqueId id)
{
	(void)nranks;
	if (rank == 2)
		return;
	ncclComm_t comm = FAKE(3);
	ncclResult_t r = ncclCommInitRank(&comm, 3, id, rank);
	/* rank 0 times out; rank 1 learns it from rank 0's reply */
	CHECK(r == ncclSystemError);
	CHECK(comm == NULL);
}

int main(void)
{
	int v = 0;
	CHECK_RES(ncclGetVersion(&v), ncclSuccess);
	CHECK(v == NCCL_VERSION_CODE);
	CHECK(!strcmp(ncclGetErrorString(ncclSuccess), "no error"));
	static const char *const names[] = {
		"GetVersion", "GetUniqueId", "GetErrorString", "CommInitRank", "CommInitRankConfig",
		"CommInitAll", "CommSplit", "CommDestroy", "CommAbort", "CommCount", "CommUserRank",
		"AllReduce", "ReduceScatter", "AllGather", "Broadcast", "Reduce", "Send", "Recv",
		"GroupStart", "GroupEnd", "CommGetAsyncError",
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		char a[64], b[64];
		snprintf(a, sizeof a, "nccl%s", names[i]);
		snprintf(b, sizeof b, "pnccl%s", names[i]);
		void *pa = dlsym(RTLD_DEFAULT, a), *pb = dlsym(RTLD_DEFAULT, b);
		if (!pa || pa != pb) {
			fprintf(stderr, "%s at %p, %s at %p\n", a, pa, b, pb);
			failures++;
		}
	}

	/* argument checks need no peers */
	ncclComm_t comms[3] = { 0 };
	CHECK_RES(ncclAllReduce(FAKE(1), FAKE(2), 1, ncclFloat32, ncclSum, NULL, NULL),
		  ncclInvalidArgument);
	CHECK_RES(ncclGroupEnd(), ncclInvalidUsage);

	/* one process, three communicators, one group */
	CHECK_RES(ncclCommInitAll(comms, 3, NULL), ncclSuccess);
	CHECK_RES(ncclGroupStart(), ncclSuccess);
	for (int i = 0; i < 3; i++)
		CHECK_RES(ncclAllReduce(FAKE(i), FAKE(i), 100, ncclFloat32, ncclSum, comms[i], NULL),
			  ncclSuccess);
	CHECK_RES(ncclGroupEnd(), ncclSuccess);
	CHECK_RES(ncclAllReduce(FAKE(1), FAKE(2), 1, ncclNumTypes, ncclSum, comms[0], NULL),
		  ncclInvalidArgument);
	CHECK_RES(ncclBroadcast(FAKE(1), FAKE(2), 1, ncclInt8, 3, comms[0], NULL),
		  ncclInvalidArgument);
	for (int i = 0; i < 3; i++) {
		int r = -1;
		CHECK_RES(ncclCommUserRank(comms[i], &r), ncclSuccess);
		CHECK(r == i);
		CHECK_RES(ncclCommDestroy(comms[i]), ncclSuccess);
	}

	CHECK(run_ranks(4, collectives_and_split) == 0);
	CHECK(run_ranks(3, mismatch) == 0);
	setenv("FLIGHTREC_FAKE_NCCL_TIMEOUT_S", "1", 1);
	CHECK(run_ranks(2, straggler_never_arrives) == 0);
	CHECK(run_ranks(3, rank_exits) == 0);
	CHECK(run_ranks(3, init_timeout) == 0);

	if (failures) {
		fprintf(stderr, "nccl_api_check: %d failures\n", failures);
		return 1;
	}
	printf("nccl_api_check: all checks passed\n");
	return 0;
}
