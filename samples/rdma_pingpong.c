/* rdma_pingpong.c: an RDMA workload with exactly known numbers, to record.
 *
 * For: testing flightrec's RDMA probes (verbs control path, ibv_post_send /
 * ibv_post_recv / ibv_poll_cq through the provider's ops table) without an
 * RDMA NIC.  It is linked against the stand-in libibverbs of samples/verbs/
 * (an RPATH points at the build tree, so the system libibverbs is never
 * picked up) and prints exact counts per queue pair.  Not for: measuring
 * RDMA, nor running on real hardware (fakerdma_set_qp_latency and
 * fakerdma_set_qp_error_every exist only in the stand-in).
 *
 * Two RC connections, each a pair of QPs ("sides") that both run the same
 * workload against each other:
 *   A: A0 (on fakerdma0) <-> A1 (on fakerdma1), latency 20 us, no errors;
 *   B: B0 (on fakerdma0) <-> B1 (on fakerdma1), latency 200 us, every 10th
 *      executed signaled send WR fails with IBV_WC_RETRY_EXC_ERR (both sides).
 * By default all four QPs live in this process (one thread, one busy-poll
 * loop, ibv_poll_cq with 16 entries, counting the many empty polls); with
 * --fork the parent owns A0 and B0 and a child owns A1 and B1.
 *
 * Workload of each side, in order (every send WR is one SGE):
 *  1. 100 RDMA_WRITEs, one per ibv_post_send call, all signaled, each waited
 *     for before the next; sizes cycle 64, 1024, 4096, 65536 bytes
 *     (25 of each: 1,768,000 bytes).  Their post->completion times give p50.
 *  2. 8 RECVs of 4096 bytes in ONE chained ibv_post_recv call; once the peer
 *     has posted its receives, 8 SENDs of 512 bytes (4,096 bytes), one per
 *     call, signaled, each waited for; then wait for our 8 receives (payload
 *     checked: byte i+1 for the i-th).
 *  3. 3 bursts: ONE ibv_post_send call chaining 4 signaled 4096-byte
 *     RDMA_WRITEs, waited for as a whole (49,152 bytes).
 *  4. only with --unsignaled-chain N (N >= 0): C chains (--chains C, default
 *     20), each ONE ibv_post_send call of N unsignaled + 1 signaled
 *     1024-byte RDMA_WRITEs (wr.next links), waited for: exactly one
 *     completion per chain.
 * After any failed completion the side takes its QP through
 * RESET -> INIT -> RTR -> RTS again (4 ibv_modify_qp calls) and goes on.
 * The error counter counts executed signaled WRs over the QP's life, so on
 * B: phase 1 fails at WRs 10, 20, ..., 100 (all 1024-byte writes: 10
 * errors); phase 2 is WRs 101-108; in phase 3 burst 1 is WRs 109 and 110
 * (fails) and its last two WRs are flushed (IBV_WC_WR_FLUSH_ERR, not
 * counted), bursts 2 and 3 are 111-118; chain j is WR 119 + j and fails
 * when that is a multiple of 10 (j = 1, 11, 21, ...).
 *
 * Expected numbers per side (A0, A1, B0 and B1 alike; C = 0 without
 * --unsignaled-chain), printed as "SIDE key=value ...":
 *   send_wr         120 + C*(N+1)
 *   post_send_calls 111 + C
 *   send_bytes      1821248 + 1024*C*(N+1)
 *   signaled        120 + C
 *   recv_wr 8, post_recv_calls 1, recv_success 8, recv_bytes 4096,
 *   recv_flush 0, recv_data_bad 0, chain_wcs C
 *   A: wc_success 120 + C, wc_retry_exc_err 0, wc_flush_err 0, resets 0
 *   B: wc_retry_exc_err 11 + floor((C + 8) / 10), wc_flush_err 2,
 *      wc_success 120 + C - wc_retry_exc_err - 2, resets = wc_retry_exc_err
 *   all: wc_other_err 0
 * Default run:                 A: send_wr=120 send_bytes=1821248
 *   wc_success=120; B: wc_success=107 wc_retry_exc_err=11 wc_flush_err=2.
 * --unsignaled-chain 7 (C=20): A: send_wr=280 send_bytes=1985088
 *   signaled=140 wc_success=140 chain_wcs=20; B: wc_success=125
 *   wc_retry_exc_err=13 wc_flush_err=2 resets=13.
 * Latency: p50 of phase 1 (the "timing" line, p50_ns) is the configured
 * latency (20,000 / 200,000 ns) plus polling overhead.
 * Control path per side: 1 ibv_create_cq (256 entries), 1 ibv_create_qp,
 * 3 + 4*resets ibv_modify_qp, 1 ibv_reg_mr (512 KiB buffer), 1 ibv_reg_mr
 * with IBV_ACCESS_RELAXED_ORDERING (4 KiB, reaches ibv_reg_mr_iova2), 1
 * ibv_reg_dmabuf_mr (64 KiB memfd), their 3 ibv_dereg_mr, 1
 * ibv_destroy_qp, 1 ibv_destroy_cq; per process 1 ibv_get_device_list and
 * one ibv_open_device / ibv_alloc_pd per device used (2 in-process, 1 per
 * process with --fork).
 *
 * Options: --unsignaled-chain N, --chains C, --open-after-ms M (sleep M ms
 * before the first verbs call, so the provider is loaded and the device
 * opened only then: a recorder started earlier must attach dynamically),
 * --fork, --settle-ms S (sleep S ms between connecting the QPs and the first
 * post, as the out-of-band exchange of QP numbers takes in a real job),
 * --post-early (A0 and A1 post their 8 receives as soon as their QP exists:
 * ibv_create_qp, ibv_modify_qp to INIT, ibv_reg_mr, ibv_post_recv, well
 * under a millisecond after ibv_open_device, before the other sides are
 * even set up; phase 2 finds them posted.  Not B's: its QPs fail and are
 * reset during phase 1, which would flush receives posted that early.  One
 * more ibv_modify_qp on A0 and A1 (INIT again when connecting); every count
 * above is unchanged.  For a recorder that must not lose the first work
 * requests of a program that posts at once), --wait-usr1 (before the first
 * verbs call, print "rdma_pingpong: waiting for SIGUSR1" and wait for it:
 * a test decides when the device is opened, e.g. while the recorder is
 * stopped; with --fork, the parent only).
 * Exit status 0 when every count matches the numbers above. */
#include <infiniband/verbs.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "verbs/fakerdma.h"

enum {
	N_WRITES = 100,
	N_SENDS = 8,
	N_RECVS = 8,
	SEND_BYTES = 512,
	RECV_BYTES = 4096,
	N_BURSTS = 3,
	BURST_LEN = 4,
	BURST_BYTES = 4096,
	CHAIN_WR_BYTES = 1024,
	DEFAULT_CHAINS = 20,
	MAX_CHAIN = 255,
	POLL_BATCH = 16,
	CQ_ENTRIES = 256,
	RUN_TIMEOUT_S = 60,     /* give up (exit 2) when the workload hangs */
	/* buffer layout of a side */
	SRC_OFF = 0,            /* 64 KiB: source of our writes */
	DST_OFF = 64 << 10,     /* 64 KiB: where the peer writes */
	RECV_OFF = 128 << 10,   /* 8 x 4096: receive buffers */
	SEND_OFF = 160 << 10,   /* 8 x 512: send payloads */
	BUF_BYTES = 512 << 10,
	AUX_BYTES = 4096,
	DMABUF_BYTES = 64 << 10,
};

static const uint32_t write_sizes[4] = {64, 1024, 4096, 65536};

enum phase { P_SETUP, P_WRITE, P_SENDRECV, P_BURST, P_CHAIN, P_DONE };

/* wr_id: kind in bits 56..59, index below */
enum wr_kind { K_WRITE = 1, K_SEND = 2, K_RECV = 3, K_BURST = 4, K_CHAIN = 5 };
#define WR_ID(kind, i) (((uint64_t)(kind) << 56) | (uint64_t)(i))
#define WR_KIND(id) ((int)(((id) >> 56) & 0xf))
#define WR_INDEX(id) ((uint32_t)(id))

struct peer_info {
	uint32_t qp_num;
	uint16_t lid;
	uint8_t gid[16];
	uint64_t addr;
	uint32_t rkey;
};

struct side {
	char name[4];
	unsigned latency_us, error_every;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr, *aux_mr, *dmabuf_mr;
	unsigned char *buf, *aux;
	int memfd;
	struct peer_info self, peer;
	struct side *peer_local; /* in-process peer, else remote_phase via pipe */
	int remote_phase;
	int conn; /* 0 = A, 1 = B */

	enum phase phase;
	int step;
	int awaiting; /* send completions the current step still waits for */
	int step_failed;
	int recvs_done;
	int recvs_posted; /* --post-early: phase 2's receives went first */
	uint64_t step_post_ns;

	uint64_t send_wr, post_send_calls, send_bytes, signaled, recv_wr, post_recv_calls;
	uint64_t wc_success, wc_retry, wc_flush, wc_other, chain_wcs, resets;
	uint64_t recv_success, recv_bytes, recv_flush, recv_other, recv_data_bad;
	uint64_t polls, empty_polls;
	uint64_t lat_ns[N_WRITES];
	int nlat;
};

static int chain_n = -1; /* -1: no chain phase */
static int post_early;    /* --post-early */
static int chains = DEFAULT_CHAINS;
static int pipe_in = -1, pipe_out = -1; /* --fork */

static void die(const char *what, int err)
{
	fprintf(stderr, "rdma_pingpong: %s: %s\n", what, strerror(err));
	exit(2);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- connection setup ------------------------------------------------- */

static void post_recvs(struct side *s);
static void modify(struct side *s, struct ibv_qp_attr *a, int mask, const char *what);

static void setup_side(struct side *s, struct ibv_context *ctx, struct ibv_pd *pd)
{
	s->ctx = ctx;
	s->pd = pd;
	s->cq = ibv_create_cq(ctx, CQ_ENTRIES, NULL, NULL, 0);
	if (!s->cq)
		die("ibv_create_cq", errno);
	struct ibv_qp_init_attr ia = {
		.send_cq = s->cq,
		.recv_cq = s->cq,
		.cap = {.max_send_wr = 256, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1},
		.qp_type = IBV_QPT_RC,
	};
	s->qp = ibv_create_qp(pd, &ia);
	if (!s->qp)
		die("ibv_create_qp", errno);
	int rc = fakerdma_set_qp_latency(s->qp, s->latency_us);
	if (!rc)
		rc = fakerdma_set_qp_error_every(s->qp, s->error_every);
	if (rc)
		die("fakerdma knobs (is the stand-in libibverbs loaded?)", rc);
	if (post_early && s->conn == 0) {
		/* the earliest a program can post: its QP in INIT, nothing else
		 * set up (the MR is registered next; the receives only land
		 * once the peer sends, long after) */
		struct ibv_qp_attr a;
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ;
		modify(s, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
		       "ibv_modify_qp INIT (--post-early)");
	}

	s->buf = aligned_alloc(4096, BUF_BYTES);
	s->aux = aligned_alloc(4096, AUX_BYTES);
	if (!s->buf || !s->aux)
		die("aligned_alloc", ENOMEM);
	memset(s->buf, 0, BUF_BYTES);
	s->mr = ibv_reg_mr(pd, s->buf, BUF_BYTES,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!s->mr)
		die("ibv_reg_mr", errno);
	if (post_early && s->conn == 0) {
		post_recvs(s);
		s->recvs_posted = 1;
	}
	/* an optional access flag: the header calls ibv_reg_mr_iova2, as for
	 * NCCL's relaxed-ordering registrations */
	s->aux_mr = ibv_reg_mr(pd, s->aux, AUX_BYTES,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING);
	if (!s->aux_mr)
		die("ibv_reg_mr (relaxed ordering)", errno);
	s->memfd = memfd_create("rdma_pingpong-dmabuf", MFD_CLOEXEC);
	if (s->memfd < 0 || ftruncate(s->memfd, DMABUF_BYTES) < 0)
		die("memfd_create", errno);
	s->dmabuf_mr = ibv_reg_dmabuf_mr(pd, 0, DMABUF_BYTES, 0, s->memfd,
					 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!s->dmabuf_mr)
		die("ibv_reg_dmabuf_mr", errno);

	struct ibv_port_attr pa;
	if ((rc = ibv_query_port(ctx, 1, &pa)))
		die("ibv_query_port", rc);
	union ibv_gid gid;
	if ((rc = ibv_query_gid(ctx, 1, 0, &gid)))
		die("ibv_query_gid", rc);
	s->self.qp_num = s->qp->qp_num;
	s->self.lid = pa.lid;
	memcpy(s->self.gid, gid.raw, 16);
	s->self.addr = (uintptr_t)s->buf;
	s->self.rkey = s->mr->rkey;
}

static void modify(struct side *s, struct ibv_qp_attr *a, int mask, const char *what)
{
	int rc = ibv_modify_qp(s->qp, a, mask);
	if (rc)
		die(what, rc);
}

/* RESET (unless fresh) -> INIT -> RTR -> RTS towards s->peer. */
static void connect_qp(struct side *s, int from_reset)
{
	struct ibv_qp_attr a;
	if (from_reset) {
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RESET;
		modify(s, &a, IBV_QP_STATE, "ibv_modify_qp RESET");
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	modify(s, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
	       "ibv_modify_qp INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_4096;
	a.dest_qp_num = s->peer.qp_num;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	memcpy(a.ah_attr.grh.dgid.raw, s->peer.gid, 16);
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.dlid = s->peer.lid;
	a.ah_attr.port_num = 1;
	modify(s, &a,
	       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
	       "ibv_modify_qp RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	modify(s, &a,
	       IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
		       IBV_QP_MAX_QP_RD_ATOMIC,
	       "ibv_modify_qp RTS");
}

static void teardown_side(struct side *s)
{
	int rc;
	if ((rc = ibv_destroy_qp(s->qp)))
		die("ibv_destroy_qp", rc);
	if ((rc = ibv_destroy_cq(s->cq)))
		die("ibv_destroy_cq", rc);
	if ((rc = ibv_dereg_mr(s->mr)) || (rc = ibv_dereg_mr(s->aux_mr)) ||
	    (rc = ibv_dereg_mr(s->dmabuf_mr)))
		die("ibv_dereg_mr", rc);
	close(s->memfd);
	free(s->buf);
	free(s->aux);
}

/* ---- phases ------------------------------------------------------------- */

static void announce(struct side *s)
{
	if (s->peer_local || pipe_out < 0)
		return;
	unsigned char msg[2] = {(unsigned char)s->conn, (unsigned char)s->phase};
	if (write(pipe_out, msg, 2) != 2)
		die("write to peer process", errno);
}

static int peer_phase(const struct side *s)
{
	return s->peer_local ? (int)s->peer_local->phase : s->remote_phase;
}

static void post_send(struct side *s, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;
	for (struct ibv_send_wr *w = wr; w; w = w->next) {
		s->send_wr++;
		s->send_bytes += w->sg_list[0].length;
		s->signaled += (w->send_flags & IBV_SEND_SIGNALED) != 0;
		s->awaiting += (w->send_flags & IBV_SEND_SIGNALED) != 0;
	}
	s->post_send_calls++;
	s->step_post_ns = now_ns();
	int rc = ibv_post_send(s->qp, wr, &bad);
	if (rc)
		die("ibv_post_send", rc);
}

static void post_writes(struct side *s, int kind, int count, int unsignaled, uint32_t bytes,
			int index0)
{
	struct ibv_sge sge[MAX_CHAIN + 1];
	struct ibv_send_wr wr[MAX_CHAIN + 1];
	for (int i = 0; i < count; i++) {
		sge[i] = (struct ibv_sge){.addr = (uintptr_t)s->buf + SRC_OFF, .length = bytes,
					  .lkey = s->mr->lkey};
		wr[i] = (struct ibv_send_wr){
			.wr_id = WR_ID(kind, index0 + i),
			.next = i + 1 < count ? &wr[i + 1] : NULL,
			.sg_list = &sge[i],
			.num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = i < unsignaled ? 0 : IBV_SEND_SIGNALED,
		};
		wr[i].wr.rdma.remote_addr = s->peer.addr + DST_OFF;
		wr[i].wr.rdma.rkey = s->peer.rkey;
	}
	post_send(s, wr);
}

static void post_recvs(struct side *s)
{
	struct ibv_sge sge[N_RECVS];
	struct ibv_recv_wr wr[N_RECVS], *bad = NULL;
	for (int i = 0; i < N_RECVS; i++) {
		sge[i] = (struct ibv_sge){.addr = (uintptr_t)s->buf + RECV_OFF + (uint64_t)i * RECV_BYTES,
					  .length = RECV_BYTES, .lkey = s->mr->lkey};
		wr[i] = (struct ibv_recv_wr){.wr_id = WR_ID(K_RECV, i),
					     .next = i + 1 < N_RECVS ? &wr[i + 1] : NULL,
					     .sg_list = &sge[i], .num_sge = 1};
	}
	s->recv_wr += N_RECVS;
	s->post_recv_calls++;
	int rc = ibv_post_recv(s->qp, wr, &bad);
	if (rc)
		die("ibv_post_recv", rc);
}

static void post_one_send(struct side *s, int i)
{
	unsigned char *payload = s->buf + SEND_OFF + (size_t)i * SEND_BYTES;
	memset(payload, i + 1, SEND_BYTES);
	struct ibv_sge sge = {.addr = (uintptr_t)payload, .length = SEND_BYTES, .lkey = s->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = WR_ID(K_SEND, i), .sg_list = &sge, .num_sge = 1,
				 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED};
	post_send(s, &wr);
}

/* Posts the next step of s when the previous one is complete. */
static void advance(struct side *s)
{
	if (s->awaiting)
		return;
	if (s->step_failed) {
		connect_qp(s, 1);
		s->resets++;
		s->step_failed = 0;
	}
	switch (s->phase) {
	case P_SETUP:
		s->phase = P_WRITE;
		/* fall through */
	case P_WRITE:
		if (s->step < N_WRITES) {
			uint32_t bytes = write_sizes[s->step % 4];
			memset(s->buf + SRC_OFF, s->step & 0xff, bytes);
			post_writes(s, K_WRITE, 1, 0, bytes, s->step);
			s->step++;
			return;
		}
		s->phase = P_SENDRECV;
		s->step = 0;
		if (!s->recvs_posted)
			post_recvs(s);
		announce(s);
		return;
	case P_SENDRECV:
		if (peer_phase(s) < P_SENDRECV)
			return; /* the peer's receives are not posted yet */
		if (s->step < N_SENDS) {
			post_one_send(s, s->step++);
			return;
		}
		if (s->recvs_done < N_RECVS)
			return;
		s->phase = P_BURST;
		s->step = 0;
		announce(s);
		/* fall through */
	case P_BURST:
		if (s->step < N_BURSTS) {
			post_writes(s, K_BURST, BURST_LEN, 0, BURST_BYTES, s->step * BURST_LEN);
			s->step++;
			return;
		}
		s->phase = P_CHAIN;
		s->step = 0;
		announce(s);
		/* fall through */
	case P_CHAIN:
		if (chain_n >= 0 && s->step < chains) {
			post_writes(s, K_CHAIN, chain_n + 1, chain_n, CHAIN_WR_BYTES,
				    s->step * (chain_n + 1));
			s->step++;
			return;
		}
		s->phase = P_DONE;
		announce(s);
		return;
	case P_DONE:
		return;
	}
}

static void poll_side(struct side *s)
{
	struct ibv_wc wc[POLL_BATCH];
	int n = ibv_poll_cq(s->cq, POLL_BATCH, wc);
	uint64_t t = now_ns();
	if (n < 0)
		die("ibv_poll_cq", EIO);
	s->polls++;
	if (!n)
		s->empty_polls++;
	for (int i = 0; i < n; i++) {
		struct ibv_wc *w = &wc[i];
		int kind = WR_KIND(w->wr_id);
		if (kind == K_RECV) {
			s->recvs_done++;
			if (w->status == IBV_WC_SUCCESS) {
				uint32_t idx = WR_INDEX(w->wr_id);
				const unsigned char *p = s->buf + RECV_OFF + (size_t)idx * RECV_BYTES;
				s->recv_success++;
				s->recv_bytes += w->byte_len;
				int ok = w->byte_len == SEND_BYTES && w->opcode == IBV_WC_RECV &&
					 w->src_qp == s->peer.qp_num;
				for (uint32_t b = 0; ok && b < SEND_BYTES; b++)
					ok = p[b] == (unsigned char)(idx + 1);
				s->recv_data_bad += !ok;
			} else if (w->status == IBV_WC_WR_FLUSH_ERR) {
				s->recv_flush++;
			} else {
				s->recv_other++;
			}
			continue;
		}
		s->awaiting--;
		if (kind == K_CHAIN)
			s->chain_wcs++;
		if (kind == K_WRITE && s->nlat < N_WRITES)
			s->lat_ns[s->nlat++] = t - s->step_post_ns;
		switch (w->status) {
		case IBV_WC_SUCCESS:
			s->wc_success++;
			break;
		case IBV_WC_RETRY_EXC_ERR:
			s->wc_retry++;
			s->step_failed = 1;
			break;
		case IBV_WC_WR_FLUSH_ERR:
			s->wc_flush++;
			s->step_failed = 1;
			break;
		default:
			fprintf(stderr, "rdma_pingpong: %s: wr_id 0x%llx: %s\n", s->name,
				(unsigned long long)w->wr_id, ibv_wc_status_str(w->status));
			s->wc_other++;
			s->step_failed = 1;
		}
	}
}

static void read_pipe(struct side *sides, int nsides)
{
	unsigned char msg[2];
	while (read(pipe_in, msg, 2) == 2)
		for (int i = 0; i < nsides; i++)
			if (sides[i].conn == msg[0])
				sides[i].remote_phase = msg[1];
}

static void run(struct side *sides, int nsides)
{
	uint64_t deadline = now_ns() + RUN_TIMEOUT_S * 1000000000ull;
	for (uint64_t iter = 1;; iter++) {
		if (!(iter & 0xfff) && now_ns() > deadline) {
			for (int i = 0; i < nsides; i++)
				fprintf(stderr, "rdma_pingpong: %s: phase %d step %d awaiting %d peer phase %d\n",
					sides[i].name, sides[i].phase, sides[i].step, sides[i].awaiting,
					peer_phase(&sides[i]));
			die("no progress", ETIMEDOUT);
		}
		int done = 1;
		if (pipe_in >= 0)
			read_pipe(sides, nsides);
		for (int i = 0; i < nsides; i++) {
			advance(&sides[i]);
			poll_side(&sides[i]);
			done &= sides[i].phase == P_DONE && peer_phase(&sides[i]) == P_DONE &&
				!sides[i].awaiting;
		}
		if (done)
			return;
	}
}

/* ---- report --------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int check(const struct side *s, const char *key, uint64_t got, uint64_t want)
{
	if (got == want)
		return 0;
	fprintf(stderr, "rdma_pingpong: %s: %s=%llu, expected %llu\n", s->name, key,
		(unsigned long long)got, (unsigned long long)want);
	return 1;
}

/* Prints the counts of s; returns the number of mismatches with the header. */
static int report(struct side *s)
{
	uint64_t c = chain_n >= 0 ? (uint64_t)chains : 0, n1 = chain_n >= 0 ? (uint64_t)chain_n + 1 : 0;
	uint64_t retry = s->error_every ? 11 + (c + 8) / 10 : 0, flush = s->error_every ? 2 : 0;
	printf("%s send_wr=%llu post_send_calls=%llu send_bytes=%llu signaled=%llu recv_wr=%llu "
	       "post_recv_calls=%llu wc_success=%llu wc_retry_exc_err=%llu wc_flush_err=%llu "
	       "wc_other_err=%llu recv_success=%llu recv_bytes=%llu recv_flush=%llu "
	       "recv_data_bad=%llu chain_wcs=%llu resets=%llu\n",
	       s->name, (unsigned long long)s->send_wr, (unsigned long long)s->post_send_calls,
	       (unsigned long long)s->send_bytes, (unsigned long long)s->signaled,
	       (unsigned long long)s->recv_wr, (unsigned long long)s->post_recv_calls,
	       (unsigned long long)s->wc_success, (unsigned long long)s->wc_retry,
	       (unsigned long long)s->wc_flush, (unsigned long long)s->wc_other,
	       (unsigned long long)s->recv_success, (unsigned long long)s->recv_bytes,
	       (unsigned long long)s->recv_flush, (unsigned long long)s->recv_data_bad,
	       (unsigned long long)s->chain_wcs, (unsigned long long)s->resets);
	qsort(s->lat_ns, (size_t)s->nlat, sizeof(s->lat_ns[0]), cmp_u64);
	printf("%s timing: qp_num=0x%x latency_us=%u error_every=%u p50_ns=%llu polls=%llu "
	       "empty_polls=%llu\n",
	       s->name, s->self.qp_num, s->latency_us, s->error_every,
	       (unsigned long long)(s->nlat ? s->lat_ns[s->nlat / 2] : 0),
	       (unsigned long long)s->polls, (unsigned long long)s->empty_polls);
	int bad = 0;
	bad += check(s, "send_wr", s->send_wr, 120 + c * n1);
	bad += check(s, "post_send_calls", s->post_send_calls, 111 + c);
	bad += check(s, "send_bytes", s->send_bytes, 1821248 + 1024 * c * n1);
	bad += check(s, "signaled", s->signaled, 120 + c);
	bad += check(s, "recv_wr", s->recv_wr, 8);
	bad += check(s, "post_recv_calls", s->post_recv_calls, 1);
	bad += check(s, "wc_success", s->wc_success, 120 + c - retry - flush);
	bad += check(s, "wc_retry_exc_err", s->wc_retry, retry);
	bad += check(s, "wc_flush_err", s->wc_flush, flush);
	bad += check(s, "wc_other_err", s->wc_other, 0);
	bad += check(s, "recv_success", s->recv_success, 8);
	bad += check(s, "recv_bytes", s->recv_bytes, 4096);
	bad += check(s, "recv_flush", s->recv_flush + s->recv_other, 0);
	bad += check(s, "recv_data_bad", s->recv_data_bad, 0);
	bad += check(s, "chain_wcs", s->chain_wcs, c);
	bad += check(s, "resets", s->resets, retry);
	return bad;
}

/* ---- main ------------------------------------------------------------------ */

static void init_side(struct side *s, const char *name, int conn)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->conn = conn;
	s->latency_us = conn == 0 ? 20 : 200;
	s->error_every = conn == 0 ? 0 : 10;
	s->remote_phase = P_SETUP;
}

static struct ibv_context *open_dev(struct ibv_device **list, int n, int idx, struct ibv_pd **pd)
{
	if (idx >= n)
		die("fewer than 2 RDMA devices (is the stand-in libibverbs loaded?)", ENODEV);
	struct ibv_context *ctx = ibv_open_device(list[idx]);
	if (!ctx)
		die("ibv_open_device", errno);
	*pd = ibv_alloc_pd(ctx);
	if (!*pd)
		die("ibv_alloc_pd", errno);
	return ctx;
}

static void close_dev(struct ibv_context *ctx, struct ibv_pd *pd)
{
	int rc = ibv_dealloc_pd(pd);
	if (rc)
		die("ibv_dealloc_pd", rc);
	if ((rc = ibv_close_device(ctx)))
		die("ibv_close_device", rc);
}

static void full_io(int fd, void *p, size_t n, int writing)
{
	while (n) {
		ssize_t k = writing ? write(fd, p, n) : read(fd, p, n);
		if (k <= 0)
			die(writing ? "write to peer process" : "read from peer process",
			    k < 0 ? errno : EPIPE);
		p = (char *)p + k;
		n -= (size_t)k;
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: rdma_pingpong [--unsignaled-chain N] [--chains C] "
			"[--open-after-ms M] [--settle-ms S] [--fork] [--post-early] [--wait-usr1]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int open_after_ms = 0, use_fork = 0, settle_ms = 0, wait_usr1 = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--unsignaled-chain") && i + 1 < argc)
			chain_n = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--chains") && i + 1 < argc)
			chains = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--open-after-ms") && i + 1 < argc)
			open_after_ms = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--settle-ms") && i + 1 < argc)
			settle_ms = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--fork"))
			use_fork = 1;
		else if (!strcmp(argv[i], "--post-early"))
			post_early = 1;
		else if (!strcmp(argv[i], "--wait-usr1"))
			wait_usr1 = 1;
		else
			usage();
	}
	if (chain_n > MAX_CHAIN - 1 || chains < 0 || open_after_ms < 0)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	if (wait_usr1) /* blocked before it is announced: never its default action */
		sigprocmask(SIG_BLOCK, &usr1, NULL);

	Dl_info self_lib;
	if (dladdr((void *)ibv_get_device_list, &self_lib) && self_lib.dli_fname)
		printf("libibverbs=%s\n", self_lib.dli_fname);

	pid_t child = -1;
	int is_child = 0;
	if (use_fork) {
		int p2c[2], c2p[2];
		if (pipe(p2c) < 0 || pipe(c2p) < 0)
			die("pipe", errno);
		child = fork();
		if (child < 0)
			die("fork", errno);
		is_child = child == 0;
		pipe_in = is_child ? p2c[0] : c2p[0];
		pipe_out = is_child ? c2p[1] : p2c[1];
		close(is_child ? p2c[1] : c2p[1]);
		close(is_child ? c2p[0] : p2c[0]);
	}

	if (wait_usr1 && !is_child) {
		int sig = 0;
		printf("rdma_pingpong: waiting for SIGUSR1\n");
		if (sigwait(&usr1, &sig))
			die("sigwait", EINVAL);
	}
	if (open_after_ms) {
		struct timespec ts = {open_after_ms / 1000, (long)(open_after_ms % 1000) * 1000000};
		nanosleep(&ts, NULL);
	}
	int ndev = 0;
	struct ibv_device **list = ibv_get_device_list(&ndev);
	if (!list)
		die("ibv_get_device_list", errno);

	struct side sides[4];
	int nsides;
	struct ibv_context *ctx[2] = {NULL, NULL};
	struct ibv_pd *pd[2] = {NULL, NULL};
	if (!use_fork) {
		init_side(&sides[0], "A0", 0);
		init_side(&sides[1], "A1", 0);
		init_side(&sides[2], "B0", 1);
		init_side(&sides[3], "B1", 1);
		nsides = 4;
		ctx[0] = open_dev(list, ndev, 0, &pd[0]);
		ctx[1] = open_dev(list, ndev, 1, &pd[1]);
		for (int i = 0; i < 4; i++)
			setup_side(&sides[i], ctx[i % 2], pd[i % 2]);
		for (int i = 0; i < 4; i++) {
			sides[i].peer_local = &sides[i ^ 1];
			sides[i].peer = sides[i ^ 1].self;
		}
	} else {
		init_side(&sides[0], is_child ? "A1" : "A0", 0);
		init_side(&sides[1], is_child ? "B1" : "B0", 1);
		nsides = 2;
		ctx[0] = open_dev(list, ndev, is_child, &pd[0]);
		for (int i = 0; i < 2; i++)
			setup_side(&sides[i], ctx[0], pd[0]);
		struct peer_info mine[2] = {sides[0].self, sides[1].self}, theirs[2];
		full_io(pipe_out, mine, sizeof(mine), 1);
		full_io(pipe_in, theirs, sizeof(theirs), 0);
		for (int i = 0; i < 2; i++)
			sides[i].peer = theirs[i];
		if (fcntl(pipe_in, F_SETFL, O_NONBLOCK) < 0)
			die("fcntl", errno);
	}
	ibv_free_device_list(list);
	for (int i = 0; i < nsides; i++)
		connect_qp(&sides[i], 0);
	if (settle_ms > 0) {
		struct timespec ts = {settle_ms / 1000, (long)(settle_ms % 1000) * 1000000};
		nanosleep(&ts, NULL);
	}

	run(sides, nsides);

	if (child > 0) {
		int status;
		if (waitpid(child, &status, 0) < 0)
			die("waitpid", errno);
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "rdma_pingpong: child failed (status 0x%x)\n", status);
			return 1;
		}
	}
	int bad = 0;
	for (int i = 0; i < nsides; i++)
		bad += report(&sides[i]);
	for (int i = 0; i < nsides; i++)
		teardown_side(&sides[i]);
	for (int i = 0; i < 2; i++)
		if (ctx[i])
			close_dev(ctx[i], pd[i]);
	if (!is_child)
		printf("rdma_pingpong: %s\n", bad ? "MISMATCH" : "ok");
	return bad ? 1 : 0;
}
