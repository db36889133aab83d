/* The RDMA model and `rdma` command on synthetic traces: FIFO pairing per
 * queue (also with repeated wr_ids and a completion written before its
 * post), an unsignaled chain retired by one signaled completion, error
 * completions by status and class with flushes apart, receives, unmatched
 * completions, rejected posts, truncated chains, RESET and QP number reuse,
 * percentiles against exact nearest-rank values, joining the two ends
 * across files by QP numbers and GIDs (also when QP numbers repeat across
 * nodes), port counters and empty polls, and the command's text and JSON. */
#include "check.h"
#include "test_analyzer_synth.h"

#include "commands.h"
#include "model_rdma.h"
#include "trace_set.h"

#define US(x) (1000000000ull + (uint64_t)(x) * 1000ull) /* x us after the start */

enum { WR_RDMA_WRITE = 0, WR_SEND = 2, WC_RDMA_WRITE = 1, WC_RECV = 128 };
#define SIG FR_RDMA_POST_SIGNALED
#define RECV FR_RDMA_POST_RECV

static int rdma_open(struct synth *s, const char *path, const char *host)
{
	static const char *const argv[] = { "rdma_job" };
	struct frec_file_info info = {
		.host = host, .argv = argv, .argc = 1,
		.start_mono_ns = 1000000000ull, .start_real_ns = 1714564800123000000ull,
	};
	struct frec_writer_opts opts = { .codec = FR_CODEC_ZSTD, .level = 1 };
	opts.schema = fr_schema_table(&opts.n_schema);
	struct frec_error err;
	memset(s, 0, sizeof(*s));
	s->ts_ns = 1000000000ull;
	if (frec_writer_open(path, &info, &opts, &s->w, &err)) {
		fprintf(stderr, "rdma_open %s: %s\n", path, err.what);
		return -1;
	}
	s->ev = frec_builder_new(s->w, FR_CHUNK_EVENTS);
	s->meta = frec_builder_new(s->w, FR_CHUNK_META);
	return s->ev && s->meta ? 0 : -1;
}

/* Clean close with the rdma probe counters in the END record. */
static int rdma_close(struct synth *s, uint64_t idle_polls)
{
	frec_builder_free(s->ev);
	frec_builder_free(s->meta);
	struct fr_end end = { .end_mono_ns = s->ts_ns + 1000000ull,
			      .end_real_ns = 1714564800123000000ull + (s->ts_ns - 1000000000ull) };
	struct fr_probe_stats p[2] = { { .events = 100 }, { .events = idle_polls } };
	strcpy(p[0].name, "rdma");
	strcpy(p[1].name, "rdma_idle_polls");
	struct frec_error err;
	if (frec_writer_close(s->w, &end, p, 2, &err)) {
		fprintf(stderr, "rdma_close: %s\n", err.what);
		return -1;
	}
	return 0;
}

static void bump(struct synth *s, uint64_t ts)
{
	if (ts > s->ts_ns)
		s->ts_ns = ts;
}

static void post(struct synth *s, uint32_t pid, uint32_t qp, uint64_t ts, uint64_t wr_id,
		 uint64_t bytes, uint32_t opcode, uint16_t flags, uint16_t wr_index)
{
	struct fr_ev_rdma_post e = { .c = { .ts_ns = ts, .pid = pid, .tid = pid }, .wr_id = wr_id,
				     .bytes = bytes, .qp_num = qp, .opcode = opcode, .num_sge = 1,
				     .flags = flags, .wr_index = wr_index };
	bump(s, ts);
	synth_raw(s->ev, &e, sizeof(e), FR_EV_RDMA_POST, ts);
}

static void cqe(struct synth *s, uint32_t pid, uint32_t qp, uint64_t ts, uint64_t wr_id,
		uint32_t status, uint32_t opcode, uint32_t byte_len)
{
	struct fr_ev_rdma_cqe e = { .c = { .ts_ns = ts, .pid = pid, .tid = pid + 1 },
				    .wr_id = wr_id, .status = status, .opcode = opcode,
				    .byte_len = byte_len, .qp_num = qp, .cq = 0x5000 };
	bump(s, ts);
	synth_raw(s->ev, &e, sizeof(e), FR_EV_RDMA_CQE, ts);
}

static void ctrl(struct synth *s, uint32_t pid, uint32_t qp, uint64_t ts, uint16_t func,
		 uint32_t state, uint32_t dest, uint8_t gid_tag)
{
	struct fr_ev_rdma_ctrl e = { .c = { .ts_ns = ts, .pid = pid, .tid = pid }, .func = func,
				     .qp_num = qp, .qp_state = state, .dest_qp_num = dest,
				     .path_mtu = 5, .dlid = gid_tag, .port_num = 1 };
	if (gid_tag) {
		e.gid[0] = 0xfe;
		e.gid[1] = 0x80;
		e.gid[15] = gid_tag;
	}
	bump(s, ts);
	synth_raw(s->ev, &e, sizeof(e), FR_EV_RDMA_CTRL, ts);
}

static void rtr(struct synth *s, uint32_t pid, uint32_t qp, uint64_t ts, uint32_t dest,
		uint8_t gid_tag)
{
	ctrl(s, pid, qp, ts, FR_RDMA_MODIFY_QP, 2, dest, gid_tag);
}

/* The launcher environment of pid: RANK=rank. */
static void proc_env(struct synth *s, uint32_t pid, int rank)
{
	char env[32];
	int len = snprintf(env, sizeof(env), "RANK=%d", rank) + 1;
	uint8_t buf[sizeof(struct fr_rec_proc_env) + 32] = { 0 };
	struct fr_rec_proc_env r = { .ts_ns = s->ts_ns, .pid = pid, .len = (uint32_t)len };
	memcpy(buf, &r, sizeof(r));
	memcpy(buf + sizeof(r), env, (size_t)len);
	synth_raw(s->meta, buf, FR_ALIGN8((uint32_t)(sizeof(r) + (size_t)len)), FR_REC_PROC_ENV,
		  s->ts_ns);
}

static void counters(struct synth *s, uint64_t ts, uint64_t interval_ns, uint64_t rnr,
		     uint64_t oos)
{
	uint8_t buf[sizeof(struct fr_rec_rdma_counters) + 2 * sizeof(struct fr_rdma_counter)] = { 0 };
	struct fr_rec_rdma_counters r = { .ts_ns = ts, .interval_ns = interval_ns, .n = 2 };
	struct fr_rdma_counter c[2] = { { .delta = rnr }, { .delta = oos } };
	strcpy(c[0].name, "mlx5_0/1/rnr_nak_retry_err");
	strcpy(c[1].name, "mlx5_0/1/out_of_sequence");
	memcpy(buf, &r, sizeof(r));
	memcpy(buf + sizeof(r), c, sizeof(c));
	synth_raw(s->meta, buf, sizeof(buf), FR_REC_RDMA_COUNTERS, ts);
}

/* ---- the main trace: pid 100 on node-a, QPs 17 <-> 18, and 19 ---------- */

static int write_main(const char *path)
{
	struct synth s;
	if (rdma_open(&s, path, "node-a"))
		return -1;
	synth_process(&s, 100, 1, "trainer", "python train.py");
	ctrl(&s, 100, 17, US(1), FR_RDMA_CREATE_QP, 0, 0, 0);
	ctrl(&s, 100, 18, US(2), FR_RDMA_CREATE_QP, 0, 0, 0);
	rtr(&s, 100, 17, US(10), 18, 0xb1);
	rtr(&s, 100, 18, US(11), 17, 0xa1);

	/* 1. FIFO: three signaled writes; the first completion is written
	 * before its post (the post event comes at the call's return) */
	cqe(&s, 100, 17, US(1010), 1, 0, WC_RDMA_WRITE, 0);
	post(&s, 100, 17, US(1000), 1, 100, WR_RDMA_WRITE, SIG, 0);
	post(&s, 100, 17, US(1001), 2, 5000, WR_RDMA_WRITE, SIG, 0);
	post(&s, 100, 17, US(1002), 3, 70000, WR_RDMA_WRITE, SIG, 0);
	cqe(&s, 100, 17, US(1020), 2, 0, WC_RDMA_WRITE, 0);
	cqe(&s, 100, 17, US(1030), 3, 0, WC_RDMA_WRITE, 0);
	/* 2. a repeated wr_id retires the oldest first */
	post(&s, 100, 17, US(2000), 7, 64, WR_RDMA_WRITE, SIG, 0);
	post(&s, 100, 17, US(2001), 7, 128, WR_RDMA_WRITE, SIG, 0);
	cqe(&s, 100, 17, US(2010), 7, 0, WC_RDMA_WRITE, 0);
	cqe(&s, 100, 17, US(2020), 7, 0, WC_RDMA_WRITE, 0);
	/* 3. one call: 7 unsignaled + 1 signaled, one completion */
	for (uint16_t i = 0; i < 8; i++)
		post(&s, 100, 17, US(3000), 100 + i, 1024, WR_RDMA_WRITE, i == 7 ? SIG : 0, i);
	cqe(&s, 100, 17, US(3050), 107, 0, WC_RDMA_WRITE, 0);
	/* 4. a chain over two calls: each WR's latency from its own post */
	post(&s, 100, 17, US(4000), 200, 10, WR_RDMA_WRITE, 0, 0);
	post(&s, 100, 17, US(4010), 201, 20, WR_RDMA_WRITE, SIG, 0);
	cqe(&s, 100, 17, US(4030), 201, 0, WC_RDMA_WRITE, 0);
	/* 5. error completions (their opcode is undefined: garbage here) */
	static const uint32_t statuses[10] = { 12, 13, 10, 9, 11, 1, 4, 19, 5, 5 };
	for (int i = 0; i < 10; i++)
		post(&s, 100, 17, US(5000 + i), 300 + i, 256, WR_SEND, SIG, 0);
	for (int i = 0; i < 10; i++)
		cqe(&s, 100, 17, US(5100 + i), 300 + i, statuses[i], 0xdead, 0);
	/* 6. a receive: bytes are what arrived */
	post(&s, 100, 17, US(6000), 400, 4096, 0, RECV, 0);
	cqe(&s, 100, 17, US(6100), 400, 0, WC_RECV, 512);
	/* 7. a flushed receive (garbage opcode: found on the receive queue) */
	post(&s, 100, 17, US(6200), 401, 4096, 0, RECV, 0);
	cqe(&s, 100, 17, US(6300), 401, 5, 0xbeef, 0);
	/* 8. a completion whose post is not in the trace */
	cqe(&s, 100, 17, US(6400), 999, 0, WC_RDMA_WRITE, 0);
	/* 9. a WR the post call rejected */
	post(&s, 100, 17, US(6500), 500, 64, WR_RDMA_WRITE, SIG | FR_RDMA_POST_FAILED, 0);
	/* 10. a chain longer than the probe walks: 16 walked, the signaled
	 * one (wr_id 619) never seen; its completion closes the chain */
	for (uint16_t i = 0; i < 16; i++)
		post(&s, 100, 17, US(7000), 600 + i, 100, WR_RDMA_WRITE,
		     i == 15 ? FR_RDMA_POST_TRUNCATED : 0, i);
	cqe(&s, 100, 17, US(7100), 619, 0, WC_RDMA_WRITE, 0);
	/* 11. posted, never completed: still in flight at the end */
	post(&s, 100, 17, US(8000), 700, 64, WR_RDMA_WRITE, SIG, 0);

	/* QP 18: a receive posted before RTR is one row with the RTR; then a
	 * RESET drops a queued WR */
	post(&s, 100, 18, US(5), 800, 4096, 0, RECV, 0);
	cqe(&s, 100, 18, US(1500), 800, 0, WC_RECV, 4096);
	post(&s, 100, 18, US(1600), 801, 64, WR_RDMA_WRITE, SIG, 0);
	ctrl(&s, 100, 18, US(1700), FR_RDMA_MODIFY_QP, 0 /* RESET */, 0, 0);
	rtr(&s, 100, 18, US(1710), 17, 0xa1); /* the same peer: same row */

	/* QP 19: used, destroyed, its number reused by a new QP: two rows */
	post(&s, 100, 19, US(100), 900, 64, WR_SEND, SIG, 0);
	cqe(&s, 100, 19, US(110), 900, 0, 0, 0);
	ctrl(&s, 100, 19, US(200), FR_RDMA_DESTROY_QP, 0, 0, 0);
	ctrl(&s, 100, 19, US(300), FR_RDMA_CREATE_QP, 0, 0, 0);
	post(&s, 100, 19, US(400), 901, 64, WR_SEND, SIG, 0);
	cqe(&s, 100, 19, US(420), 901, 0, 0, 0);

	counters(&s, US(1000000), 1000000000ull, 3, 0);
	counters(&s, US(1500000), 500000000ull, 7, 2);
	return rdma_close(&s, 12345);
}

static const struct rdma_conn *find_conn(const struct rdma_result *r, const char *host,
					 uint32_t qp, size_t nth)
{
	for (size_t i = 0; i < r->n_conns; i++)
		if (r->conns[i].qp_num == qp && !strcmp(r->conns[i].local.host, host) && !nth--)
			return &r->conns[i];
	return NULL;
}

static const struct rdma_op_row *find_row(const struct rdma_conn *c, int recv, uint32_t opcode,
					  enum rdma_size_bucket b)
{
	for (size_t i = 0; c && i < c->n_rows; i++)
		if (c->rows[i].recv == recv && c->rows[i].opcode == opcode && c->rows[i].bucket == b)
			return &c->rows[i];
	return NULL;
}

/* Within 0.8% of want. */
static int close_to(uint64_t got, uint64_t want)
{
	double d = (double)got - (double)want;
	return (d < 0 ? -d : d) <= 0.008 * (double)want;
}

static void test_main_model(const char *path)
{
	const char *paths[] = { path };
	struct trace_set *ts;
	struct frec_error err;
	CHECK_EQ_U64(trace_set_open(paths, 1, &ts, &err), 0);
	void *st = trace_set_add_model(ts, &model_rdma_ops, NULL);
	CHECK_EQ_U64(trace_set_run(ts, &err), 0);
	const struct rdma_result *r = model_rdma_result(st);
	CHECK_EQ_U64(r->n_conns, 4);

	const struct rdma_conn *c = find_conn(r, "node-a", 17, 0);
	CHECK(c != NULL);
	if (!c)
		goto out;
	CHECK(c->has_rtr && c->remote_qp_known && c->joined);
	CHECK_EQ_U64(c->remote_qp, 18);
	CHECK_EQ_U64(c->local.pid, 100);
	CHECK_EQ_U64(c->remote.pid, 100);
	CHECK_STR(c->remote.host, "node-a");
	CHECK_STR(c->local.comm, "trainer");
	CHECK_EQ_U64(c->remote_gid[15], 0xb1);
	/* sends: 3 + 2 + 8 (chain) + 2 (two calls) + 16 (truncated chain) */
	CHECK_EQ_U64(c->send_ops, 31);
	CHECK_EQ_U64(c->send_bytes, 100 + 5000 + 70000 + 64 + 128 + 8 * 1024 + 10 + 20 + 1600);
	CHECK_EQ_U64(c->recv_ops, 1);
	CHECK_EQ_U64(c->recv_bytes, 512);
	CHECK_EQ_U64(c->ops, 32);
	CHECK_EQ_U64(c->bytes, c->send_bytes + 512);
	CHECK_EQ_U64(c->completions, 3 + 2 + 1 + 1 + 10 + 1 + 1 + 1 + 1);
	CHECK_EQ_U64(c->errors, 8);
	CHECK_EQ_U64(c->flush_errors, 3);
	CHECK_EQ_U64(c->by_status[12], 1);
	CHECK_EQ_U64(c->by_status[13], 1);
	CHECK_EQ_U64(c->by_status[5], 3);
	CHECK_EQ_U64(c->by_class[RDMA_ERR_RETRY_EXHAUSTED], 1);
	CHECK_EQ_U64(c->by_class[RDMA_ERR_RNR_RETRY_EXHAUSTED], 1);
	CHECK_EQ_U64(c->by_class[RDMA_ERR_REMOTE_NAK], 3);
	CHECK_EQ_U64(c->by_class[RDMA_ERR_LOCAL], 2);
	CHECK_EQ_U64(c->by_class[RDMA_ERR_OTHER], 1);
	CHECK_EQ_U64(c->unmatched, 1);
	CHECK_EQ_U64(c->missed, 0);
	CHECK_EQ_U64(c->truncated, 1);
	CHECK_EQ_U64(c->failed_posts, 1);
	CHECK_EQ_U64(c->outstanding, 1);
	CHECK_EQ_U64(c->dropped, 0);
	/* latencies (us): 10 19 28 | 10 19 | 50 x8 | 30 20 | 100 x16 */
	CHECK_EQ_U64(c->latency.count, 31);
	CHECK_EQ_U64(c->latency.max_ns, 100000);
	CHECK_EQ_U64(c->latency.min_ns, 10000);
	CHECK(close_to(c->latency.p50_ns, 100000)); /* nearest rank 16 of 31 */
	CHECK(close_to(c->latency.p99_ns, 100000));
	CHECK_EQ_U64(c->latency.sum_ns, (10 + 19 + 28 + 10 + 19 + 400 + 30 + 20 + 1600) * 1000ull);
	CHECK_EQ_U64(c->first_ns, US(1000));
	CHECK_EQ_U64(c->last_ns, US(7100));
	/* by opcode and size */
	const struct rdma_op_row *w = find_row(c, 0, WR_RDMA_WRITE, RDMA_SIZE_LT_4K);
	CHECK(w && w->ops == 1 + 2 + 8 + 2 + 16);
	CHECK(w && w->bytes == 100 + 64 + 128 + 8192 + 30 + 1600);
	w = find_row(c, 0, WR_RDMA_WRITE, RDMA_SIZE_4K_64K);
	CHECK(w && w->ops == 1 && w->bytes == 5000 && w->latency.max_ns == 19000);
	w = find_row(c, 0, WR_RDMA_WRITE, RDMA_SIZE_64K_1M);
	CHECK(w && w->ops == 1 && w->latency.p50_ns == 28000);
	w = find_row(c, 1, WC_RECV, RDMA_SIZE_LT_4K);
	CHECK(w && w->ops == 1 && w->bytes == 512 && w->latency.max_ns == 100000);
	CHECK(find_row(c, 0, WR_SEND, RDMA_SIZE_LT_4K) == NULL); /* all failed */

	/* QP 18: one row (receive before RTR), RESET dropped the write */
	c = find_conn(r, "node-a", 18, 0);
	CHECK(c && c->has_rtr && c->joined && c->remote_qp == 17 && c->remote.pid == 100);
	CHECK(c && c->recv_ops == 1 && c->recv_bytes == 4096 && c->dropped == 1);
	CHECK(c && c->outstanding == 0 && c->send_ops == 0 && c->latency.count == 0);
	CHECK(find_conn(r, "node-a", 18, 1) == NULL);
	/* QP 19: two lives, no RTR: not joined */
	const struct rdma_conn *a = find_conn(r, "node-a", 19, 0),
			       *b = find_conn(r, "node-a", 19, 1);
	CHECK(a && b && a->ops == 1 && b->ops == 1 && !a->joined && !a->has_rtr);
	CHECK(a && b && a->latency.max_ns == 10000 && b->latency.max_ns == 20000);

	/* per file: idle polls; counters summed */
	CHECK_EQ_U64(r->n_files, 1);
	CHECK(r->files[0].has_idle_polls && r->files[0].idle_polls == 12345);
	CHECK_EQ_U64(r->n_counters, 2);
	if (r->n_counters == 2) {
		CHECK_STR(r->counters[0].name, "mlx5_0/1/out_of_sequence");
		CHECK_EQ_U64(r->counters[0].total, 2);
		CHECK_STR(r->counters[1].name, "mlx5_0/1/rnr_nak_retry_err");
		CHECK_EQ_U64(r->counters[1].total, 10);
		CHECK_EQ_U64(r->counters[1].max_delta, 7);
		CHECK(r->counters[1].max_per_s > 13.99 && r->counters[1].max_per_s < 14.01);
		CHECK_EQ_U64(r->counters[1].samples, 2);
	}
out:
	trace_set_free(ts);
}

/* ---- percentiles: 1000 sends of 1..1000 us --------------------------------- */

static int write_percentiles(const char *path)
{
	struct synth s;
	if (rdma_open(&s, path, "node-p"))
		return -1;
	for (uint32_t i = 1; i <= 1000; i++) {
		/* shuffled order of latencies: (i * 7919) mod 1000 + 1 */
		uint64_t lat_us = (i * 7919u) % 1000u + 1u;
		uint64_t t = US(10000ull * i);
		post(&s, 300, 33, t, i, 4096, WR_SEND, SIG, 0);
		cqe(&s, 300, 33, t + lat_us * 1000, i, 0, 0, 0);
	}
	return rdma_close(&s, 0);
}

static void test_percentiles(const char *path)
{
	const char *paths[] = { path };
	struct trace_set *ts;
	struct frec_error err;
	CHECK_EQ_U64(trace_set_open(paths, 1, &ts, &err), 0);
	void *st = trace_set_add_model(ts, &model_rdma_ops, NULL);
	CHECK_EQ_U64(trace_set_run(ts, &err), 0);
	const struct rdma_result *r = model_rdma_result(st);
	const struct rdma_conn *c = find_conn(r, "node-p", 33, 0);
	CHECK(c != NULL);
	if (c) {
		CHECK_EQ_U64(c->latency.count, 1000);
		CHECK(close_to(c->latency.p50_ns, 500000)); /* nearest rank 500 */
		CHECK(close_to(c->latency.p99_ns, 990000)); /* nearest rank 990 */
		CHECK_EQ_U64(c->latency.max_ns, 1000000);
		CHECK_EQ_U64(c->latency.min_ns, 1000);
		CHECK_EQ_U64(c->ops, 1000);
		CHECK_EQ_U64(c->bytes, 4096000);
		CHECK(!c->remote_qp_known && !c->joined);
	}
	trace_set_free(ts);
}

/* ---- joining across files ------------------------------------------------ */

/* node-a (GID tag 0xa1): qp 17 -> (34, 0xb1), qp 18 -> (35, 0xc1)
 * node-b (0xb1):         qp 34 -> (17, 0xa1)
 * node-c (0xc1):         qp 35 -> (18, 0xa1), qp 17 -> (34, 0xd1)
 * node-d (0xd1):         qp 34 -> (17, 0xc1)
 * By QP numbers alone a:17 and c:17 both match b:34 and d:34; the unique
 * a:18 <-> c:35 teaches that 0xa1 is node-a's and 0xc1 node-c's, which
 * settles the rest.  node-e/node-f and node-g/node-h hold two symmetric
 * pairs nothing can tell apart: ambiguous. */
static int write_node(const char *path, const char *host, uint32_t pid, const uint32_t *qps,
		      const uint32_t *dests, const uint8_t *gids, int n)
{
	struct synth s;
	if (rdma_open(&s, path, host))
		return -1;
	synth_process(&s, pid, 1, "rank", "python train.py");
	proc_env(&s, pid, (int)(pid / 100 - 1));
	for (int i = 0; i < n; i++) {
		rtr(&s, pid, qps[i], US(10 + i), dests[i], gids[i]);
		post(&s, pid, qps[i], US(100 + i), 1, 1 << 20, WR_RDMA_WRITE, SIG, 0);
		cqe(&s, pid, qps[i], US(200 + i), 1, 0, WC_RDMA_WRITE, 0);
	}
	return rdma_close(&s, 0);
}

static void test_join(const char *dir_a, const char *dir_e)
{
	char p[8][700];
	static const char *const hosts[8] = { "node-a", "node-b", "node-c", "node-d",
					      "node-e", "node-f", "node-g", "node-h" };
	const uint32_t qa[] = { 17, 18 }, da[] = { 34, 35 };
	const uint8_t ga[] = { 0xb1, 0xc1 };
	const uint32_t qb[] = { 34 }, db[] = { 17 };
	const uint8_t gb[] = { 0xa1 };
	const uint32_t qc[] = { 35, 17 }, dc[] = { 18, 34 };
	const uint8_t gc[] = { 0xa1, 0xd1 };
	const uint32_t qd[] = { 34 }, dd[] = { 17 };
	const uint8_t gd[] = { 0xc1 };
	const uint8_t ge[] = { 0xf1 }, gf[] = { 0xe1 }, gg[] = { 0x71 }, gh[] = { 0x61 };
	for (int i = 0; i < 8; i++)
		snprintf(p[i], sizeof(p[i]), "%s-%s.frec", i < 4 ? dir_a : dir_e, hosts[i]);
	CHECK_EQ_U64(write_node(p[0], "node-a", 100, qa, da, ga, 2), 0);
	CHECK_EQ_U64(write_node(p[1], "node-b", 200, qb, db, gb, 1), 0);
	CHECK_EQ_U64(write_node(p[2], "node-c", 300, qc, dc, gc, 2), 0);
	CHECK_EQ_U64(write_node(p[3], "node-d", 400, qd, dd, gd, 1), 0);
	CHECK_EQ_U64(write_node(p[4], "node-e", 500, qb, db, ge, 1), 0);
	CHECK_EQ_U64(write_node(p[5], "node-f", 600, db, qb, gf, 1), 0);
	CHECK_EQ_U64(write_node(p[6], "node-g", 700, qb, db, gg, 1), 0);
	CHECK_EQ_U64(write_node(p[7], "node-h", 800, db, qb, gh, 1), 0);

	const char *paths[8];
	for (int i = 0; i < 8; i++)
		paths[i] = p[i];
	struct trace_set *ts;
	struct frec_error err;
	CHECK_EQ_U64(trace_set_open(paths, 4, &ts, &err), 0);
	void *st = trace_set_add_model(ts, &model_rdma_ops, NULL);
	CHECK_EQ_U64(trace_set_run(ts, &err), 0);
	const struct rdma_result *r = model_rdma_result(st);
	CHECK_EQ_U64(r->n_conns, 6);
	CHECK_EQ_U64(r->ambiguous_joins, 0);
	static const struct { const char *host; uint32_t qp; const char *rhost; uint32_t rpid; } want[] = {
		{ "node-a", 17, "node-b", 200 }, { "node-a", 18, "node-c", 300 },
		{ "node-b", 34, "node-a", 100 }, { "node-c", 35, "node-a", 100 },
		{ "node-c", 17, "node-d", 400 }, { "node-d", 34, "node-c", 300 },
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct rdma_conn *c = find_conn(r, want[i].host, want[i].qp, 0);
		CHECK(c && c->joined);
		if (c && c->joined) {
			CHECK_STR(c->remote.host, want[i].rhost);
			CHECK_EQ_U64(c->remote.pid, want[i].rpid);
			CHECK_EQ_U64(c->remote.rank, want[i].rpid / 100 - 1);
			CHECK_EQ_U64(c->local.rank, c->local.pid / 100 - 1);
			CHECK_EQ_U64(r->conns[c->remote_conn].qp_num, c->remote_qp);
		}
		CHECK(c && c->ops == 1 && c->bytes == 1 << 20);
		CHECK(c && find_row(c, 0, WR_RDMA_WRITE, RDMA_SIZE_GE_1M) != NULL);
	}
	trace_set_free(ts);

	CHECK_EQ_U64(trace_set_open(paths + 4, 4, &ts, &err), 0);
	st = trace_set_add_model(ts, &model_rdma_ops, NULL);
	CHECK_EQ_U64(trace_set_run(ts, &err), 0);
	r = model_rdma_result(st);
	CHECK_EQ_U64(r->n_conns, 4);
	CHECK_EQ_U64(r->ambiguous_joins, 4);
	for (size_t i = 0; i < r->n_conns; i++)
		CHECK(!r->conns[i].joined);
	trace_set_free(ts);
}

/* ---- the command ---------------------------------------------------------- */

struct run {
	int rc;
	char *out, *err;
};

static struct run run_rdma(char **argv)
{
	struct run r = { 0 };
	size_t ol = 0, el = 0;
	int argc = 0;
	while (argv[argc])
		argc++;
	FILE *o = open_memstream(&r.out, &ol), *e = open_memstream(&r.err, &el);
	r.rc = cmd_rdma(argc, argv, o, e);
	fclose(o);
	fclose(e);
	return r;
}

static void test_command(const char *path, const char *empty_path)
{
	char *json_argv[] = { "rdma", (char *)path, "--json", NULL };
	struct run r = run_rdma(json_argv);
	CHECK_EQ_U64(r.rc, 0);
	CHECK(strstr(r.out, "\"connections\":[{\"local_qp\":17,\"remote_qp\":18,\"pid\":100,") != NULL);
	CHECK(strstr(r.out, "\"ops\":32,\"bytes\":") != NULL);
	CHECK(strstr(r.out, "\"latency_us\":{\"p50\":") != NULL);
	CHECK(strstr(r.out, "\"errors\":8,\"error_status\":{\"IBV_WC_LOC_LEN_ERR\":1,"
			    "\"IBV_WC_LOC_PROT_ERR\":1,\"IBV_WC_REM_INV_REQ_ERR\":1,"
			    "\"IBV_WC_REM_ACCESS_ERR\":1,\"IBV_WC_REM_OP_ERR\":1,"
			    "\"IBV_WC_RETRY_EXC_ERR\":1,\"IBV_WC_RNR_RETRY_EXC_ERR\":1,"
			    "\"IBV_WC_FATAL_ERR\":1}") != NULL);
	CHECK(strstr(r.out, "\"flush_errors\":3") != NULL);
	CHECK(strstr(r.out, "\"remote_pid\":100,\"remote_host\":\"node-a\"") != NULL);
	CHECK(strstr(r.out, "\"remote_gid\":\"fe80:0000:0000:0000:0000:0000:0000:00b1\"") != NULL);
	CHECK(strstr(r.out, "{\"opcode\":\"RECV\",\"recv\":true,\"size\":\"<4K\",\"ops\":1,\"bytes\":512,") != NULL);
	CHECK(strstr(r.out, "\"name\":\"mlx5_0/1/rnr_nak_retry_err\",\"total\":10,\"max_delta\":7,") != NULL);
	CHECK(strstr(r.out, "\"idle_polls\":12345") != NULL);
	CHECK(strstr(r.out, "\"local_qp\":19,\"remote_qp\":null,") != NULL);
	CHECK(strstr(r.out, "\"latency_us\":{\"p50\":null,") != NULL); /* QP 18: receives only */
	if (check_failures)
		fprintf(stderr, "%s\n", r.out);
	free(r.out);
	free(r.err);

	char *text_argv[] = { "rdma", (char *)path, NULL };
	r = run_rdma(text_argv);
	CHECK_EQ_U64(r.rc, 0);
	CHECK(strstr(r.out, "node-a:100") != NULL);
	CHECK(strstr(r.out, "IBV_WC_RETRY_EXC_ERR x1 (retry_exhausted)") != NULL);
	CHECK(strstr(r.out, "flushed: 3") != NULL);
	CHECK(strstr(r.out, "RDMA_WRITE") != NULL && strstr(r.out, "64K-1M") != NULL);
	CHECK(strstr(r.out, "mlx5_0/1/rnr_nak_retry_err") != NULL);
	printf("%s", r.out);
	free(r.out);
	free(r.err);

	char *pid_argv[] = { "rdma", (char *)path, "--pid", "4242", NULL };
	r = run_rdma(pid_argv);
	CHECK_EQ_U64(r.rc, 0); /* the counters are still there */
	CHECK(strstr(r.out, "0 queue pair views") != NULL);
	free(r.out);
	free(r.err);

	char *empty_argv[] = { "rdma", (char *)empty_path, NULL };
	r = run_rdma(empty_argv);
	CHECK_EQ_U64(r.rc, 1);
	CHECK(strstr(r.err, "no RDMA verbs calls") != NULL);
	free(r.out);
	free(r.err);

	char *none[] = { "rdma", NULL };
	r = run_rdma(none);
	CHECK_EQ_U64(r.rc, 2);
	CHECK(strstr(r.err, "no trace file given") != NULL);
	free(r.out);
	free(r.err);

	char *bad[] = { "rdma", (char *)path, "--pid", "x", NULL };
	r = run_rdma(bad);
	CHECK_EQ_U64(r.rc, 2);
	free(r.out);
	free(r.err);

	char *help[] = { "rdma", "--help", NULL };
	r = run_rdma(help);
	CHECK_EQ_U64(r.rc, 0);
	CHECK(strstr(r.out, "usage: flightrec-analyze rdma") != NULL);
	free(r.out);
	free(r.err);
}

static void test_names(void)
{
	char buf[32];
	CHECK_STR(rdma_wc_status_name(12), "IBV_WC_RETRY_EXC_ERR");
	CHECK_STR(rdma_wc_status_name(6), "IBV_WC_MW_BIND_ERR");
	CHECK_STR(rdma_wc_status_name(8), "IBV_WC_LOC_ACCESS_ERR");
	CHECK(rdma_wc_status_name(99) == NULL);
	CHECK_EQ_U64(rdma_err_class_of(16), RDMA_ERR_REMOTE_NAK);
	CHECK_EQ_U64(rdma_err_class_of(7), RDMA_ERR_LOCAL);
	CHECK_EQ_U64(rdma_err_class_of(20), RDMA_ERR_OTHER);
	CHECK_STR(rdma_opcode_name(0, 4, buf, sizeof(buf)), "RDMA_READ");
	CHECK_STR(rdma_opcode_name(1, 129, buf, sizeof(buf)), "RECV_RDMA_WITH_IMM");
	CHECK_STR(rdma_opcode_name(0, 77, buf, sizeof(buf)), "OPCODE_77");
	CHECK_EQ_U64(rdma_size_bucket_of(4095), RDMA_SIZE_LT_4K);
	CHECK_EQ_U64(rdma_size_bucket_of(4096), RDMA_SIZE_4K_64K);
	CHECK_EQ_U64(rdma_size_bucket_of(65536), RDMA_SIZE_64K_1M);
	CHECK_EQ_U64(rdma_size_bucket_of(1 << 20), RDMA_SIZE_GE_1M);
}

int main(void)
{
	char main_path[512], pct_path[512], empty_path[512], join_a[512], join_e[512];
	synth_path("rdma_main.frec", main_path, sizeof(main_path));
	synth_path("rdma_pct.frec", pct_path, sizeof(pct_path));
	synth_path("rdma_empty.frec", empty_path, sizeof(empty_path));
	synth_path("rdma_join", join_a, sizeof(join_a));
	synth_path("rdma_join2", join_e, sizeof(join_e));
	test_names();
	CHECK_EQ_U64(write_main(main_path), 0);
	test_main_model(main_path);
	CHECK_EQ_U64(write_percentiles(pct_path), 0);
	test_percentiles(pct_path);
	test_join(join_a, join_e);
	struct synth s;
	CHECK_EQ_U64(rdma_open(&s, empty_path, "node-z"), 0);
	synth_process(&s, 1, 0, "init", "init");
	CHECK_EQ_U64(rdma_close(&s, 0), 0);
	test_command(main_path, empty_path);
	return check_finish();
}
