/* A stand-in libnccl.so.2 for hosts without GPUs: same exported names, same
 * signatures and enum values as NVIDIA's NCCL (see nccl.h here), so
 * flightrec's nccl probes attach to it exactly as to the real library, and a
 * multi-process training sample produces the call pattern of a real
 * data-parallel job.
 *
 * What it does: every collective is a real barrier between the rank
 * processes over loopback TCP (a star around rank 0 of the communicator), so
 * no rank leaves a collective before the last rank has entered it and a slow
 * rank shows up as waiting time on all the others.  After the barrier each
 * rank sleeps for a simulated transfer time (bytes / FLIGHTREC_FAKE_NCCL_GBPS,
 * default 10 GB/s).  Send/Recv are a rendezvous between the two peers.  Every
 * wait is bounded by FLIGHTREC_FAKE_NCCL_TIMEOUT_S (default 60 s) and returns
 * ncclSystemError when it runs out; a peer that exits gives ncclRemoteError.
 * FLIGHTREC_FAKE_NCCL_FAIL_AT=N (with FLIGHTREC_FAKE_NCCL_FAIL_RANK=R, 0 by
 * default) makes rank R's Nth collective (from 1) return ncclSystemError at
 * once, as a failed transport would: an NCCL error for the recorder's
 * nccl-error trigger, at a known call.
 *
 * Asynchronous mode (FLIGHTREC_FAKE_NCCL_ASYNC=1), like NVIDIA's library:
 * a collective or send/recv (or a group of them, at the outermost
 * ncclGroupEnd) returns ncclSuccess once it is enqueued on its stream, and
 * the barrier runs when the stream reaches it, as a host function of the
 * CUDA runtime (cudaLaunchHostFunc, found at run time: the process must
 * map a libcudart that has it, such as flightrec's stand-in).  The stream
 * is held until the barrier is over, so cudaStreamSynchronize, an event
 * recorded after the collective, cudaEventQuery and cudaEventSynchronize
 * on it see the collective complete only when every rank has entered it.
 * A failure (a rank that never arrives: the timeout) is reported by
 * ncclCommGetAsyncError and by every later call on that communicator, as
 * NVIDIA's asynchronous errors are.  A group's calls run on the stream of
 * its first call; one process's asynchronous work runs one job at a time.
 * Communicator init and split stay blocking.
 *
 * What it is not: an NCCL implementation.  Buffers are fake device pointers
 * and are never read or written; there is no CUDA (but for the streams of
 * the asynchronous mode), no data movement, no algorithm selection, no
 * non-blocking communicators (config->blocking is ignored), and sockets
 * only ever use 127.0.0.1.
 *
 * Errors are printed to stderr (one line, prefixed "fake-nccl:") as well as
 * returned: a stand-in that fails silently in a test helps nobody, and the
 * real library's equivalent would be NCCL_DEBUG=WARN output.
 *
 * Built with frame pointers, without CET, partial inlining, identical code
 * folding or tail calls, so every exported function starts with
 * `push %rbp` and keeps its own code, as probe tests expect (see
 * samples/CMakeLists.txt).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4, strsignal */
#endif
#include "nccl.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* NVIDIA's NCCL_API: the entry point is a weak default-visibility symbol and
 * pnccl<name> a strong alias of it (same address, same code). */
#define NCCL_API(ret, name, args)                                            \
	__attribute__((visibility("default"), alias(#name))) ret p##name args; \
	__attribute__((visibility("default"), weak)) ret name args

#define DEFAULT_TIMEOUT_S 60.0
#define DEFAULT_GBPS 10.0

/* ---- the unique id ------------------------------------------------------- */

/* Layout of ncclUniqueId.internal in this stand-in: where rank 0 of the
 * communicator listens, and a random tag naming the job, so a connection
 * from another job (or a stale one) is told apart.  The rest is random so
 * ids hash apart like NVIDIA's. */
struct fr_uid {
	char magic[8];      /* "FRNCCL1" */
	uint32_t addr_be;   /* IPv4, network order: always 127.0.0.1 */
	uint16_t port;      /* host order */
	uint16_t _pad;
	uint64_t job_tag;
	uint8_t nonce[104];
};
_Static_assert(sizeof(struct fr_uid) == NCCL_UNIQUE_ID_BYTES, "fr_uid");
static const char uid_magic[8] = "FRNCCL1";

/* Listening sockets made by ncclGetUniqueId, kept open in this process until
 * rank 0 of that id initializes. */
struct pending_listener {
	uint64_t job_tag;
	int fd;
	struct pending_listener *next;
};
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pending_listener *pending_head;

/* ---- wire messages --------------------------------------------------------- */

#define WIRE_MAGIC 0x434e4652u /* "FRNC" */
enum wire_kind {
	W_HELLO = 1,     /* member -> root at init: a=rank b=nranks c=peer port */
	W_HELLO_REPLY,   /* root -> member: a=result, then nranks u16 peer ports */
	W_COLL,          /* member -> root: seq, a=func b=count c=datatype d=root */
	W_COLL_REPLY,    /* root -> member: seq, a=result */
	W_SPLIT,         /* member -> root: seq, a=color b=key c=listener port */
	W_SPLIT_REPLY,   /* root -> member: tag=new job, a=result b=new rank c=new nranks d=new root port */
	W_PEER_HELLO,    /* first message on a p2p connection: a=sender rank */
	W_P2P,           /* sender -> receiver: seq, a=count b=datatype */
	W_P2P_ACK,       /* receiver -> sender: seq */
};
struct wire_msg {
	uint32_t magic;
	uint32_t kind;
	uint64_t tag;
	uint64_t seq;
	int64_t a, b, c, d;
};

/* ---- communicators and queued operations ---------------------------------- */

enum func_id { /* the numbering of flightrec's enum fr_nccl_func */
	F_ALL_REDUCE = 1, F_REDUCE_SCATTER, F_ALL_GATHER, F_BROADCAST, F_REDUCE, F_SEND, F_RECV,
};
static const char *const func_names[] = {
	"?", "AllReduce", "ReduceScatter", "AllGather", "Broadcast", "Reduce", "Send", "Recv",
};

#define COMM_MAGIC 0x6d6d6f636c63636eull
struct ncclComm {
	uint64_t magic;
	int rank, nranks;
	uint64_t job_tag;
	uint16_t root_port;
	int rdv_listen_fd;      /* rank 0 until init completes */
	int root_fd;            /* other ranks: their connection to rank 0 */
	int *member_fds;        /* rank 0: [nranks], one connection per other rank */
	int peer_listen_fd;     /* p2p connections from peers arrive here */
	uint16_t peer_port;
	uint16_t *peer_ports;   /* [nranks], known after init */
	int *p2p_out_fds;       /* [nranks] connections this rank opened */
	int *p2p_in_fds;        /* [nranks] connections peers opened */
	uint64_t *p2p_sent;     /* [nranks] sends queued to each peer */
	uint64_t *p2p_received; /* [nranks] recvs queued from each peer */
	uint64_t coll_seq;
	/* ncclInProgress until init completes; then ncclSuccess or the first
	 * error, which every later call returns (the communicator is broken) */
	ncclResult_t status;
	unsigned async_queued;  /* asynchronous jobs on streams not yet run (async_lock) */
};

enum op_kind { OP_INIT, OP_COLL, OP_SEND, OP_RECV };
struct op {
	enum op_kind kind;
	ncclComm_t comm;
	int func;           /* enum func_id */
	uint64_t seq;
	size_t count;
	int datatype;
	int redop;
	int peer;           /* root, or p2p peer, or -1 */
	cudaStream_t stream;
	ncclResult_t result;
};
struct op_list {
	struct op *ops;
	size_t n, cap;
};

/* NCCL's group state is per thread. */
static _Thread_local struct op_list group_ops;
static _Thread_local int group_depth;

/* ---- small helpers --------------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double env_positive(const char *name, double fallback)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return fallback;
	char *end;
	double v = strtod(s, &end);
	if (*end || !(v > 0))
		return fallback;
	return v;
}

static uint64_t timeout_ns(void)
{
	return (uint64_t)(env_positive("FLIGHTREC_FAKE_NCCL_TIMEOUT_S", DEFAULT_TIMEOUT_S) * 1e9);
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static uint64_t random_u64(void)
{
	uint64_t v;
	if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
		v = now_ns() ^ ((uint64_t)getpid() << 32);
	return v ? v : 1;
}

static void report(const struct ncclComm *comm, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void report(const struct ncclComm *comm, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (comm)
		fprintf(stderr, "fake-nccl: pid %d rank %d/%d: %s\n", (int)getpid(), comm->rank,
			comm->nranks, msg);
	else
		fprintf(stderr, "fake-nccl: pid %d: %s\n", (int)getpid(), msg);
}

static size_t type_bytes(int datatype)
{
	switch (datatype) {
	case ncclInt8: case ncclUint8: return 1;
	case ncclFloat16: case ncclBfloat16: return 2;
	case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
	case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
	default: return 0;
	}
}

/* Bytes each rank moves, roughly: what the simulated transfer time is for. */
static uint64_t op_bytes(const struct op *o)
{
	uint64_t b = (uint64_t)o->count * type_bytes(o->datatype);
	if (o->func == F_REDUCE_SCATTER || o->func == F_ALL_GATHER)
		b *= (uint64_t)o->comm->nranks;
	return b;
}

/* ---- sockets, every wait bounded by a deadline ----------------------------- */

enum io_status { IO_OK, IO_TIMEOUT, IO_EOF, IO_ERROR };

static const char *io_what(int st)
{
	return st == IO_TIMEOUT ? "timed out (FLIGHTREC_FAKE_NCCL_TIMEOUT_S)"
	       : st == IO_EOF   ? "peer closed the connection (process exited?)"
				: strerror(errno);
}

static ncclResult_t io_result(int st)
{
	return st == IO_EOF ? ncclRemoteError : ncclSystemError;
}

static int wait_fd(int fd, short events, uint64_t deadline)
{
	for (;;) {
		uint64_t now = now_ns();
		if (now >= deadline)
			return IO_TIMEOUT;
		uint64_t left_ms = (deadline - now + 999999) / 1000000;
		struct pollfd p = { .fd = fd, .events = events };
		int n = poll(&p, 1, left_ms > 60000 ? 60000 : (int)left_ms);
		if (n > 0)
			return IO_OK;
		if (n < 0 && errno != EINTR)
			return IO_ERROR;
	}
}

/* Both try before they wait, so what is already there (an error reply sent
 * just as the deadline passed) still gets through. */
static int read_full(int fd, void *buf, size_t len, uint64_t deadline)
{
	char *p = buf;
	while (len) {
		ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
		if (n == 0)
			return IO_EOF;
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				int st = wait_fd(fd, POLLIN, deadline);
				if (st != IO_OK)
					return st;
				continue;
			}
			if (errno == EINTR)
				continue;
			return errno == ECONNRESET ? IO_EOF : IO_ERROR;
		}
		p += n;
		len -= (size_t)n;
	}
	return IO_OK;
}

static int write_full(int fd, const void *buf, size_t len, uint64_t deadline)
{
	const char *p = buf;
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				int st = wait_fd(fd, POLLOUT, deadline);
				if (st != IO_OK)
					return st;
				continue;
			}
			if (errno == EINTR)
				continue;
			return errno == EPIPE || errno == ECONNRESET ? IO_EOF : IO_ERROR;
		}
		p += n;
		len -= (size_t)n;
	}
	return IO_OK;
}

static int send_msg(int fd, uint32_t kind, uint64_t tag, uint64_t seq, int64_t a, int64_t b,
		    int64_t c, int64_t d, uint64_t deadline)
{
	struct wire_msg m = { WIRE_MAGIC, kind, tag, seq, a, b, c, d };
	return write_full(fd, &m, sizeof m, deadline);
}

/* Reads one message; IO_ERROR with errno EPROTO when it is not ours. */
static int recv_msg(int fd, struct wire_msg *m, uint64_t deadline)
{
	int st = read_full(fd, m, sizeof *m, deadline);
	if (st == IO_OK && m->magic != WIRE_MAGIC) {
		errno = EPROTO;
		return IO_ERROR;
	}
	return st;
}

static void set_nodelay(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static struct sockaddr_in loopback(uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sa;
}

/* Listens on 127.0.0.1:port (0: any free port); returns the fd or -1. */
static int listen_loopback(uint16_t port, uint16_t *port_out)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in sa = loopback(port);
	socklen_t len = sizeof sa;
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, SOMAXCONN) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	*port_out = ntohs(sa.sin_port);
	return fd;
}

/* Connects to 127.0.0.1:port, retrying while nobody listens yet. */
static int connect_loopback(uint16_t port, uint64_t deadline, int *fd_out)
{
	for (;;) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return IO_ERROR;
		struct sockaddr_in sa = loopback(port);
		if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
			set_nodelay(fd);
			*fd_out = fd;
			return IO_OK;
		}
		int e = errno;
		close(fd);
		errno = e;
		if (e != ECONNREFUSED && e != EINTR)
			return IO_ERROR;
		if (now_ns() >= deadline)
			return IO_TIMEOUT;
		sleep_ns(10 * 1000000ull);
	}
}

static int accept_deadline(int lfd, uint64_t deadline, int *fd_out)
{
	for (;;) {
		int st = wait_fd(lfd, POLLIN, deadline);
		if (st != IO_OK)
			return st;
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0) {
			set_nodelay(fd);
			*fd_out = fd;
			return IO_OK;
		}
		if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED)
			return IO_ERROR;
	}
}

/* ---- communicator lifetime -------------------------------------------------- */

static int take_pending_listener(uint64_t job_tag)
{
	int fd = -1;
	pthread_mutex_lock(&pending_lock);
	for (struct pending_listener **pp = &pending_head; *pp; pp = &(*pp)->next) {
		if ((*pp)->job_tag == job_tag) {
			struct pending_listener *p = *pp;
			*pp = p->next;
			fd = p->fd;
			free(p);
			break;
		}
	}
	pthread_mutex_unlock(&pending_lock);
	return fd;
}

static ncclResult_t make_uid(struct fr_uid *uid)
{
	memset(uid, 0, sizeof *uid);
	memcpy(uid->magic, uid_magic, sizeof uid->magic);
	uid->addr_be = htonl(INADDR_LOOPBACK);
	uid->job_tag = random_u64();
	for (size_t i = 0; i < sizeof uid->nonce; i += 8) {
		uint64_t r = random_u64();
		memcpy(uid->nonce + i, &r, sizeof r);
	}
	struct pending_listener *p = malloc(sizeof *p);
	if (!p)
		return ncclSystemError;
	p->job_tag = uid->job_tag;
	p->fd = listen_loopback(0, &uid->port);
	if (p->fd < 0) {
		report(NULL, "ncclGetUniqueId: cannot listen on 127.0.0.1: %s", strerror(errno));
		free(p);
		return ncclSystemError;
	}
	pthread_mutex_lock(&pending_lock);
	p->next = pending_head;
	pending_head = p;
	pthread_mutex_unlock(&pending_lock);
	return ncclSuccess;
}

static void comm_free(ncclComm_t comm)
{
	if (!comm)
		return;
	close_fd(&comm->rdv_listen_fd);
	close_fd(&comm->root_fd);
	close_fd(&comm->peer_listen_fd);
	for (int r = 0; r < comm->nranks; r++) {
		if (comm->member_fds)
			close_fd(&comm->member_fds[r]);
		if (comm->p2p_out_fds)
			close_fd(&comm->p2p_out_fds[r]);
		if (comm->p2p_in_fds)
			close_fd(&comm->p2p_in_fds[r]);
	}
	free(comm->member_fds);
	free(comm->peer_ports);
	free(comm->p2p_out_fds);
	free(comm->p2p_in_fds);
	free(comm->p2p_sent);
	free(comm->p2p_received);
	comm->magic = 0;
	free(comm);
}

static int *fd_array(int n)
{
	int *a = malloc((size_t)n * sizeof *a);
	if (a)
		for (int i = 0; i < n; i++)
			a[i] = -1;
	return a;
}

/* A communicator ready for its OP_INIT.  Rank 0 listens on rdv_fd when given
 * (ncclCommSplit), else on the socket ncclGetUniqueId left in this process. */
static ncclResult_t comm_create(const struct fr_uid *uid, int nranks, int rank, int rdv_fd,
				ncclComm_t *out)
{
	*out = NULL;
	if (memcmp(uid->magic, uid_magic, sizeof uid_magic) != 0 ||
	    uid->addr_be != htonl(INADDR_LOOPBACK)) {
		report(NULL, "ncclCommInitRank: the unique id was not made by ncclGetUniqueId of "
			     "this stand-in (or was not passed to every rank intact)");
		close_fd(&rdv_fd);
		return ncclInvalidArgument;
	}
	if (nranks < 1 || rank < 0 || rank >= nranks) {
		report(NULL, "ncclCommInitRank: rank %d of %d is out of range", rank, nranks);
		close_fd(&rdv_fd);
		return ncclInvalidArgument;
	}
	struct ncclComm *c = calloc(1, sizeof *c);
	if (!c) {
		close_fd(&rdv_fd);
		return ncclSystemError;
	}
	c->magic = COMM_MAGIC;
	c->rank = rank;
	c->nranks = nranks;
	c->job_tag = uid->job_tag;
	c->root_port = uid->port;
	c->rdv_listen_fd = rdv_fd;
	c->root_fd = -1;
	c->status = ncclInProgress;
	c->peer_listen_fd = listen_loopback(0, &c->peer_port);
	c->member_fds = fd_array(nranks);
	c->p2p_out_fds = fd_array(nranks);
	c->p2p_in_fds = fd_array(nranks);
	c->peer_ports = calloc((size_t)nranks, sizeof *c->peer_ports);
	c->p2p_sent = calloc((size_t)nranks, sizeof *c->p2p_sent);
	c->p2p_received = calloc((size_t)nranks, sizeof *c->p2p_received);
	if (c->peer_listen_fd < 0 || !c->member_fds || !c->p2p_out_fds || !c->p2p_in_fds ||
	    !c->peer_ports || !c->p2p_sent || !c->p2p_received) {
		report(c, "cannot set up a communicator: %s", strerror(errno));
		comm_free(c);
		return ncclSystemError;
	}
	if (rank == 0 && c->rdv_listen_fd < 0) {
		c->rdv_listen_fd = take_pending_listener(uid->job_tag);
		if (c->rdv_listen_fd < 0) {
			uint16_t port;
			c->rdv_listen_fd = listen_loopback(uid->port, &port);
		}
		if (c->rdv_listen_fd < 0) {
			report(c, "rank 0 must initialize in the process that called "
				  "ncclGetUniqueId (port %u is not ours: %s)",
			       uid->port, strerror(errno));
			comm_free(c);
			return ncclInvalidUsage;
		}
	}
	*out = c;
	return ncclSuccess;
}

/* noinline, like the other small helpers the entry points call: GCC 12
 * drops the frame pointer of leaf functions even with
 * -mno-omit-leaf-frame-pointer, and every entry point must start with
 * `push %rbp` (a probe's stack walk and its tests rely on it). */
static __attribute__((noinline)) int comm_valid(const struct ncclComm *comm)
{
	return comm && comm->magic == COMM_MAGIC;
}

/* ---- running operations: four phases so a group never deadlocks ----------- *
 *
 * 1 post:     members connect / send their collective message; senders post
 *             their p2p header.  Nothing here waits for another rank.
 * 2 root:     rank 0 of each communicator gathers all members, then replies.
 * 3 complete: members wait for rank 0's reply; receivers take the header
 *             and acknowledge it.
 * 4 acks:     senders wait for the receiver's acknowledgement.
 * Each phase only waits for work that other ranks do in an earlier phase, so
 * one thread can drive several communicators in one group (ncclCommInitAll,
 * or group { AllReduce on comm A; AllReduce on comm B }). */

static const char *result_string(ncclResult_t result);
static void op_fail(struct op *o, ncclResult_t res, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void op_fail(struct op *o, ncclResult_t res, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (o->kind == OP_INIT)
		report(o->comm, "ncclCommInitRank: %s", msg);
	else if (o->kind == OP_COLL)
		report(o->comm, "%s #%llu: %s", func_names[o->func], (unsigned long long)o->seq, msg);
	else
		report(o->comm, "%s: %s", func_names[o->func], msg);
	o->result = res;
	o->comm->status = res;
}

static int op_live(struct op *o)
{
	if (o->result != ncclSuccess)
		return 0;
	ncclResult_t s = o->comm->status;
	if (s != ncclSuccess && s != ncclInProgress) {
		o->result = s;
		return 0;
	}
	return 1;
}

static void init_post(struct op *o, uint64_t deadline)
{
	struct ncclComm *c = o->comm;
	int st = connect_loopback(c->root_port, deadline, &c->root_fd);
	if (st == IO_OK)
		st = send_msg(c->root_fd, W_HELLO, c->job_tag, 0, c->rank, c->nranks, c->peer_port,
			      0, deadline);
	if (st != IO_OK)
		op_fail(o, io_result(st), "cannot reach rank 0 at 127.0.0.1:%u: %s", c->root_port,
			io_what(st));
}

static void init_root(struct op *o, uint64_t deadline)
{
	struct ncclComm *c = o->comm;
	ncclResult_t res = ncclSuccess;
	int joined = 1;
	c->peer_ports[0] = c->peer_port;
	while (joined < c->nranks && res == ncclSuccess) {
		int fd, st = accept_deadline(c->rdv_listen_fd, deadline, &fd);
		struct wire_msg m;
		if (st == IO_OK) {
			int rst = recv_msg(fd, &m, deadline);
			if (rst != IO_OK) { /* not one of ours, or gone: ignore it */
				close(fd);
				if (rst != IO_TIMEOUT)
					continue;
				st = rst;
			}
		}
		if (st != IO_OK) {
			res = io_result(st);
			report(c, "ncclCommInitRank: %d of %d ranks arrived: %s", joined, c->nranks,
			       io_what(st));
			break;
		}
		if (m.kind != W_HELLO || m.tag != c->job_tag) { /* another job, stale */
			close(fd);
			continue;
		}
		if (m.b != c->nranks || m.a <= 0 || m.a >= c->nranks || c->member_fds[m.a] >= 0) {
			report(c, "ncclCommInitRank: a rank says it is rank %lld of %lld",
			       (long long)m.a, (long long)m.b);
			close(fd);
			res = ncclInvalidUsage;
			break;
		}
		c->member_fds[m.a] = fd;
		c->peer_ports[m.a] = (uint16_t)m.c;
		joined++;
	}
	/* reply to everyone who came, so they fail fast if we failed */
	for (int r = 1; r < c->nranks; r++) {
		if (c->member_fds[r] < 0)
			continue;
		if (send_msg(c->member_fds[r], W_HELLO_REPLY, c->job_tag, 0, res, c->nranks, 0, 0,
			     deadline) != IO_OK ||
		    (res == ncclSuccess &&
		     write_full(c->member_fds[r], c->peer_ports,
				(size_t)c->nranks * sizeof *c->peer_ports, deadline) != IO_OK)) {
			if (res == ncclSuccess) {
				report(c, "ncclCommInitRank: rank %d left during init", r);
				res = ncclRemoteError;
			}
		}
	}
	close_fd(&c->rdv_listen_fd);
	if (res != ncclSuccess) {
		o->result = c->status = res;
		return;
	}
	c->status = ncclSuccess;
}

static void init_complete(struct op *o, uint64_t deadline)
{
	struct ncclComm *c = o->comm;
	struct wire_msg m;
	int st = recv_msg(c->root_fd, &m, deadline);
	if (st == IO_OK && m.kind == W_HELLO_REPLY && m.a == ncclSuccess)
		st = read_full(c->root_fd, c->peer_ports, (size_t)c->nranks * sizeof *c->peer_ports,
			       deadline);
	if (st != IO_OK)
		op_fail(o, io_result(st), "waiting for rank 0 (127.0.0.1:%u): %s", c->root_port,
			io_what(st));
	else if (m.kind != W_HELLO_REPLY)
		op_fail(o, ncclInternalError, "unexpected message %u from rank 0", m.kind);
	else if (m.a != ncclSuccess)
		op_fail(o, (ncclResult_t)m.a, "rank 0 failed the init");
	else
		c->status = ncclSuccess;
}

static void coll_post(struct op *o, uint64_t deadline)
{
	struct ncclComm *c = o->comm;
	int st = send_msg(c->root_fd, W_COLL, c->job_tag, o->seq, o->func, (int64_t)o->count,
			  o->datatype, o->peer, deadline);
	if (st != IO_OK)
		op_fail(o, io_result(st), "cannot reach rank 0: %s", io_what(st));
}

static void coll_root(struct op *o, uint64_t deadline)
{
	struct ncclComm *c = o->comm;
	ncclResult_t res = ncclSuccess;
	for (int r = 1; r < c->nranks && res == ncclSuccess; r++) {
		struct wire_msg m;
		int st = recv_msg(c->member_fds[r], &m, deadline);
		if (st != IO_OK) {
			report(c, "%s #%llu: waiting for rank %d: %s", func_names[o->func],
			       (unsigned long long)o->seq, r, io_what(st));
			res = io_result(st);
		} else if (m.kind != W_COLL || m.seq != o->seq || m.a != o->func ||
			   (uint64_t)m.b != o->count || m.c != o->datatype || m.d != o->peer) {
			report(c, "%s #%llu (count %zu, type %d, root %d): rank %d called "
				  "%s #%llu (count %lld, type %lld, root %lld) instead",
			       func_names[o->func], (unsigned long long)o->seq, o->count, o->datatype,
			       o->peer, r, m.kind == W_COLL && m.a > 0 && m.a <= F_RECV ? func_names[m.a] : "?",
			       (unsigned long long)m.seq, (long long)m.b, (long long)m.c, (long long)m.d);
			res = ncclInvalidUsage;
		}
	}
	for (int r = 1; r < c->nranks; r++)
		send_msg(c->member_fds[r], W_COLL_REPLY, c->job_tag, o->seq, res, 0, 0, 0, deadline);
	if (res != ncclSuccess)
		o->result = c->status = res;
}

static void coll_complete(struct op *o, uint64_t deadline)
{
	struct ncclComm *c = o->comm;
	struct wire_msg m;
	int st = recv_msg(c->root_fd, &m, deadline);
	if (st != IO_OK)
		op_fail(o, io_result(st), "waiting for rank 0: %s", io_what(st));
	else if (m.kind != W_COLL_REPLY || m.seq != o->seq)
		op_fail(o, ncclInternalError, "out of step with rank 0 (message %u #%llu)", m.kind,
			(unsigned long long)m.seq);
	else if (m.a != ncclSuccess)
		op_fail(o, (ncclResult_t)m.a, "failed on rank 0's side (%s)",
			result_string((ncclResult_t)m.a));
}

static void send_post(struct op *o, uint64_t deadline)
{
	struct ncclComm *c = o->comm;
	int *fd = &c->p2p_out_fds[o->peer];
	int st = IO_OK;
	if (c->status != ncclSuccess) {
		op_fail(o, ncclInvalidUsage, "communicator not initialized yet");
		return;
	}
	if (*fd < 0) {
		st = connect_loopback(c->peer_ports[o->peer], deadline, fd);
		if (st == IO_OK)
			st = send_msg(*fd, W_PEER_HELLO, c->job_tag, 0, c->rank, 0, 0, 0, deadline);
	}
	if (st == IO_OK)
		st = send_msg(*fd, W_P2P, c->job_tag, o->seq, (int64_t)o->count, o->datatype, 0, 0,
			      deadline);
	if (st != IO_OK)
		op_fail(o, io_result(st), "to rank %d: %s", o->peer, io_what(st));
}

static void send_ack(struct op *o, uint64_t deadline)
{
	struct wire_msg m;
	int st = recv_msg(o->comm->p2p_out_fds[o->peer], &m, deadline);
	if (st != IO_OK)
		op_fail(o, io_result(st), "to rank %d: waiting for its ncclRecv: %s", o->peer,
			io_what(st));
	else if (m.kind != W_P2P_ACK || m.seq != o->seq)
		op_fail(o, ncclInternalError, "to rank %d: out of step", o->peer);
}

static void recv_complete(struct op *o, uint64_t deadline)
{
	struct ncclComm *c = o->comm;
	struct wire_msg m;
	int st = IO_OK;
	while (c->p2p_in_fds[o->peer] < 0 && st == IO_OK) {
		int fd;
		st = accept_deadline(c->peer_listen_fd, deadline, &fd);
		if (st != IO_OK)
			break;
		if (recv_msg(fd, &m, deadline) != IO_OK || m.kind != W_PEER_HELLO ||
		    m.tag != c->job_tag || m.a < 0 || m.a >= c->nranks ||
		    c->p2p_in_fds[m.a] >= 0) {
			close(fd);
			continue;
		}
		c->p2p_in_fds[m.a] = fd;
	}
	if (st == IO_OK)
		st = recv_msg(c->p2p_in_fds[o->peer], &m, deadline);
	if (st != IO_OK) {
		op_fail(o, io_result(st), "from rank %d: waiting for its ncclSend: %s", o->peer,
			io_what(st));
		return;
	}
	if (m.kind != W_P2P || m.seq != o->seq) {
		op_fail(o, ncclInternalError, "from rank %d: out of step", o->peer);
		return;
	}
	if ((uint64_t)m.a > o->count || m.b != o->datatype) {
		op_fail(o, ncclInvalidUsage, "from rank %d: it sends %lld of type %lld, this "
			"receives %zu of type %d", o->peer, (long long)m.a, (long long)m.b,
			o->count, o->datatype);
		return;
	}
	st = send_msg(c->p2p_in_fds[o->peer], W_P2P_ACK, c->job_tag, o->seq, 0, 0, 0, 0, deadline);
	if (st != IO_OK)
		op_fail(o, io_result(st), "from rank %d: %s", o->peer, io_what(st));
}

static ncclResult_t run_ops(struct op *ops, size_t n)
{
	uint64_t deadline = now_ns() + timeout_ns();
	for (size_t i = 0; i < n; i++) {
		struct op *o = &ops[i];
		if (!op_live(o))
			continue;
		int root = o->comm->rank == 0;
		if (o->kind == OP_INIT && !root)
			init_post(o, deadline);
		else if (o->kind == OP_COLL && !root)
			coll_post(o, deadline);
		else if (o->kind == OP_SEND)
			send_post(o, deadline);
	}
	for (size_t i = 0; i < n; i++) {
		struct op *o = &ops[i];
		if (!op_live(o) || o->comm->rank != 0)
			continue;
		if (o->kind == OP_INIT)
			init_root(o, deadline);
		else if (o->kind == OP_COLL)
			coll_root(o, deadline);
	}
	for (size_t i = 0; i < n; i++) {
		struct op *o = &ops[i];
		if (!op_live(o))
			continue;
		int root = o->comm->rank == 0;
		if (o->kind == OP_INIT && !root)
			init_complete(o, deadline);
		else if (o->kind == OP_COLL && !root)
			coll_complete(o, deadline);
		else if (o->kind == OP_RECV)
			recv_complete(o, deadline);
	}
	for (size_t i = 0; i < n; i++) {
		struct op *o = &ops[i];
		if (op_live(o) && o->kind == OP_SEND)
			send_ack(o, deadline);
	}

	ncclResult_t res = ncclSuccess;
	uint64_t bytes = 0;
	for (size_t i = 0; i < n; i++) {
		if (ops[i].result != ncclSuccess) {
			if (res == ncclSuccess)
				res = ops[i].result;
		} else if (ops[i].kind != OP_INIT) {
			bytes += op_bytes(&ops[i]);
		}
	}
	if (bytes)
		sleep_ns((uint64_t)((double)bytes / env_positive("FLIGHTREC_FAKE_NCCL_GBPS",
								   DEFAULT_GBPS)));
	return res;
}

/* ---- asynchronous mode: the stream runs the barrier ------------------------ */

typedef void (*host_fn_t)(void *user_data);
typedef int (*launch_host_func_t)(cudaStream_t stream, host_fn_t fn, void *user_data);

static pthread_once_t async_once = PTHREAD_ONCE_INIT;
static int async_on;
static launch_host_func_t launch_host_func;
/* one job at a time: the jobs of two streams would interleave on the same
 * sockets */
static pthread_mutex_t async_run_lock = PTHREAD_MUTEX_INITIALIZER;
/* ncclComm.async_queued, and its waiters (destroy) */
static pthread_mutex_t async_count_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t async_count_cond = PTHREAD_COND_INITIALIZER;

static void async_init(void)
{
	const char *v = getenv("FLIGHTREC_FAKE_NCCL_ASYNC");
	async_on = v && *v && strcmp(v, "0") != 0;
	if (async_on) /* the CUDA runtime the process maps, if any */
		*(void **)&launch_host_func = dlsym(RTLD_DEFAULT, "cudaLaunchHostFunc");
}

static int async_mode(void)
{
	pthread_once(&async_once, async_init);
	return async_on;
}

struct async_job {
	size_t n;
	struct op ops[];
};

static void count_queued(struct op *ops, size_t n, int delta)
{
	pthread_mutex_lock(&async_count_lock);
	for (size_t i = 0; i < n; i++)
		ops[i].comm->async_queued += (unsigned)delta;
	pthread_cond_broadcast(&async_count_cond);
	pthread_mutex_unlock(&async_count_lock);
}

/* The host function: the barrier, when the stream reaches the job.  A
 * failure stays in comm->status (ncclCommGetAsyncError). */
static void async_run(void *arg)
{
	struct async_job *j = arg;
	pthread_mutex_lock(&async_run_lock);
	run_ops(j->ops, j->n);
	pthread_mutex_unlock(&async_run_lock);
	count_queued(j->ops, j->n, -1);
	free(j);
}

/* Enqueues ops[0..n) on the stream of the first; returns at once. */
static ncclResult_t enqueue_async(const struct op *ops, size_t n)
{
	if (!launch_host_func) {
		report(ops[0].comm, "FLIGHTREC_FAKE_NCCL_ASYNC: no cudaLaunchHostFunc in this "
		       "process (link a libcudart that has it, such as flightrec's stand-in)");
		return ncclInvalidUsage;
	}
	struct async_job *j = malloc(sizeof(*j) + n * sizeof(*ops));
	if (!j)
		return ncclSystemError;
	j->n = n;
	memcpy(j->ops, ops, n * sizeof(*ops));
	count_queued(j->ops, n, +1);
	int err = launch_host_func(ops[0].stream, async_run, j);
	if (err) {
		report(ops[0].comm, "cudaLaunchHostFunc on stream %p failed: CUDA error %d",
		       ops[0].stream, err);
		count_queued(j->ops, n, -1);
		free(j);
		return ncclUnhandledCudaError;
	}
	return ncclSuccess;
}

/* Waits until no asynchronous job of comm is left on a stream. */
static void wait_async(ncclComm_t comm)
{
	pthread_mutex_lock(&async_count_lock);
	while (comm->async_queued)
		pthread_cond_wait(&async_count_cond, &async_count_lock);
	pthread_mutex_unlock(&async_count_lock);
}

/* Runs the operation now (or enqueues it, asynchronous mode), or queues it
 * until the outermost ncclGroupEnd. */
static ncclResult_t submit(const struct op *o)
{
	if (group_depth == 0) {
		if (o->kind != OP_INIT && async_mode())
			return enqueue_async(o, 1);
		struct op copy = *o;
		return run_ops(&copy, 1);
	}
	if (group_ops.n == group_ops.cap) {
		size_t cap = group_ops.cap ? 2 * group_ops.cap : 16;
		struct op *p = realloc(group_ops.ops, cap * sizeof *p);
		if (!p)
			return ncclSystemError;
		group_ops.ops = p;
		group_ops.cap = cap;
	}
	group_ops.ops[group_ops.n++] = *o;
	return ncclSuccess;
}

/* ---- entry points ------------------------------------------------------------ */

static __attribute__((noinline)) int version_code(void)
{
	return NCCL_VERSION_CODE;
}

NCCL_API(ncclResult_t, ncclGetVersion, (int *version))
{
	if (!version)
		return ncclInvalidArgument;
	*version = version_code();
	return ncclSuccess;
}

static __attribute__((noinline)) const char *result_string(ncclResult_t result)
{
	switch (result) {
	case ncclSuccess: return "no error";
	case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
	case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
	case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
	case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
	case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
	case ncclRemoteError: return "remote process exited or there was a network error";
	case ncclInProgress: return "NCCL operation in progress";
	default: return "unknown result code";
	}
}

NCCL_API(const char *, ncclGetErrorString, (ncclResult_t result))
{
	return result_string(result);
}

NCCL_API(ncclResult_t, ncclGetUniqueId, (ncclUniqueId *uniqueId))
{
	if (!uniqueId)
		return ncclInvalidArgument;
	struct fr_uid uid;
	ncclResult_t res = make_uid(&uid);
	if (res == ncclSuccess)
		memcpy(uniqueId->internal, &uid, sizeof uid);
	return res;
}

static ncclResult_t init_rank(ncclComm_t *comm, int nranks, const ncclUniqueId *id, int rank)
{
	if (!comm)
		return ncclInvalidArgument;
	struct fr_uid uid;
	memcpy(&uid, id->internal, sizeof uid);
	ncclResult_t res = comm_create(&uid, nranks, rank, -1, comm);
	if (res != ncclSuccess)
		return res;
	struct op o = { .kind = OP_INIT, .comm = *comm, .peer = -1 };
	res = submit(&o);
	if (res != ncclSuccess) {
		comm_free(*comm);
		*comm = NULL;
	}
	return res;
}

NCCL_API(ncclResult_t, ncclCommInitRank,
	 (ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank))
{
	return init_rank(comm, nranks, &commId, rank);
}

NCCL_API(ncclResult_t, ncclCommInitRankConfig,
	 (ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t *config))
{
	(void)config; /* always blocking; no CTA or network settings to honour */
	return init_rank(comm, nranks, &commId, rank);
}

NCCL_API(ncclResult_t, ncclCommInitAll, (ncclComm_t *comm, int ndev, const int *devlist))
{
	(void)devlist;
	if (!comm || ndev < 1)
		return ncclInvalidArgument;
	struct fr_uid uid;
	ncclResult_t res = make_uid(&uid);
	if (res != ncclSuccess)
		return res;
	struct op *ops = calloc((size_t)ndev, sizeof *ops);
	if (!ops) {
		close(take_pending_listener(uid.job_tag));
		return ncclSystemError;
	}
	for (int r = 0; r < ndev && res == ncclSuccess; r++) {
		res = comm_create(&uid, ndev, r, -1, &comm[r]);
		ops[r] = (struct op){ .kind = OP_INIT, .comm = comm[r], .peer = -1 };
	}
	if (res == ncclSuccess)
		res = run_ops(ops, (size_t)ndev);
	if (res != ncclSuccess)
		for (int r = 0; r < ndev; r++) {
			comm_free(comm[r]);
			comm[r] = NULL;
		}
	free(ops);
	return res;
}

/* ncclCommSplit runs at once even inside a group.  One gather on the parent:
 * every rank sends (color, key, a fresh listening port); rank 0 orders each
 * color by (key, parent rank) and tells every rank its new rank, size, the
 * new rank 0's port and a new job tag; then the new communicators
 * initialize like ncclCommInitRank. */
NCCL_API(ncclResult_t, ncclCommSplit,
	 (ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config))
{
	(void)config;
	if (!comm_valid(comm) || !newcomm || (color < 0 && color != NCCL_SPLIT_NOCOLOR))
		return ncclInvalidArgument;
	*newcomm = NULL;
	if (comm->status != ncclSuccess)
		return comm->status;
	uint64_t deadline = now_ns() + timeout_ns();
	uint16_t lport = 0;
	int lfd = listen_loopback(0, &lport);
	if (lfd < 0) {
		report(comm, "ncclCommSplit: cannot listen: %s", strerror(errno));
		return ncclSystemError;
	}
	uint64_t seq = ++comm->coll_seq;
	struct wire_msg reply = { .kind = W_SPLIT_REPLY, .a = ncclSuccess };
	int st = IO_OK;
	if (comm->rank != 0) {
		st = send_msg(comm->root_fd, W_SPLIT, comm->job_tag, seq, color, key, lport, 0,
			      deadline);
		if (st == IO_OK)
			st = recv_msg(comm->root_fd, &reply, deadline);
		if (st == IO_OK && (reply.kind != W_SPLIT_REPLY || reply.seq != seq))
			reply.a = ncclInternalError;
	} else {
		int n = comm->nranks;
		int64_t *colors = calloc((size_t)n, sizeof *colors);
		int64_t *keys = calloc((size_t)n, sizeof *keys);
		int64_t *ports = calloc((size_t)n, sizeof *ports);
		uint64_t *tags = calloc((size_t)n, sizeof *tags);
		ncclResult_t res = colors && keys && ports && tags ? ncclSuccess : ncclSystemError;
		if (res == ncclSuccess) {
			colors[0] = color;
			keys[0] = key;
			ports[0] = lport;
		}
		for (int r = 1; r < n && res == ncclSuccess; r++) {
			struct wire_msg m;
			int rst = recv_msg(comm->member_fds[r], &m, deadline);
			if (rst != IO_OK) {
				report(comm, "ncclCommSplit: waiting for rank %d: %s", r, io_what(rst));
				res = io_result(rst);
			} else if (m.kind != W_SPLIT || m.seq != seq) {
				report(comm, "ncclCommSplit: rank %d called something else", r);
				res = ncclInvalidUsage;
			} else {
				colors[r] = m.a;
				keys[r] = m.b;
				ports[r] = m.c;
			}
		}
		for (int r = 0; r < n; r++) {
			struct wire_msg m = { .kind = W_SPLIT_REPLY, .seq = seq, .a = res, .b = -1 };
			if (res == ncclSuccess && colors[r] != NCCL_SPLIT_NOCOLOR) {
				int below = 0, size = 0, leader = r;
				for (int j = 0; j < n; j++) {
					if (colors[j] != colors[r])
						continue;
					size++;
					if (keys[j] < keys[r] || (keys[j] == keys[r] && j < r))
						below++;
					if (keys[j] < keys[leader] || (keys[j] == keys[leader] && j < leader))
						leader = j;
				}
				if (!tags[leader])
					tags[leader] = random_u64();
				m.tag = tags[leader];
				m.b = below;
				m.c = size;
				m.d = ports[leader];
			}
			if (r == 0)
				reply = m;
			else
				send_msg(comm->member_fds[r], W_SPLIT_REPLY, m.tag, seq, m.a, m.b, m.c,
					 m.d, deadline);
		}
		free(colors);
		free(keys);
		free(ports);
		free(tags);
	}
	if (st != IO_OK) {
		report(comm, "ncclCommSplit: waiting for rank 0: %s", io_what(st));
		comm->status = io_result(st);
		close(lfd);
		return comm->status;
	}
	if (reply.a != ncclSuccess) {
		comm->status = (ncclResult_t)reply.a;
		close(lfd);
		return comm->status;
	}
	if (reply.b < 0) { /* NCCL_SPLIT_NOCOLOR */
		close(lfd);
		return ncclSuccess;
	}
	struct fr_uid uid;
	memset(&uid, 0, sizeof uid);
	memcpy(uid.magic, uid_magic, sizeof uid.magic);
	uid.addr_be = htonl(INADDR_LOOPBACK);
	uid.port = (uint16_t)reply.d;
	uid.job_tag = reply.tag;
	if (reply.b != 0)
		close_fd(&lfd);
	ncclResult_t res = comm_create(&uid, (int)reply.c, (int)reply.b, lfd, newcomm);
	if (res != ncclSuccess)
		return res;
	struct op o = { .kind = OP_INIT, .comm = *newcomm, .peer = -1 };
	res = run_ops(&o, 1);
	if (res != ncclSuccess) {
		comm_free(*newcomm);
		*newcomm = NULL;
	}
	return res;
}

/* Drops this thread's queued operations on comm, so a group never touches a
 * destroyed communicator. */
static void forget_queued(ncclComm_t comm)
{
	size_t k = 0;
	for (size_t i = 0; i < group_ops.n; i++)
		if (group_ops.ops[i].comm != comm)
			group_ops.ops[k++] = group_ops.ops[i];
	group_ops.n = k;
}

NCCL_API(ncclResult_t, ncclCommDestroy, (ncclComm_t comm))
{
	if (!comm)
		return ncclSuccess; /* as NVIDIA's: destroying NULL is a no-op */
	if (!comm_valid(comm))
		return ncclInvalidArgument;
	forget_queued(comm);
	wait_async(comm); /* a stream's job still uses it */
	comm_free(comm);
	return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommAbort, (ncclComm_t comm))
{
	if (!comm)
		return ncclSuccess;
	if (!comm_valid(comm))
		return ncclInvalidArgument;
	forget_queued(comm);
	wait_async(comm); /* bounded by the timeout of the barrier it runs */
	comm_free(comm);
	return ncclSuccess;
}

/* ncclSuccess, or the error an asynchronous collective met (every later
 * call on the communicator returns it too). */
NCCL_API(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t *asyncError))
{
	if (!comm_valid(comm) || !asyncError)
		return ncclInvalidArgument;
	*asyncError = comm->status;
	return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommCount, (const ncclComm_t comm, int *count))
{
	if (!comm_valid(comm) || !count)
		return ncclInvalidArgument;
	*count = comm->nranks;
	return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommUserRank, (const ncclComm_t comm, int *rank))
{
	if (!comm_valid(comm) || !rank)
		return ncclInvalidArgument;
	*rank = comm->rank;
	return ncclSuccess;
}

/* Checks the arguments NVIDIA's library checks, then runs or queues. */
static ncclResult_t collective(int func, const void *sendbuff, const void *recvbuff, size_t count,
			       ncclDataType_t datatype, int redop, int root, ncclComm_t comm,
			       cudaStream_t stream)
{
	if (!comm_valid(comm))
		return ncclInvalidArgument;
	if (comm->status != ncclSuccess && !(group_depth > 0 && comm->status == ncclInProgress))
		return comm->status == ncclInProgress ? ncclInvalidUsage : comm->status;
	int reduces = func == F_ALL_REDUCE || func == F_REDUCE_SCATTER || func == F_REDUCE;
	if (!type_bytes(datatype) || (reduces && (redop < 0 || redop >= ncclNumOps)) ||
	    (count > 0 && ((func != F_RECV && !sendbuff) || (func != F_SEND && !recvbuff)))) {
		report(comm, "%s: invalid argument (type %d, op %d, buffers %p %p)",
		       func_names[func], (int)datatype, redop, sendbuff, recvbuff);
		return ncclInvalidArgument;
	}
	if ((func == F_BROADCAST || func == F_REDUCE || func == F_SEND || func == F_RECV) &&
	    (root < 0 || root >= comm->nranks)) {
		report(comm, "%s: %s %d is not a rank of this communicator", func_names[func],
		       func == F_SEND || func == F_RECV ? "peer" : "root", root);
		return ncclInvalidArgument;
	}
	struct op o = {
		.comm = comm, .func = func, .count = count, .datatype = datatype,
		.redop = redop, .peer = root, .stream = stream,
	};
	if (func == F_SEND) {
		o.kind = OP_SEND;
		o.seq = ++comm->p2p_sent[root];
	} else if (func == F_RECV) {
		o.kind = OP_RECV;
		o.seq = ++comm->p2p_received[root];
	} else {
		o.kind = OP_COLL;
		o.seq = ++comm->coll_seq;
		double fail_at = env_positive("FLIGHTREC_FAKE_NCCL_FAIL_AT", 0);
		const char *fr = getenv("FLIGHTREC_FAKE_NCCL_FAIL_RANK");
		if (fail_at > 0 && o.seq == (uint64_t)fail_at && comm->rank == (fr ? atoi(fr) : 0)) {
			report(comm, "%s: collective %llu fails (FLIGHTREC_FAKE_NCCL_FAIL_AT)",
			       func_names[func], (unsigned long long)o.seq);
			return ncclSystemError;
		}
	}
	return submit(&o);
}

NCCL_API(ncclResult_t, ncclAllReduce,
	 (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
	  ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream))
{
	return collective(F_ALL_REDUCE, sendbuff, recvbuff, count, datatype, op, -1, comm, stream);
}

NCCL_API(ncclResult_t, ncclReduceScatter,
	 (const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
	  ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream))
{
	return collective(F_REDUCE_SCATTER, sendbuff, recvbuff, recvcount, datatype, op, -1, comm,
			  stream);
}

NCCL_API(ncclResult_t, ncclAllGather,
	 (const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
	  ncclComm_t comm, cudaStream_t stream))
{
	return collective(F_ALL_GATHER, sendbuff, recvbuff, sendcount, datatype, -1, -1, comm, stream);
}

NCCL_API(ncclResult_t, ncclBroadcast,
	 (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
	  ncclComm_t comm, cudaStream_t stream))
{
	/* only the root's send buffer matters */
	if (comm_valid(comm) && comm->rank != root && !sendbuff)
		sendbuff = recvbuff;
	return collective(F_BROADCAST, sendbuff, recvbuff, count, datatype, -1, root, comm, stream);
}

NCCL_API(ncclResult_t, ncclReduce,
	 (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
	  ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream))
{
	/* only the root's receive buffer matters */
	const void *rb = recvbuff;
	if (comm_valid(comm) && comm->rank != root && !rb)
		rb = sendbuff;
	return collective(F_REDUCE, sendbuff, rb, count, datatype, op, root, comm, stream);
}

NCCL_API(ncclResult_t, ncclSend,
	 (const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
	  cudaStream_t stream))
{
	return collective(F_SEND, sendbuff, NULL, count, datatype, -1, peer, comm, stream);
}

NCCL_API(ncclResult_t, ncclRecv,
	 (void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
	  cudaStream_t stream))
{
	return collective(F_RECV, NULL, recvbuff, count, datatype, -1, peer, comm, stream);
}

NCCL_API(ncclResult_t, ncclGroupStart, (void))
{
	group_depth++;
	return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclGroupEnd, (void))
{
	if (group_depth <= 0)
		return ncclInvalidUsage;
	if (--group_depth > 0)
		return ncclSuccess;
	int blocking = !async_mode() || group_ops.n == 0;
	for (size_t i = 0; i < group_ops.n; i++)
		blocking |= group_ops.ops[i].kind == OP_INIT; /* init stays blocking */
	ncclResult_t res = blocking ? run_ops(group_ops.ops, group_ops.n)
				    : enqueue_async(group_ops.ops, group_ops.n);
	group_ops.n = 0;
	return res;
}
