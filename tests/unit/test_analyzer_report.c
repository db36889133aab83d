/* The report output as a file: a synthetic trace (the standard one, a
 * process whose function is named like markup, CUDA calls, drops) through
 * `flightrec-analyze report`; checks the page is self-contained (CSP, no
 * external script/style/link), hostile names appear only escaped, the data
 * of every section with data is there and the others say why not, and the
 * size stays bounded for a large flame tree; the "findings" member (what
 * to fix first) is `findings --json`'s object, on a trace with findings
 * and on one without.  Drawing is checked in
 * Chromium by tests/browser/report.test.js. */
#include "check.h"
#include "test_analyzer_common.h"
#include "test_analyzer_models_trace.h"
#include "test_analyzer_findings_trace.h"

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

/* `findings TRACE --json` as a string, without its newline. */
static char *findings_json_of(const char *trace)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	char *argv[] = { "findings", (char *)trace, "--json", NULL };
	CHECK_EQ_U64(cmd_findings(3, argv, mem, stderr), 0);
	fclose(mem);
	if (len && buf[len - 1] == '\n')
		buf[len - 1] = '\0';
	return buf;
}

/* The report's "findings" member is exactly `findings --json`'s object. */
static void check_findings_member(const char *html, const char *trace)
{
	char *json = findings_json_of(trace);
	CHECK(json && json[0] == '{');
	size_t n = strlen("\"findings\":") + strlen(json) + 2;
	char *want = malloc(n);
	snprintf(want, n, "\"findings\":%s,", json);
	CHECK(strstr(html, want) != NULL);
	/* first after the summary */
	const char *sum = strstr(html, "\"summary\":{"), *fnd = strstr(html, want),
		   *cpu = strstr(html, "\"cpu\":");
	CHECK(sum && fnd && cpu && sum < fnd && fnd < cpu);
	free(want);
	free(json);
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
	/* a trace without a finding: the member is there, findings empty */
	check_findings_member(html, trace);
	CHECK(strstr(html, "\"findings\":[],\"below\":") != NULL);
	size_t small = strlen(html);
	free(html);

	/* what to fix first: a process whose GPU waits on a synchronize, pageable
	 * copies and a call no rule explains (test_analyzer_findings_trace.h) */
	char ftrace[512], fout[512];
	synth_path("analyzer_report_findings.frec", ftrace, sizeof(ftrace));
	synth_path("analyzer_report_findings.html", fout, sizeof(fout));
	CHECK_EQ_U64(synth_open(&s, ftrace), 0);
	findings_trace_body(&s, 2000000000ull);
	CHECK_EQ_U64(synth_close(&s, 0, 0), 0);
	html = report_of(ftrace, fout);
	CHECK(html != NULL);
	if (!html)
		return check_finish();
	check_findings_member(html, ftrace);
	/* the numbers the trace was built for: 10 intervals of 4 ms */
	CHECK(strstr(html, "\"findings\":{\"steps\":10,\"steps_from\":\"sync_period\",\"step_ms\":5.000,"
		     "\"steps_regular\":1.000,\"step_site\":\"cudaDeviceSynchronize\",\"wall_ms\":51.000,") != NULL);
	CHECK(strstr(html, "\"gpu_idle_ms\":{\"500\":40.000},\"unexplained_ms\":{\"500\":4.000}") != NULL);
	CHECK(strstr(html, "{\"kind\":\"host_sync\",\"cost_ms\":26.000,\"cost_ms_per_step\":2.600,"
			   "\"share\":0.5098,\"pids\":[500],\"ranks\":[],"
			   "\"where\":[\"main\",\"train_step\",\"cudaDeviceSynchronize\"]") != NULL);
	CHECK(strstr(html, "{\"kind\":\"pageable_copy\",\"cost_ms\":10.000,\"cost_ms_per_step\":1.000,") != NULL);
	CHECK(strstr(html, "{\"kind\":\"straggler\",\"why\":\"no NCCL calls recorded") != NULL);
	free(html);

	/* the model sections: GPU memory, CUDA, stragglers, RDMA */
	char mtrace[512], mout[512];
	synth_path("analyzer_report_models.frec", mtrace, sizeof(mtrace));
	synth_path("analyzer_report_models.html", mout, sizeof(mout));
	CHECK_EQ_U64(synth_open(&s, mtrace), 0);
	std_trace_body(&s);
	hostile_body(&s, 5);
	models_trace_body(&s);
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
