/* The report output as a file: a synthetic trace (the standard one, a
 * process whose function is named like markup, CUDA calls, drops) through
 * `flightrec-analyze report`; checks the page is self-contained (CSP, no
 * external script/style/link), hostile names appear only escaped, the data
 * of every section with data is there and the others say why not, and the
 * size stays bounded for a large flame tree.  Drawing is checked in
 * Chromium by tests/browser/report.test.js. */
#include "check.h"
#include "test_analyzer_common.h"

#include "commands.h"

#include <unistd.h>

#define HOSTILE "<img src=x onerror=alert(1)>"

static void hostile_body(struct synth *s, unsigned wide)
{
	synth_process(s, 300, 1, "evil</script>", "evil " HOSTILE);
	synth_mapping(s, 300, 0x600000, 0x700000, 0, 9, "/opt/<b>evil</b>");
	uint64_t ips[] = { 0x600010, 0x601010 };
	synth_stack(s, 50, 300, ips, 0, 2);
	synth_samples(s, 300, 300, 50, 20);
	/* a wide tree: many distinct leaves */
	for (unsigned i = 0; i < wide; i++) {
		uint64_t w[] = { 0x610000 + 16ull * i, 0x601010 };
		synth_stack(s, 100 + i, 300, w, 0, 2);
		synth_samples(s, 300, 300, 100 + i, 1);
	}
	struct synth_sym syms[2] = { { 0x0, 0x100, HOSTILE }, { 0x1000, 0x100, "evil_main" } };
	synth_dso(s, 9, 0, "/opt/<b>evil</b>", syms, 2);
	for (int i = 0; i < 3; i++) {
		s->ts_ns += 1000;
		struct fr_ev_cuda ev = { .c = { .ts_ns = s->ts_ns, .pid = 100, .tid = 100 },
					 .func = FR_CUDA_MEMCPY, .duration_ns = 1000 * (uint64_t)(i + 1),
					 .bytes = 1 << 20, .kind = FR_COPY_H2D };
		synth_raw(s->ev, &ev, sizeof(ev), FR_EV_CUDA, s->ts_ns);
	}
}

/* GPU memory, a 4-rank NCCL job (rank 2 computes 30 ms longer per step)
 * and an RDMA connection, in the process of the standard trace (pid 100,
 * stacks 1 = main;work_a, 2 = main;work_b) and four rank processes. */
static void models_body(struct synth *s)
{
	/* memory: A 1000 (stack 1), B 500 (stack 2), free A, C 3000 (stack 1):
	 * peak 3500 = 3000 on main;work_a + 500 on main;work_b; then a failure */
	static const struct { uint16_t func; uint32_t stack; uint64_t ptr, bytes; int64_t result; } m[] = {
		{ FR_CUDA_MALLOC, 1, 0xa000, 1000, 0 }, { FR_CUDA_MALLOC, 2, 0xb000, 500, 0 },
		{ FR_CUDA_FREE, 1, 0xa000, 0, 0 }, { FR_CUDA_MALLOC, 1, 0xc000, 3000, 0 },
		{ FR_CUDA_MALLOC, 1, 0, 1ull << 40, 2 },
	};
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		s->ts_ns += 1000000;
		struct fr_ev_cuda ev = { .c = { .ts_ns = s->ts_ns, .pid = 100, .tid = 100 }, .func = m[i].func,
					 .stack_id = m[i].stack, .duration_ns = 5000, .result = m[i].result,
					 .ptr = m[i].ptr, .bytes = m[i].bytes, .device = 0 };
		synth_raw(s->ev, &ev, sizeof(ev), FR_EV_CUDA, s->ts_ns);
	}
	/* an async copy followed at once by a synchronize */
	s->ts_ns += 1000000;
	struct fr_ev_cuda cp = { .c = { .ts_ns = s->ts_ns, .pid = 100, .tid = 100 }, .func = FR_CUDA_MEMCPY_ASYNC,
				 .stack_id = 1, .duration_ns = 4000, .ptr = 0xc000, .src = 0x7f0000001000,
				 .bytes = 4096, .kind = FR_COPY_H2D };
	synth_raw(s->ev, &cp, sizeof(cp), FR_EV_CUDA, s->ts_ns);
	struct fr_ev_cuda sy = { .c = { .ts_ns = s->ts_ns + 6000, .pid = 100, .tid = 100 },
				 .func = FR_CUDA_STREAM_SYNC, .stack_id = 1, .duration_ns = 90000 };
	synth_raw(s->ev, &sy, sizeof(sy), FR_EV_CUDA, s->ts_ns + 6000);

	/* the job: 4 ranks, 20 steps, one all-reduce per step */
	enum { RANKS = 4, STEPS = 20 };
	uint64_t uid = 0x1234abcd5678ef01ull, t = s->ts_ns + 10000000;
	for (int r = 0; r < RANKS; r++) {
		uint32_t pid = 2000 + (uint32_t)r;
		char env[128];
		int n = snprintf(env, sizeof(env), "RANK=%d%cLOCAL_RANK=%d%cWORLD_SIZE=%d", r, 0, r, 0, RANKS);
		uint8_t buf[256] = { 0 };
		struct fr_rec_proc_env pe = { .ts_ns = t, .pid = pid, .len = (uint32_t)n + 1 };
		memcpy(buf, &pe, sizeof(pe));
		memcpy(buf + sizeof(pe), env, (size_t)n + 1);
		synth_process(s, pid, 1, "train", "train --ranks 4");
		synth_raw(s->meta, buf, FR_ALIGN8((uint32_t)sizeof(pe) + (uint32_t)n + 1), FR_REC_PROC_ENV, t);
		struct fr_ev_nccl init = { .c = { .ts_ns = t, .pid = pid, .tid = pid },
					   .func = FR_NCCL_COMM_INIT_RANK, .duration_ns = 1000000,
					   .comm = 0x5500 + (uint64_t)r, .rank = r, .nranks = RANKS,
					   .uid_hash = uid, .peer = -1 };
		synth_raw(s->ev, &init, sizeof(init), FR_EV_NCCL, t);
	}
	t += 5000000;
	for (int step = 0; step < STEPS; step++) {
		uint64_t release = 0, entry[RANKS];
		for (int r = 0; r < RANKS; r++) {
			uint32_t pid = 2000 + (uint32_t)r;
			struct fr_ev_step ev = { .c = { .ts_ns = t, .pid = pid, .tid = pid } };
			synth_raw(s->ev, &ev, sizeof(ev), FR_EV_STEP, t);
			entry[r] = t + 50000000ull + (r == 2 ? 30000000ull : 0) + 100000ull * (uint64_t)r;
			if (entry[r] > release)
				release = entry[r];
		}
		release += 300000;
		for (int r = 0; r < RANKS; r++) {
			uint32_t pid = 2000 + (uint32_t)r;
			struct fr_ev_nccl ev = { .c = { .ts_ns = entry[r], .pid = pid, .tid = pid },
						 .func = FR_NCCL_ALL_REDUCE, .duration_ns = release + 10000 * (uint64_t)r - entry[r],
						 .comm = 0x5500 + (uint64_t)r, .count = 1 << 20, .datatype = 7,
						 .peer = -1, .rank = -1, .nranks = -1 };
			synth_raw(s->ev, &ev, sizeof(ev), FR_EV_NCCL, entry[r]);
		}
		t = release + 100000;
	}
	/* RDMA: two RDMA_WRITEs on QP 7 of pid 100, 10 and 30 us */
	for (int i = 0; i < 2; i++) {
		t += 100000;
		struct fr_ev_rdma_post p = { .c = { .ts_ns = t, .pid = 100, .tid = 100 }, .wr_id = (uint64_t)i + 1,
					     .bytes = 4096, .qp_num = 7, .opcode = 0, .num_sge = 1,
					     .flags = FR_RDMA_POST_SIGNALED };
		synth_raw(s->ev, &p, sizeof(p), FR_EV_RDMA_POST, t);
		uint64_t lat = i ? 30000 : 10000;
		struct fr_ev_rdma_cqe c = { .c = { .ts_ns = t + lat, .pid = 100, .tid = 100 }, .wr_id = (uint64_t)i + 1,
					    .qp_num = 7, .byte_len = 4096 };
		synth_raw(s->ev, &c, sizeof(c), FR_EV_RDMA_CQE, t + lat);
	}
	s->ts_ns = t + 1000000;
}

static char *report_of(const char *trace, const char *out)
{
	char *argv[] = { "report", (char *)trace, "-o", (char *)out, NULL };
	CHECK_EQ_U64(cmd_report(4, argv, stdout, stderr), 0);
	FILE *f = fopen(out, "r");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *text = calloc(1, (size_t)len + 1);
	if (fread(text, 1, (size_t)len, f) != (size_t)len)
		text[0] = '\0';
	fclose(f);
	return text;
}

int main(void)
{
	char trace[512], out[512];
	synth_path("analyzer_report.frec", trace, sizeof(trace));
	synth_path("analyzer_report.html", out, sizeof(out));
	struct synth s;
	CHECK_EQ_U64(synth_open(&s, trace), 0);
	std_trace_body(&s);
	hostile_body(&s, 50);
	CHECK_EQ_U64(synth_close(&s, 522, 3), 0);

	char *html = report_of(trace, out);
	CHECK(html != NULL);
	if (!html)
		return check_finish();
	CHECK(strncmp(html, "<!DOCTYPE html>", 15) == 0);
	CHECK(strstr(html, "http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'") != NULL);
	CHECK(strstr(html, "<script src") == NULL && strstr(html, "<link") == NULL &&
	      strstr(html, "@import") == NULL);
	/* hostile strings only escaped */
	CHECK(strstr(html, HOSTILE) == NULL);
	CHECK(strstr(html, "evil</script>") == NULL);
	CHECK(strstr(html, "<b>evil") == NULL);
	CHECK(strstr(html, "\\u003cimg src=x onerror=alert(1)\\u003e") != NULL);
	/* exactly the report's three scripts end */
	size_t ends = 0;
	for (const char *p = html; (p = strstr(p, "</script>")); p++)
		ends++;
	CHECK_EQ_U64(ends, 3);
	/* sections: data where the trace has it, null (the page says why) elsewhere */
	CHECK(strstr(html, "\"cpu\":{\"samples\":492") != NULL);
	CHECK(strstr(html, "{\"label\":\"all processes\"") != NULL);
	CHECK(strstr(html, "trainer (pid 100) on node-a") != NULL);
	CHECK(strstr(html, "\"cuda\":{\"events\":3") != NULL);
	CHECK(strstr(html, "{\"kind\":\"H2D\",\"calls\":3,\"bytes\":3145728,\"total_ns\":6000}") != NULL);
	/* the CUDA model's table: self time, exact percentiles */
	CHECK(strstr(html, "\"source\":\"model\"") != NULL);
	CHECK(strstr(html, "{\"name\":\"cudaMemcpy\",\"calls\":3,\"failed\":0,\"total_ns\":6000,\"self_ns\":6000,"
			   "\"min_ns\":1000,\"max_ns\":3000,\"p50_ns\":2003,") != NULL);
	CHECK(strstr(html, "\"mem\":null") != NULL);
	CHECK(strstr(html, "\"stragglers\":null") != NULL);
	CHECK(strstr(html, "\"rdma\":null") != NULL);
	CHECK(strstr(html, "{\"name\":\"read\",\"count\":2,\"total_ns\":3000000") != NULL);
	CHECK(strstr(html, "{\"probe\":\"cpu\",\"events\":522,\"drops\":3}") != NULL);
	CHECK(strstr(html, "\"presence\":{\"cpu_samples\":492,\"cuda_events\":3") != NULL);
	size_t small = strlen(html);
	free(html);

	/* the model sections: GPU memory, CUDA, stragglers, RDMA */
	char mtrace[512], mout[512];
	synth_path("analyzer_report_models.frec", mtrace, sizeof(mtrace));
	synth_path("analyzer_report_models.html", mout, sizeof(mout));
	CHECK_EQ_U64(synth_open(&s, mtrace), 0);
	std_trace_body(&s);
	hostile_body(&s, 5);
	models_body(&s);
	CHECK_EQ_U64(synth_close(&s, 0, 0), 0);
	html = report_of(mtrace, mout);
	CHECK(html != NULL);
	if (!html)
		return check_finish();
	CHECK(strstr(html, HOSTILE) == NULL && strstr(html, "evil</script>") == NULL);
	/* memory: the exact peak, its top stack, the failure, the snapshots */
	CHECK(strstr(html, "\"mem\":{\"events\":") != NULL);
	CHECK(strstr(html, "\"peak_bytes\":3500,") != NULL);
	CHECK(strstr(html, "\"top_at_peak\":[{\"stack\":\"work_a \\u003c- main\",\"bytes\":3000,") != NULL);
	CHECK(strstr(html, "{\"stack\":\"work_b \\u003c- main\",\"bytes\":500,") != NULL);
	CHECK(strstr(html, "\"error\":\"cudaErrorMemoryAllocation\"") != NULL);
	CHECK(strstr(html, "\"peak_tree\":{\"title\":\"GPU memory in use at the peak\"") != NULL);
	CHECK(strstr(html, "\"unit\":\"bytes\",\"total\":3500,") != NULL);
	CHECK(strstr(html, "\"alloc_tree\":{") != NULL);
	size_t snaps = 0;
	for (const char *p = html; (p = strstr(p, "{\"t_ns\":")); p++)
		snaps++;
	CHECK_EQ_U64(snaps, 20);
	/* CUDA: async copy then sync */
	CHECK(strstr(html, "\"async_then_sync\":1,") != NULL);
	/* stragglers: rank 2, the verdict text and a heatmap of 4 x 20 */
	CHECK(strstr(html, "\"text\":\"Straggler: rank 2 (host node-a, pid 2002) since step 0,") != NULL);
	CHECK(strstr(html, "\"heatmap\":{\"steps\":20,\"width\":1,\"rows\":4,") != NULL);
	/* RDMA: the connection row with its latency */
	CHECK(strstr(html, "\"local\":\"trainer (pid 100) on node-a\",\"qp\":7,") != NULL);
	CHECK(strstr(html, "\"latency\":{\"count\":2,\"p50_ns\":10047,\"p99_ns\":30000,") != NULL);
	CHECK(strstr(html, "{\"op\":\"RDMA_WRITE\",\"size\":\"4K-64K\",\"ops\":2,") != NULL);
	free(html);

	/* size bound: 100k distinct stacks still give a bounded page */
	synth_path("analyzer_report_wide.frec", trace, sizeof(trace));
	CHECK_EQ_U64(synth_open(&s, trace), 0);
	std_trace_body(&s);
	hostile_body(&s, 100000);
	CHECK_EQ_U64(synth_close(&s, 0, 0), 0);
	html = report_of(trace, out);
	CHECK(html != NULL);
	size_t big = html ? strlen(html) : 0;
	printf("report sizes: %zu bytes (small), %zu bytes (100k stacks)\n", small, big);
	CHECK(big < 8u << 20);
	CHECK(html && strstr(html, "\"omitted\":") != NULL);
	free(html);
	return check_finish();
}
