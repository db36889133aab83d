/* test_verbs.c: unit test of the fake RDMA stack (samples/verbs/).
 *
 * For: checking that the stand-in has the shape flightrec's RDMA probes
 * rely on (ibv_context.ops points into the provider file at addresses no
 * exported symbol covers; the program links the stand-in, not the system
 * libibverbs) and the verbs semantics rdma_pingpong's numbers rest on
 * (chained unsignaled WRs, FIFO completions, latency, errors and flushes,
 * data movement in one process and across two).  Prints the struct offsets
 * a tracer reads.  Not for: testing real hardware or rdma-core. */
#include <infiniband/verbs.h>

#include <dlfcn.h>
#include <errno.h>
#include <glob.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "verbs/fakerdma.h"

#define PROVIDER_FILE "libfakeprov-rdmav34.so"
#define BUF_BYTES 65536

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	unsigned char *buf;
	uint16_t lid;
	union ibv_gid gid;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

/* The /proc/self/maps line holding addr: path and file offset. */
static int map_of(const void *addr, char *path, size_t path_len, unsigned long long *file_off)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	int found = 0;
	while (f && !found && fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char perms[8];
		int pos = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s%n", &lo, &hi, perms, &off, &pos) < 4)
			continue;
		if ((uintptr_t)addr < lo || (uintptr_t)addr >= hi)
			continue;
		char *p = line + pos;
		while (*p == ' ')
			p++;
		p[strcspn(p, "\n")] = 0;
		snprintf(path, path_len, "%s", p);
		*file_off = (uintptr_t)addr - lo + off;
		found = 1;
	}
	if (f)
		fclose(f);
	return found;
}

static void open_end(struct end *e, struct ibv_device *dev, int max_send_wr)
{
	memset(e, 0, sizeof(*e));
	e->ctx = ibv_open_device(dev);
	CHECK(e->ctx != NULL);
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = ibv_create_cq(e->ctx, 64, NULL, NULL, 0);
	struct ibv_qp_init_attr ia = {
		.send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = (uint32_t)max_send_wr, .max_recv_wr = 8, .max_send_sge = 2,
			.max_recv_sge = 2, .max_inline_data = 64},
	};
	e->qp = ibv_create_qp(e->pd, &ia);
	CHECK(e->pd && e->cq && e->qp);
	e->buf = calloc(1, BUF_BYTES);
	e->mr = ibv_reg_mr(e->pd, e->buf, BUF_BYTES,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	CHECK(e->mr != NULL);
	struct ibv_port_attr pa;
	CHECK(ibv_query_port(e->ctx, 1, &pa) == 0); /* the header's extended path */
	CHECK(pa.state == IBV_PORT_ACTIVE);
	e->lid = pa.lid;
	CHECK(ibv_query_gid(e->ctx, 1, 0, &e->gid) == 0);
}

static void close_end(struct end *e)
{
	CHECK(ibv_destroy_qp(e->qp) == 0);
	CHECK(ibv_dereg_mr(e->mr) == 0);
	CHECK(ibv_destroy_cq(e->cq) == 0);
	CHECK(ibv_dealloc_pd(e->pd) == 0);
	CHECK(ibv_close_device(e->ctx) == 0);
	free(e->buf);
}

static void connect_end(struct end *e, uint32_t dest_qp_num, uint16_t dlid, const union ibv_gid *dgid)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RESET};
	CHECK(ibv_modify_qp(e->qp, &a, IBV_QP_STATE) == 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	/* the kernel's required mask is enforced */
	CHECK(ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_PORT) == EINVAL);
	CHECK(ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					   IBV_QP_ACCESS_FLAGS) == 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest_qp_num;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *dgid;
	a.ah_attr.dlid = dlid;
	a.ah_attr.port_num = 1;
	CHECK(ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					   IBV_QP_MIN_RNR_TIMER) == 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	CHECK(ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) == 0);
	struct ibv_qp_init_attr ia;
	CHECK(ibv_query_qp(e->qp, &a, IBV_QP_STATE, &ia) == 0);
	CHECK(a.qp_state == IBV_QPS_RTS && a.dest_qp_num == dest_qp_num &&
	      a.path_mtu == IBV_MTU_1024 && a.ah_attr.dlid == dlid);
}

static void connect_pair(struct end *a, struct end *b)
{
	connect_end(a, b->qp->qp_num, b->lid, &b->gid);
	connect_end(b, a->qp->qp_num, a->lid, &a->gid);
}

/* Polls until want completions arrived or timeout_us passed. */
static int poll_for(struct ibv_cq *cq, struct ibv_wc *wc, int want, unsigned timeout_us)
{
	int got = 0;
	uint64_t end = now_ns() + (uint64_t)timeout_us * 1000;
	while (got < want && now_ns() < end) {
		int n = ibv_poll_cq(cq, want - got, wc + got);
		if (n < 0)
			return -1;
		got += n;
	}
	return got;
}

static struct ibv_send_wr write_wr(struct end *from, struct end *to, struct ibv_sge *sge,
				   uint64_t wr_id, uint32_t off, uint32_t len, int signaled)
{
	*sge = (struct ibv_sge){.addr = (uintptr_t)from->buf + off, .length = len, .lkey = from->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = wr_id, .sg_list = sge, .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE,
				 .send_flags = signaled ? IBV_SEND_SIGNALED : 0};
	wr.wr.rdma.remote_addr = (uintptr_t)to->buf + off;
	wr.wr.rdma.rkey = to->mr->rkey;
	return wr;
}

static void test_shape(struct ibv_context *ctx)
{
	Dl_info lib, fn;
	CHECK(dladdr((void *)ibv_open_device, &lib) && lib.dli_fname);
	printf("libibverbs: %s\n", lib.dli_fname);
	CHECK(strncmp(lib.dli_fname, "/usr/", 5) != 0 && strncmp(lib.dli_fname, "/lib", 4) != 0);

	struct { const char *name; void *addr; } ops[] = {
		{"post_send", (void *)ctx->ops.post_send},
		{"post_recv", (void *)ctx->ops.post_recv},
		{"poll_cq", (void *)ctx->ops.poll_cq},
		{"req_notify_cq", (void *)ctx->ops.req_notify_cq},
	};
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		CHECK(ops[i].addr != NULL);
		memset(&fn, 0, sizeof(fn));
		CHECK(dladdr(ops[i].addr, &fn) != 0);
		CHECK(fn.dli_sname == NULL); /* no exported symbol covers it */
		CHECK(fn.dli_fname && ends_with(fn.dli_fname, "/" PROVIDER_FILE));
		CHECK(fn.dli_fname && strcmp(fn.dli_fname, lib.dli_fname) != 0);
		char path[4096] = "";
		unsigned long long off = 0;
		CHECK(map_of(ops[i].addr, path, sizeof(path), &off));
		CHECK(ends_with(path, "/" PROVIDER_FILE));
		printf("ops.%s = %p: %s+0x%llx (dladdr symbol: %s)\n", ops[i].name, ops[i].addr, path,
		       off, fn.dli_sname ? fn.dli_sname : "none");
	}
	/* the provider exports only its init entry */
	CHECK(dladdr((void *)ctx->ops.post_send, &fn) && fn.dli_fname);
	void *prov = dlopen(fn.dli_fname, RTLD_NOW | RTLD_NOLOAD);
	CHECK(prov != NULL);
	if (prov) {
		CHECK(dlsym(prov, "fakeprov_init") != NULL);
		CHECK(dlsym(prov, "fp_post_send") == NULL);
		CHECK(dlsym(prov, "fp_poll_cq") == NULL);
		dlclose(prov);
	}
	CHECK(dlsym(RTLD_DEFAULT, "fp_post_send") == NULL);
	/* an extended context, as rdma-core's */
	CHECK(ctx->abi_compat == __VERBS_ABI_IS_EXTENDED);
	struct verbs_context *vctx = verbs_get_ctx(ctx);
	CHECK(vctx && vctx->sz == sizeof(*vctx) && vctx->query_port != NULL);

	printf("offsetof(struct verbs_context, context) = %zu\n", offsetof(struct verbs_context, context));
	printf("offsetof(struct ibv_context, device) = %zu\n", offsetof(struct ibv_context, device));
	printf("offsetof(struct ibv_context, ops) = %zu\n", offsetof(struct ibv_context, ops));
	printf("offsetof(struct ibv_context, ops.poll_cq) = %zu\n", offsetof(struct ibv_context, ops.poll_cq));
	printf("offsetof(struct ibv_context, ops.req_notify_cq) = %zu\n", offsetof(struct ibv_context, ops.req_notify_cq));
	printf("offsetof(struct ibv_context, ops.post_send) = %zu\n", offsetof(struct ibv_context, ops.post_send));
	printf("offsetof(struct ibv_context, ops.post_recv) = %zu\n", offsetof(struct ibv_context, ops.post_recv));
	printf("offsetof(struct ibv_context, abi_compat) = %zu\n", offsetof(struct ibv_context, abi_compat));
	printf("offsetof(struct ibv_qp, context) = %zu\n", offsetof(struct ibv_qp, context));
	printf("offsetof(struct ibv_qp, qp_num) = %zu\n", offsetof(struct ibv_qp, qp_num));
	printf("offsetof(struct ibv_qp, state) = %zu\n", offsetof(struct ibv_qp, state));
	printf("offsetof(struct ibv_cq, context) = %zu\n", offsetof(struct ibv_cq, context));
	printf("offsetof(struct ibv_mr, lkey) = %zu\n", offsetof(struct ibv_mr, lkey));
	printf("offsetof(struct ibv_mr, rkey) = %zu\n", offsetof(struct ibv_mr, rkey));
	printf("offsetof(struct ibv_send_wr, next/sg_list/num_sge/opcode/send_flags) = %zu/%zu/%zu/%zu/%zu\n",
	       offsetof(struct ibv_send_wr, next), offsetof(struct ibv_send_wr, sg_list),
	       offsetof(struct ibv_send_wr, num_sge), offsetof(struct ibv_send_wr, opcode),
	       offsetof(struct ibv_send_wr, send_flags));
	printf("offsetof(struct ibv_wc, status/opcode/byte_len/qp_num/src_qp) = %zu/%zu/%zu/%zu/%zu, sizeof = %zu\n",
	       offsetof(struct ibv_wc, status), offsetof(struct ibv_wc, opcode),
	       offsetof(struct ibv_wc, byte_len), offsetof(struct ibv_wc, qp_num),
	       offsetof(struct ibv_wc, src_qp), sizeof(struct ibv_wc));
}

/* N unsignaled + 1 signaled in one call: one completion, after the latency. */
static void test_chain(struct end *a, struct end *b)
{
	enum { N = 5, LAT_US = 300 };
	CHECK(fakerdma_set_qp_latency(a->qp, LAT_US) == 0);
	struct ibv_sge sge[N + 1];
	struct ibv_send_wr wr[N + 1], *bad = NULL;
	for (int i = 0; i <= N; i++) {
		memset(a->buf + i * 1024, 0xa0 + i, 1024);
		wr[i] = write_wr(a, b, &sge[i], 100 + i, (uint32_t)i * 1024, 1024, i == N);
		wr[i].next = i < N ? &wr[i + 1] : NULL;
	}
	uint64_t t0 = now_ns();
	CHECK(ibv_post_send(a->qp, wr, &bad) == 0);
	struct ibv_wc wc[4];
	CHECK(ibv_poll_cq(a->cq, 4, wc) == 0); /* not yet */
	int got = poll_for(a->cq, wc, 1, 100000);
	uint64_t dt = now_ns() - t0;
	CHECK(got == 1);
	CHECK(dt >= LAT_US * 1000ull);
	CHECK_EQ_U64(wc[0].wr_id, 100 + N);
	CHECK(wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_RDMA_WRITE);
	CHECK_EQ_U64(wc[0].qp_num, a->qp->qp_num);
	CHECK(poll_for(a->cq, wc, 1, 3 * LAT_US) == 0); /* nothing for the unsignaled ones */
	for (int i = 0; i <= N; i++)
		CHECK(b->buf[i * 1024] == 0xa0 + i && b->buf[i * 1024 + 1023] == 0xa0 + i);
	CHECK(fakerdma_set_qp_latency(a->qp, 10) == 0);
}

/* SEND/RECV with and without immediate, WRITE_WITH_IMM, READ. */
static void test_ops(struct end *a, struct end *b)
{
	struct ibv_sge rs[2] = {{.addr = (uintptr_t)b->buf + 32768, .length = 100, .lkey = b->mr->lkey},
				{.addr = (uintptr_t)b->buf + 40960, .length = 100, .lkey = b->mr->lkey}};
	struct ibv_recv_wr rw[3] = {{.wr_id = 1, .next = &rw[1], .sg_list = rs, .num_sge = 2},
				    {.wr_id = 2, .next = &rw[2], .sg_list = NULL, .num_sge = 0},
				    {.wr_id = 3, .sg_list = NULL, .num_sge = 0}},
			  *rbad = NULL;
	CHECK(ibv_post_recv(b->qp, rw, &rbad) == 0);
	memset(a->buf, 0x11, 150);
	struct ibv_sge s = {.addr = (uintptr_t)a->buf, .length = 150, .lkey = a->mr->lkey};
	struct ibv_send_wr w = {.wr_id = 7, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
				.send_flags = IBV_SEND_SIGNALED}, *bad = NULL;
	CHECK(ibv_post_send(a->qp, &w, &bad) == 0);
	struct ibv_sge z = {.addr = (uintptr_t)a->buf, .length = 0, .lkey = a->mr->lkey};
	w = (struct ibv_send_wr){.wr_id = 8, .sg_list = &z, .num_sge = 1,
				 .opcode = IBV_WR_SEND_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
				 .imm_data = htobe32(0x1234)};
	CHECK(ibv_post_send(a->qp, &w, &bad) == 0);
	struct ibv_sge ws;
	w = write_wr(a, b, &ws, 9, 1024, 64, 1);
	w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	w.imm_data = htobe32(0x5678);
	CHECK(ibv_post_send(a->qp, &w, &bad) == 0);
	struct ibv_wc wc[8];
	CHECK(poll_for(a->cq, wc, 3, 100000) == 3);
	CHECK(wc[0].wr_id == 7 && wc[1].wr_id == 8 && wc[2].wr_id == 9);
	CHECK(wc[0].opcode == IBV_WC_SEND && wc[2].opcode == IBV_WC_RDMA_WRITE);
	CHECK(poll_for(b->cq, wc, 3, 100000) == 3);
	CHECK(wc[0].wr_id == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].byte_len == 150);
	CHECK(wc[0].opcode == IBV_WC_RECV && wc[0].src_qp == a->qp->qp_num && !wc[0].wc_flags);
	CHECK(wc[0].qp_num == b->qp->qp_num);
	CHECK(b->buf[32768 + 99] == 0x11 && b->buf[40960 + 49] == 0x11 && b->buf[40960 + 50] == 0);
	CHECK(wc[1].wr_id == 2 && wc[1].wc_flags == IBV_WC_WITH_IMM && be32toh(wc[1].imm_data) == 0x1234);
	CHECK(wc[2].wr_id == 3 && wc[2].opcode == IBV_WC_RECV_RDMA_WITH_IMM && wc[2].byte_len == 64);

	/* READ b -> a */
	memset(b->buf + 8192, 0x77, 300);
	struct ibv_sge r = {.addr = (uintptr_t)a->buf + 8192, .length = 300, .lkey = a->mr->lkey};
	w = (struct ibv_send_wr){.wr_id = 10, .sg_list = &r, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
				 .send_flags = IBV_SEND_SIGNALED};
	w.wr.rdma.remote_addr = (uintptr_t)b->buf + 8192;
	w.wr.rdma.rkey = b->mr->rkey;
	CHECK(ibv_post_send(a->qp, &w, &bad) == 0);
	CHECK(poll_for(a->cq, wc, 1, 100000) == 1);
	CHECK(wc[0].opcode == IBV_WC_RDMA_READ && wc[0].byte_len == 300 && a->buf[8192 + 299] == 0x77);
}

/* Every 2nd signaled WR fails; the QP flushes until reset. */
static void test_errors(struct end *a, struct end *b)
{
	CHECK(fakerdma_set_qp_error_every(a->qp, 2) == 0);
	struct ibv_sge rs = {.addr = (uintptr_t)a->buf + 60000, .length = 16, .lkey = a->mr->lkey};
	struct ibv_recv_wr rw = {.wr_id = 50, .sg_list = &rs, .num_sge = 1}, *rbad;
	CHECK(ibv_post_recv(a->qp, &rw, &rbad) == 0);
	struct ibv_sge sge[4];
	struct ibv_send_wr wr[4], *bad = NULL;
	for (int i = 0; i < 4; i++) {
		wr[i] = write_wr(a, b, &sge[i], 60 + i, 0, 128, i != 2); /* WR 62 unsignaled */
		wr[i].next = i < 3 ? &wr[i + 1] : NULL;
	}
	CHECK(ibv_post_send(a->qp, wr, &bad) == 0);
	struct ibv_wc wc[8];
	int n = poll_for(a->cq, wc, 5, 100000);
	CHECK_EQ_U64(n, 5);
	/* 60 ok, 61 fails (2nd signaled), 62 (unsignaled) and 63 flushed, recv flushed */
	int seen_retry = 0, seen_flush = 0, seen_recv_flush = 0;
	for (int i = 0; i < n; i++) {
		if (wc[i].wr_id == 60)
			CHECK(wc[i].status == IBV_WC_SUCCESS);
		else if (wc[i].wr_id == 61)
			seen_retry += wc[i].status == IBV_WC_RETRY_EXC_ERR;
		else if (wc[i].wr_id == 62 || wc[i].wr_id == 63)
			seen_flush += wc[i].status == IBV_WC_WR_FLUSH_ERR;
		else if (wc[i].wr_id == 50)
			seen_recv_flush += wc[i].status == IBV_WC_WR_FLUSH_ERR;
	}
	CHECK(seen_retry == 1 && seen_flush == 2 && seen_recv_flush == 1);
	CHECK(a->qp->state == IBV_QPS_ERR);
	wr[0].next = NULL;
	CHECK(ibv_post_send(a->qp, wr, &bad) == 0); /* posted in ERR: flushed */
	CHECK(poll_for(a->cq, wc, 1, 100000) == 1 && wc[0].status == IBV_WC_WR_FLUSH_ERR);
	CHECK(fakerdma_set_qp_error_every(a->qp, 0) == 0);
	connect_end(a, b->qp->qp_num, b->lid, &b->gid);
	/* unsignaled but failing (bad rkey): a completion anyway */
	wr[0].send_flags = 0;
	wr[0].wr.rdma.rkey = 0xdead;
	CHECK(ibv_post_send(a->qp, wr, &bad) == 0);
	CHECK(poll_for(a->cq, wc, 1, 100000) == 1 && wc[0].status == IBV_WC_REM_ACCESS_ERR);
	connect_end(a, b->qp->qp_num, b->lid, &b->gid);
	/* a QP before RTS refuses posts */
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_RESET};
	CHECK(ibv_modify_qp(a->qp, &attr, IBV_QP_STATE) == 0);
	CHECK(ibv_post_send(a->qp, wr, &bad) == EINVAL && bad == wr);
	connect_end(a, b->qp->qp_num, b->lid, &b->gid);
}

/* A child process writes and sends into our QP through the shm ring. */
static void test_cross_process(struct ibv_device **devs)
{
	int up[2], down[2];
	CHECK(pipe(up) == 0 && pipe(down) == 0);
	struct info { uint32_t qp_num; uint16_t lid; union ibv_gid gid; uint64_t addr; uint32_t rkey; } mine, theirs;
	pid_t pid = fork();
	if (pid == 0) {
		struct end c;
		open_end(&c, devs[1], 16);
		mine = (struct info){c.qp->qp_num, c.lid, c.gid, (uintptr_t)c.buf, c.mr->rkey};
		if (write(up[1], &mine, sizeof(mine)) != sizeof(mine) ||
		    read(down[0], &theirs, sizeof(theirs)) != sizeof(theirs))
			_exit(3);
		connect_end(&c, theirs.qp_num, theirs.lid, &theirs.gid);
		memset(c.buf, 0x3c, 4096);
		struct ibv_sge s[2] = {{.addr = (uintptr_t)c.buf, .length = 4096, .lkey = c.mr->lkey},
				       {.addr = (uintptr_t)c.buf, .length = 64, .lkey = c.mr->lkey}};
		struct ibv_send_wr w[2] = {{.wr_id = 1, .next = &w[1], .sg_list = &s[0], .num_sge = 1,
					    .opcode = IBV_WR_RDMA_WRITE},
					   {.wr_id = 2, .sg_list = &s[1], .num_sge = 1,
					    .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED}},
				  *bad;
		w[0].wr.rdma.remote_addr = theirs.addr + 4096;
		w[0].wr.rdma.rkey = theirs.rkey;
		struct ibv_send_wr r = {.wr_id = 3, .sg_list = &s[0], .num_sge = 1,
					.opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED};
		struct ibv_wc wc;
		int ok = ibv_post_send(c.qp, w, &bad) == 0 && poll_for(c.cq, &wc, 1, 1000000) == 1 &&
			 wc.wr_id == 2 && wc.status == IBV_WC_SUCCESS &&
			 ibv_post_send(c.qp, &r, &bad) == EOPNOTSUPP; /* READ needs one process */
		char done;
		if (read(down[0], &done, 1) != 1) /* the parent has checked */
			ok = 0;
		close_end(&c);
		_exit(ok && !check_failures ? 0 : 1);
	}
	struct end p;
	open_end(&p, devs[0], 16);
	mine = (struct info){p.qp->qp_num, p.lid, p.gid, (uintptr_t)p.buf, p.mr->rkey};
	CHECK(read(up[0], &theirs, sizeof(theirs)) == sizeof(theirs));
	struct ibv_sge rs = {.addr = (uintptr_t)p.buf, .length = 256, .lkey = p.mr->lkey};
	struct ibv_recv_wr rw = {.wr_id = 77, .sg_list = &rs, .num_sge = 1}, *rbad;
	CHECK(ibv_post_recv(p.qp, &rw, &rbad) == EINVAL); /* not in RESET */
	connect_end(&p, theirs.qp_num, theirs.lid, &theirs.gid);
	CHECK(ibv_post_recv(p.qp, &rw, &rbad) == 0);
	CHECK(write(down[1], &mine, sizeof(mine)) == sizeof(mine));
	struct ibv_wc wc;
	CHECK(poll_for(p.cq, &wc, 1, 2000000) == 1);
	CHECK(wc.wr_id == 77 && wc.status == IBV_WC_SUCCESS && wc.byte_len == 64);
	CHECK(wc.src_qp == theirs.qp_num && wc.slid == theirs.lid);
	CHECK(p.buf[0] == 0x3c && p.buf[63] == 0x3c && p.buf[64] == 0);
	CHECK(p.buf[4096] == 0x3c && p.buf[8191] == 0x3c && p.buf[8192] == 0); /* the WRITE */
	CHECK(write(down[1], "x", 1) == 1);
	int status = 0;
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close_end(&p);
}

int main(void)
{
	const char *shm = getenv("FLIGHTREC_FAKE_RDMA_SHM");
	if (!shm) {
		static char name[64];
		snprintf(name, sizeof(name), "flightrec-fakerdma-test-%d", (int)getpid());
		setenv("FLIGHTREC_FAKE_RDMA_SHM", name, 1);
		shm = name;
	}
	int n = 0;
	struct ibv_device **devs = ibv_get_device_list(&n);
	CHECK(devs != NULL && n == 2);
	if (!devs || n < 2)
		return check_finish();
	CHECK_STR(ibv_get_device_name(devs[0]), "fakerdma0");
	CHECK_STR(ibv_get_device_name(devs[1]), "fakerdma1");
	CHECK(ibv_get_device_guid(devs[0]) != ibv_get_device_guid(devs[1]));

	struct end a, b;
	open_end(&a, devs[0], 16);
	open_end(&b, devs[1], 16);
	CHECK(a.qp->qp_num != b.qp->qp_num && a.lid != b.lid);
	test_shape(a.ctx);
	connect_pair(&a, &b);
	test_chain(&a, &b);
	test_ops(&a, &b);
	test_errors(&a, &b);
	close_end(&a);
	close_end(&b);
	test_cross_process(devs);
	ibv_free_device_list(devs);

	/* registry and rings cleaned up */
	char path[256];
	snprintf(path, sizeof(path), "/dev/shm/%s", shm);
	CHECK(access(path, F_OK) != 0);
	snprintf(path, sizeof(path), "/dev/shm/%s-qp*", shm);
	glob_t g;
	CHECK(glob(path, 0, NULL, &g) == GLOB_NOMATCH);
	return check_finish();
}
