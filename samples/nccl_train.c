/* nccl_train: one worker of a data-parallel training job, for recording
 * without GPUs.  Started by launch_ranks (or anything torchrun-like) with
 * RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT in the environment; links
 * against libnccl.so.2, normally flightrec's stand-in (samples/nccl/).
 *
 * Every step: train_step_begin(step) (a --step-marker target), then
 * compute_step (CPU work standing in for forward/backward), then one
 * ncclAllReduce of the gradients.  --slow-rank R --slow-factor F makes rank
 * R a straggler: each step it also spends (F-1) * compute-ms in
 * slow_data_loader (CPU work plus read() calls on a temporary file), and the
 * other ranks wait that long inside ncclAllReduce.
 *
 * --wait stream|query waits for each all-reduce the way a job on the
 * asynchronous NCCL does (FLIGHTREC_FAKE_NCCL_ASYNC=1: the call returns
 * once enqueued, the stream completes it): cudaStreamSynchronize on the
 * collective's stream, or a cudaEventRecord after it and cudaEventQuery
 * polled every millisecond until the event is complete (a watchdog's way);
 * the stream is a real one of the CUDA stand-in (linked: samples/cudart/).
 * --wait none (the default) makes no CUDA call.
 *
 * --hang-rank R --hang-at K: rank R never enters collective K (1 = the
 * first all-reduce): it says so on stderr and sleeps until the others have
 * given up (FLIGHTREC_FAKE_NCCL_TIMEOUT_S, plus 5 s), then exits 3.  The
 * others block inside collective K (blocking NCCL) or in their wait for it
 * (asynchronous), each saying on stderr "rank N: waiting in collective K"
 * just before it blocks, until the stand-in's timeout fails it: they exit
 * 1.  For testing hang detection; nothing waits forever.
 *
 * Not a training program: there is no model, and the buffers handed to NCCL
 * are fake device pointers that nobody dereferences.  The rendezvous is a
 * tiny TCP store on MASTER_PORT (rank 0 serves the ncclUniqueId, others
 * fetch it), like torch.distributed's, and only on 127.0.0.1.
 *
 * Built with frame pointers everywhere (see samples/CMakeLists.txt); the
 * CPU-burning functions are noinline and call another noinline function so
 * GCC 12 keeps their frames, and stacks show compute_step / slow_data_loader.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4, strsignal */
#endif
#ifdef CUDART_STANDIN_REAL_HEADER
#include <cuda_runtime_api.h>
#else
#include "cuda_runtime_api_min.h"
#endif
#include "nccl.h" /* after the CUDA header: its cudaStream_t */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#if defined(__clang__)
#define KEEP __attribute__((noinline, used))
#else
#define KEEP __attribute__((noinline, noipa, used)) /* no clones, no IPA: one symbol per name */
#endif

#define STORE_MAGIC 0x54535246u /* "FRST" */

enum wait_mode { WAIT_NONE, WAIT_STREAM, WAIT_QUERY };

struct options {
	int steps;
	double compute_ms;
	size_t count;
	int slow_rank;
	double slow_factor;
	int slow_from_step;
	enum wait_mode wait;
	int hang_rank;   /* -1: none */
	int hang_at;     /* collective number, from 1 */
};

static volatile uint64_t sink;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- the work a step does ------------------------------------------------------ */

KEEP void tile_done(uint64_t x)
{
	__asm__ volatile("" : : "r"(x) : "memory");
}

/* A slice of "matrix" work, about 0.1 ms. */
KEEP uint64_t matmul_tile(uint64_t x)
{
	for (int i = 0; i < 20000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	tile_done(x);
	return x;
}

/* Forward and backward pass: CPU work until compute_ms of wall time passed
 * (wall time, so the step length holds when ranks share cores). */
KEEP void compute_step(double compute_ms)
{
	uint64_t x = sink | 1;
	double end = now_ms() + compute_ms;
	while (now_ms() < end)
		x = matmul_tile(x);
	sink = x;
}

KEEP uint64_t decode_batch(uint64_t x, const unsigned char *buf, size_t len)
{
	for (size_t i = 0; i < len; i += 64)
		x = (x ^ buf[i]) * 0x100000001b3ull;
	return matmul_tile(x);
}

KEEP ssize_t read_batch_file(int fd, unsigned char *buf, size_t len)
{
	ssize_t n = read(fd, buf, len);
	if (n == 0) { /* end of file: start over */
		if (lseek(fd, 0, SEEK_SET) < 0)
			return -1;
		n = read(fd, buf, len);
	}
	return n;
}

/* The straggler's extra time: a data loader that reads and decodes. */
KEEP void slow_data_loader(double extra_ms, int data_fd)
{
	static unsigned char buf[16384];
	uint64_t x = sink | 1;
	double end = now_ms() + extra_ms;
	while (now_ms() < end) {
		ssize_t n = read_batch_file(data_fd, buf, sizeof buf);
		x = decode_batch(x, buf, n > 0 ? (size_t)n : 0);
	}
	sink = x;
}

/* A step begins: a uprobe target for flightrec's --step-marker. */
KEEP void train_step_begin(int step)
{
	__asm__ volatile("" : : "r"(step) : "memory");
}

/* An unlinked temporary file of 1 MiB for slow_data_loader to read. */
static int open_data_file(void)
{
	const char *dir = getenv("TMPDIR");
	char path[4096];
	snprintf(path, sizeof path, "%s/nccl_train_data.XXXXXX", dir && *dir ? dir : "/tmp");
	int fd = mkstemp(path);
	if (fd < 0)
		return -1;
	unlink(path);
	unsigned char chunk[65536];
	for (size_t i = 0; i < sizeof chunk; i++)
		chunk[i] = (unsigned char)(i * 131u);
	for (int i = 0; i < 16; i++)
		if (write(fd, chunk, sizeof chunk) != (ssize_t)sizeof chunk) {
			close(fd);
			return -1;
		}
	lseek(fd, 0, SEEK_SET);
	return fd;
}

/* ---- the store: rank 0 hands the ncclUniqueId to everyone --------------------- */

struct store_hello {
	uint32_t magic;
	int32_t rank;
	int32_t world_size;
	int32_t _pad;
};

static int io_wait(int fd, short events, double deadline_ms)
{
	double left = deadline_ms - now_ms();
	if (left <= 0)
		return -1;
	struct pollfd p = { .fd = fd, .events = events };
	int n = poll(&p, 1, (int)left + 1);
	return n > 0 ? 0 : -1;
}

static int read_all(int fd, void *buf, size_t len, double deadline_ms)
{
	char *p = buf;
	while (len) {
		if (io_wait(fd, POLLIN, deadline_ms) < 0)
			return -1;
		ssize_t n = recv(fd, p, len, 0);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static struct sockaddr_in store_addr(uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sa;
}

/* Rank 0: publish id to world_size - 1 ranks.  Returns 0 or -1 (message printed). */
static int store_serve(uint16_t port, int world_size, const ncclUniqueId *id, double deadline_ms)
{
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in sa = store_addr(port);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(lfd, 128) < 0) {
		fprintf(stderr, "nccl_train: rank 0: cannot listen on 127.0.0.1:%u (MASTER_PORT): %s\n",
			port, strerror(errno));
		return -1;
	}
	int served = 0;
	while (served < world_size - 1) {
		if (io_wait(lfd, POLLIN, deadline_ms) < 0) {
			fprintf(stderr, "nccl_train: rank 0: only %d of %d ranks fetched the NCCL id "
				"from 127.0.0.1:%u before the timeout\n", served + 1, world_size, port);
			close(lfd);
			return -1;
		}
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		struct store_hello h;
		if (read_all(fd, &h, sizeof h, deadline_ms) == 0 && h.magic == STORE_MAGIC) {
			if (h.world_size != world_size) {
				fprintf(stderr, "nccl_train: rank 0: rank %d says WORLD_SIZE=%d, "
					"this rank has %d\n", h.rank, h.world_size, world_size);
				close(fd);
				close(lfd);
				return -1;
			}
			if (write_all(fd, id, sizeof *id) == 0)
				served++;
		}
		close(fd);
	}
	close(lfd);
	return 0;
}

/* Other ranks: fetch the id, waiting for rank 0 to come up. */
static int store_fetch(uint16_t port, int rank, int world_size, ncclUniqueId *id,
		       double deadline_ms)
{
	for (;;) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_in sa = store_addr(port);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
			struct store_hello h = { STORE_MAGIC, rank, world_size, 0 };
			int ok = write_all(fd, &h, sizeof h) == 0 &&
				 read_all(fd, id, sizeof *id, deadline_ms) == 0;
			close(fd);
			if (ok)
				return 0;
		} else if (fd >= 0) {
			close(fd);
		}
		if (now_ms() >= deadline_ms) {
			fprintf(stderr, "nccl_train: rank %d: no NCCL id from rank 0 at 127.0.0.1:%u "
				"(MASTER_PORT) before the timeout\n", rank, port);
			return -1;
		}
		struct timespec ts = { 0, 20 * 1000000L };
		nanosleep(&ts, NULL);
	}
}

/* ---- waiting for a collective, and the hang ------------------------------------- */

/* The stream collectives go to: a real one of the CUDA stand-in when the
 * program waits on it or the NCCL stand-in runs asynchronously (it
 * enqueues there), else a fake handle nobody dereferences. */
static int open_stream(const struct options *o, int local_rank, cudaStream_t *stream,
		       cudaEvent_t *done)
{
	const char *a = getenv("FLIGHTREC_FAKE_NCCL_ASYNC");
	int async = a && *a && strcmp(a, "0") != 0;
	*done = NULL;
	if (o->wait == WAIT_NONE && !async) {
		*stream = (cudaStream_t)(uintptr_t)(0x1000 + local_rank);
		return 0;
	}
	cudaError_t e = cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking);
	if (e == cudaSuccess && o->wait == WAIT_QUERY)
		e = cudaEventCreateWithFlags(done, cudaEventDisableTiming);
	if (e != cudaSuccess) {
		fprintf(stderr, "nccl_train: cannot create a CUDA stream or event: %s\n",
			cudaGetErrorString(e));
		return -1;
	}
	return 0;
}

/* Waits for the collective just enqueued on stream; then whether it
 * failed (an asynchronous NCCL reports that afterwards). */
static ncclResult_t wait_collective(const struct options *o, ncclComm_t comm,
				    cudaStream_t stream, cudaEvent_t done, double timeout_s)
{
	cudaError_t e = cudaSuccess;
	if (o->wait == WAIT_STREAM) {
		e = cudaStreamSynchronize(stream);
	} else if (o->wait == WAIT_QUERY) {
		e = cudaEventRecord(done, stream);
		/* a watchdog's poll; the stand-in completes the stream at the
		 * latest when its own timeout fails the collective */
		double give_up = now_ms() + (timeout_s + 30) * 1e3;
		if (e == cudaSuccess) {
			while ((e = cudaEventQuery(done)) == cudaErrorNotReady && now_ms() < give_up) {
				struct timespec ts = { 0, 1000000L };
				nanosleep(&ts, NULL);
			}
		}
	}
	if (e != cudaSuccess) {
		fprintf(stderr, "nccl_train: waiting for the all-reduce: %s\n", cudaGetErrorString(e));
		return ncclUnhandledCudaError;
	}
	ncclResult_t async_err = ncclSuccess;
	ncclResult_t r = ncclCommGetAsyncError(comm, &async_err);
	return r != ncclSuccess ? r : async_err;
}

/* --hang-rank's rank at --hang-at: never enters the collective; sleeps past
 * the others' timeout so that they fail first, then exits. */
static void hang(int rank, int at, double timeout_s)
{
	fprintf(stderr, "nccl_train: rank %d: hanging before collective %d\n", rank, at);
	fflush(stderr);
	double end = now_ms() + (timeout_s + 5) * 1e3;
	while (now_ms() < end) {
		struct timespec ts = { 0, 100 * 1000000L };
		nanosleep(&ts, NULL);
	}
	exit(3);
}

/* ---- main ---------------------------------------------------------------------- */

static int env_int(const char *name, int fallback, int *out)
{
	const char *s = getenv(name);
	if (!s || !*s) {
		*out = fallback;
		return fallback == -1 ? -1 : 0;
	}
	char *end;
	long v = strtol(s, &end, 10);
	if (*end || v < 0 || v > 1000000) {
		fprintf(stderr, "nccl_train: %s=%s is not a number\n", name, s);
		return -1;
	}
	*out = (int)v;
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: nccl_train [--steps N] [--compute-ms C] [--count ELEMENTS]\n"
		"                  [--slow-rank R --slow-factor F [--slow-from-step S]]\n"
		"                  [--wait none|stream|query] [--hang-rank R --hang-at K]\n"
		"environment: RANK, WORLD_SIZE, MASTER_ADDR (127.0.0.1), MASTER_PORT\n"
		"             (set by launch_ranks or torchrun)\n");
}

static int parse_args(int argc, char **argv, struct options *o)
{
	*o = (struct options){ .steps = 30, .compute_ms = 40, .count = 1u << 20,
			       .slow_rank = -1, .slow_factor = 1.0, .hang_rank = -1 };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (i + 1 >= argc) {
			usage();
			return -1;
		}
		const char *v = argv[++i];
		char *end = (char *)v + strlen(v);
		if (!strcmp(a, "--wait")) {
			if (!strcmp(v, "none"))
				o->wait = WAIT_NONE;
			else if (!strcmp(v, "stream"))
				o->wait = WAIT_STREAM;
			else if (!strcmp(v, "query"))
				o->wait = WAIT_QUERY;
			else {
				fprintf(stderr, "nccl_train: --wait %s: want none, stream or query\n", v);
				return -1;
			}
		} else if (!strcmp(a, "--hang-rank"))
			o->hang_rank = (int)strtol(v, &end, 10);
		else if (!strcmp(a, "--hang-at"))
			o->hang_at = (int)strtol(v, &end, 10);
		else if (!strcmp(a, "--steps"))
			o->steps = (int)strtol(v, &end, 10);
		else if (!strcmp(a, "--compute-ms"))
			o->compute_ms = strtod(v, &end);
		else if (!strcmp(a, "--count"))
			o->count = (size_t)strtoull(v, &end, 10);
		else if (!strcmp(a, "--slow-rank"))
			o->slow_rank = (int)strtol(v, &end, 10);
		else if (!strcmp(a, "--slow-factor"))
			o->slow_factor = strtod(v, &end);
		else if (!strcmp(a, "--slow-from-step"))
			o->slow_from_step = (int)strtol(v, &end, 10);
		else {
			usage();
			return -1;
		}
		if (*end || end == v) {
			fprintf(stderr, "nccl_train: %s %s: not a number\n", a, v);
			return -1;
		}
	}
	if (o->steps < 1 || o->compute_ms < 0 || o->slow_factor < 1.0) {
		fprintf(stderr, "nccl_train: need --steps >= 1, --compute-ms >= 0, --slow-factor >= 1\n");
		return -1;
	}
	if (o->hang_rank >= 0 && (o->hang_at < 1 || o->hang_at > o->steps)) {
		fprintf(stderr, "nccl_train: --hang-rank needs --hang-at K in 1..--steps\n");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct options opt;
	if (parse_args(argc, argv, &opt) < 0)
		return 2;

	int rank, world_size, master_port, local_rank;
	if (env_int("RANK", -1, &rank) < 0 || env_int("WORLD_SIZE", -1, &world_size) < 0 ||
	    env_int("MASTER_PORT", -1, &master_port) < 0 ||
	    env_int("LOCAL_RANK", rank, &local_rank) < 0) {
		fprintf(stderr, "nccl_train: RANK, WORLD_SIZE and MASTER_PORT must be set "
			"(run it under launch_ranks)\n");
		return 2;
	}
	const char *master_addr = getenv("MASTER_ADDR");
	if (master_addr && strcmp(master_addr, "127.0.0.1") && strcmp(master_addr, "localhost")) {
		fprintf(stderr, "nccl_train: MASTER_ADDR=%s: this sample only talks to 127.0.0.1\n",
			master_addr);
		return 2;
	}
	if (world_size < 1 || rank >= world_size || master_port < 1 || master_port > 65535) {
		fprintf(stderr, "nccl_train: RANK=%d WORLD_SIZE=%d MASTER_PORT=%d do not fit\n", rank,
			world_size, master_port);
		return 2;
	}
	const char *t = getenv("FLIGHTREC_FAKE_NCCL_TIMEOUT_S");
	double timeout_s = t && atof(t) > 0 ? atof(t) : 60.0;

	int slow = rank == opt.slow_rank && opt.slow_factor > 1.0;
	int data_fd = -1;
	if (slow && (data_fd = open_data_file()) < 0) {
		fprintf(stderr, "nccl_train: rank %d: cannot make a temporary data file: %s\n", rank,
			strerror(errno));
		return 1;
	}

	ncclUniqueId id;
	double deadline = now_ms() + timeout_s * 1e3;
	if (rank == 0) {
		ncclResult_t r = ncclGetUniqueId(&id);
		if (r != ncclSuccess) {
			fprintf(stderr, "nccl_train: rank 0: ncclGetUniqueId: %s\n", ncclGetErrorString(r));
			return 1;
		}
		if (store_serve((uint16_t)master_port, world_size, &id, deadline) < 0)
			return 1;
	} else if (store_fetch((uint16_t)master_port, rank, world_size, &id, deadline) < 0) {
		return 1;
	}

	ncclComm_t comm;
	ncclResult_t r = ncclCommInitRank(&comm, world_size, id, rank);
	if (r != ncclSuccess) {
		fprintf(stderr, "nccl_train: rank %d: ncclCommInitRank: %s\n", rank,
			ncclGetErrorString(r));
		return 1;
	}

	/* fake device memory: distinct per local rank, never dereferenced */
	uintptr_t dev = 0x7f0000000000ull + ((uintptr_t)local_rank << 36);
	const void *grads = (const void *)dev;
	void *reduced = (void *)(dev + (opt.count + 1) * sizeof(float));
	cudaStream_t stream;
	cudaEvent_t done;
	if (open_stream(&opt, local_rank, &stream, &done) < 0)
		return 1;

	double step_ms = 0, wait_ms = 0;
	for (int step = 0; step < opt.steps; step++) {
		train_step_begin(step);
		double t0 = now_ms();
		if (slow && step >= opt.slow_from_step)
			slow_data_loader((opt.slow_factor - 1.0) * opt.compute_ms, data_fd);
		compute_step(opt.compute_ms);
		double t1 = now_ms();
		int hang_step = opt.hang_rank >= 0 && step == opt.hang_at - 1;
		if (hang_step && rank == opt.hang_rank)
			hang(rank, opt.hang_at, timeout_s);
		if (hang_step && opt.wait == WAIT_NONE) {
			fprintf(stderr, "nccl_train: rank %d: waiting in collective %d\n", rank,
				opt.hang_at);
			fflush(stderr);
		}
		r = ncclAllReduce(grads, reduced, opt.count, ncclFloat32, ncclSum, comm, stream);
		if (r == ncclSuccess && opt.wait != WAIT_NONE) {
			if (hang_step) {
				fprintf(stderr, "nccl_train: rank %d: waiting in collective %d\n", rank,
					opt.hang_at);
				fflush(stderr);
			}
			r = wait_collective(&opt, comm, stream, done, timeout_s);
		}
		double t2 = now_ms();
		if (r != ncclSuccess) {
			fprintf(stderr, "nccl_train: rank %d: ncclAllReduce at step %d: %s\n", rank,
				step, ncclGetErrorString(r));
			ncclCommAbort(comm);
			return 1;
		}
		step_ms += t2 - t0;
		wait_ms += t2 - t1;
	}
	ncclCommDestroy(comm);
	if (data_fd >= 0)
		close(data_fd);
	printf("rank %d: steps %d, mean step ms %.2f, mean allreduce wait ms %.2f\n", rank,
	       opt.steps, step_ms / opt.steps, wait_ms / opt.steps);
	fflush(stdout);
	return 0;
}
