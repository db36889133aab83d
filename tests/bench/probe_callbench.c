/* Times N iterations of one probed call (or call pair) on the stand-in
 * libraries and prints the mean nanoseconds per iteration: the workload of
 * bench_probes.py, as cuda_callbench is bench_cuda.py's.  Libraries are
 * dlopened from the paths given, so a recorder's --lib attaches to the same
 * copy.
 *
 *   nccl-allreduce LIBNCCL   ncclAllReduce of 0 elements on a 1-rank
 *                            communicator (ncclCommInitAll): the probe on a
 *                            collective call, without the stand-in's barrier
 *                            or simulated transfer time
 *   nccl-group LIBNCCL       ncclGroupStart + ncclGroupEnd, empty group
 *   verbs-post-poll LIBIBVERBS  ibv_post_send (signaled 64-byte RDMA WRITE on
 *                            an RC QP connected to itself) + ibv_poll_cq until
 *                            its completion; provider latency 0, so one poll
 *                            in the common case (the data path, reached
 *                            through the context's ops table)
 *   verbs-reg-dereg LIBIBVERBS  ibv_reg_mr + ibv_dereg_mr of 4 KiB
 *   cuda-launch LIBCUDART    cudaLaunchKernel, 1x1 grid, legacy stream
 *
 * Not for: correctness (results are checked only enough to notice a broken
 * setup).  Before timing, the program makes a few warm-up calls and sleeps
 * WARMUP_MS so that a recorder attaching asynchronously (the verbs data path
 * is attached after ibv_open_device returns) is in place.
 *
 * usage: probe_callbench MODE LIB [ITERS] */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if __has_include(<infiniband/verbs.h>)
#include <infiniband/verbs.h>
#define HAVE_VERBS 1
#endif

#define WARMUP_CALLS 1000
#define WARMUP_MS 300

static void *sym(void *h, const char *name)
{
	void *p = dlsym(h, name);
	if (!p) {
		fprintf(stderr, "probe_callbench: no %s in the library\n", name);
		exit(1);
	}
	return p;
}

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void settle(void)
{
	struct timespec ms = {0, WARMUP_MS * 1000000L};
	nanosleep(&ms, NULL);
}

/* one iteration of the timed loop; returns nonzero on failure */
typedef int (*iter_fn)(void);

static double time_iters(iter_fn f, long iters)
{
	for (int i = 0; i < WARMUP_CALLS; i++)
		if (f()) {
			fprintf(stderr, "probe_callbench: warm-up call failed\n");
			exit(1);
		}
	settle();
	uint64_t a = now_ns();
	for (long i = 0; i < iters; i++)
		if (f()) {
			fprintf(stderr, "probe_callbench: call %ld failed\n", i);
			exit(1);
		}
	return (double)(now_ns() - a) / (double)iters;
}

/* ---- nccl ------------------------------------------------------------- */

static int (*nccl_all_reduce)(const void *, void *, size_t, int, int, void *, void *);
static int (*nccl_group_start)(void);
static int (*nccl_group_end)(void);
static void *nccl_comm;
static float nccl_buf[1];

static int iter_allreduce(void)
{
	return nccl_all_reduce(nccl_buf, nccl_buf, 0, 7 /* ncclFloat32 */, 0 /* ncclSum */,
			       nccl_comm, NULL);
}

static int iter_group(void)
{
	return nccl_group_start() | nccl_group_end();
}

static void nccl_setup(void *h)
{
	int (*init_all)(void **, int, const int *) = sym(h, "ncclCommInitAll");
	nccl_all_reduce = sym(h, "ncclAllReduce");
	nccl_group_start = sym(h, "ncclGroupStart");
	nccl_group_end = sym(h, "ncclGroupEnd");
	int rc = init_all(&nccl_comm, 1, NULL);
	if (rc) {
		fprintf(stderr, "probe_callbench: ncclCommInitAll(1 rank): %d\n", rc);
		exit(1);
	}
}

/* ---- cuda ------------------------------------------------------------- */

struct dim3 {
	unsigned x, y, z;
};
static int (*cuda_launch)(const void *, struct dim3, struct dim3, void **, size_t, void *);

static __attribute__((noinline)) void kernel_stub(void)
{
	__asm__ volatile("");
}

static int iter_launch(void)
{
	struct dim3 one = {1, 1, 1};
	return cuda_launch((const void *)kernel_stub, one, one, NULL, 0, NULL);
}

/* ---- verbs ------------------------------------------------------------ */

#ifdef HAVE_VERBS
static struct ibv_mr *(*verbs_reg_mr)(struct ibv_pd *, void *, size_t, int);
static int (*verbs_dereg_mr)(struct ibv_mr *);
static struct ibv_pd *verbs_pd;
static struct ibv_qp *verbs_qp;
static struct ibv_cq *verbs_cq;
static struct ibv_mr *verbs_mr;
/* one registration: bytes 0..63 are the source, the second page the target */
static char verbs_buf[8192] __attribute__((aligned(4096)));
static uint64_t verbs_wr_id;

static int iter_post_poll(void)
{
	struct ibv_sge sge = {(uintptr_t)verbs_buf, 64, verbs_mr->lkey};
	struct ibv_send_wr wr = {
		.wr_id = ++verbs_wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = {(uintptr_t)verbs_buf + 4096, verbs_mr->rkey},
	}, *bad;
	/* what the header's static inline ibv_post_send / ibv_poll_cq do */
	struct ibv_context *ctx = verbs_qp->context;
	if (ctx->ops.post_send(verbs_qp, &wr, &bad))
		return 1;
	struct ibv_wc wc;
	int n;
	while ((n = ctx->ops.poll_cq(verbs_cq, 1, &wc)) == 0)
		;
	return n != 1 || wc.status != IBV_WC_SUCCESS || wc.wr_id != verbs_wr_id;
}

static char reg_buf[4096] __attribute__((aligned(4096)));

static int iter_reg_dereg(void)
{
	struct ibv_mr *mr = verbs_reg_mr(verbs_pd, reg_buf, sizeof reg_buf, IBV_ACCESS_LOCAL_WRITE);
	return !mr || verbs_dereg_mr(mr);
}

static void verbs_modify(int (*modify)(struct ibv_qp *, struct ibv_qp_attr *, int),
			 struct ibv_qp_attr *a, int mask, const char *what)
{
	int rc = modify(verbs_qp, a, mask);
	if (rc) {
		fprintf(stderr, "probe_callbench: ibv_modify_qp %s: %d\n", what, rc);
		exit(1);
	}
}

static void verbs_setup(void *h)
{
	struct ibv_device **(*get_list)(int *) = sym(h, "ibv_get_device_list");
	struct ibv_context *(*open_dev)(struct ibv_device *) = sym(h, "ibv_open_device");
	struct ibv_pd *(*alloc_pd)(struct ibv_context *) = sym(h, "ibv_alloc_pd");
	struct ibv_cq *(*create_cq)(struct ibv_context *, int, void *, struct ibv_comp_channel *,
				    int) = sym(h, "ibv_create_cq");
	struct ibv_qp *(*create_qp)(struct ibv_pd *, struct ibv_qp_init_attr *) =
		sym(h, "ibv_create_qp");
	int (*modify)(struct ibv_qp *, struct ibv_qp_attr *, int) = sym(h, "ibv_modify_qp");
	int (*query_port)(struct ibv_context *, uint8_t, struct ibv_port_attr *) =
		sym(h, "ibv_query_port");
	int (*query_gid)(struct ibv_context *, uint8_t, int, union ibv_gid *) =
		sym(h, "ibv_query_gid");
	verbs_reg_mr = sym(h, "ibv_reg_mr");
	verbs_dereg_mr = sym(h, "ibv_dereg_mr");

	int n = 0;
	struct ibv_device **list = get_list(&n);
	struct ibv_context *ctx = list && n > 0 ? open_dev(list[0]) : NULL;
	verbs_pd = ctx ? alloc_pd(ctx) : NULL;
	verbs_cq = ctx ? create_cq(ctx, 256, NULL, NULL, 0) : NULL;
	struct ibv_qp_init_attr ia = {
		.send_cq = verbs_cq, .recv_cq = verbs_cq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 256, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1},
	};
	verbs_qp = verbs_pd && verbs_cq ? create_qp(verbs_pd, &ia) : NULL;
	verbs_mr = verbs_pd ? verbs_reg_mr(verbs_pd, verbs_buf, sizeof verbs_buf,
					   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) : NULL;
	if (!verbs_qp || !verbs_mr) {
		fprintf(stderr, "probe_callbench: cannot set up the fake verbs device\n");
		exit(1);
	}
	struct ibv_port_attr pa;
	union ibv_gid gid;
	if (query_port(ctx, 1, &pa) || query_gid(ctx, 1, 0, &gid)) {
		fprintf(stderr, "probe_callbench: ibv_query_port/gid failed\n");
		exit(1);
	}
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1,
				.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE};
	verbs_modify(modify, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			 IBV_QP_ACCESS_FLAGS, "INIT");
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_4096;
	a.dest_qp_num = verbs_qp->qp_num; /* connected to itself */
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	memcpy(a.ah_attr.grh.dgid.raw, gid.raw, 16);
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.dlid = pa.lid;
	a.ah_attr.port_num = 1;
	verbs_modify(modify, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER, "RTR");
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	verbs_modify(modify, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			 IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC, "RTS");
}
#endif

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: probe_callbench MODE LIB [ITERS]\n");
		return 2;
	}
	const char *mode = argv[1];
	long iters = argc > 3 ? atol(argv[3]) : 100000;
	void *h = dlopen(argv[2], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "probe_callbench: %s\n", dlerror());
		return 1;
	}
	iter_fn f = NULL;
	if (!strcmp(mode, "nccl-allreduce") || !strcmp(mode, "nccl-group")) {
		nccl_setup(h);
		f = mode[5] == 'a' ? iter_allreduce : iter_group;
	} else if (!strcmp(mode, "cuda-launch")) {
		cuda_launch = sym(h, "cudaLaunchKernel");
		f = iter_launch;
#ifdef HAVE_VERBS
	} else if (!strcmp(mode, "verbs-post-poll") || !strcmp(mode, "verbs-reg-dereg")) {
		verbs_setup(h);
		f = mode[6] == 'p' ? iter_post_poll : iter_reg_dereg;
#endif
	} else {
		fprintf(stderr, "probe_callbench: unknown mode %s\n", mode);
		return 2;
	}
	printf("probe_callbench %s: %.1f ns per iteration\n", mode, time_iters(f, iters));
	return 0;
}
