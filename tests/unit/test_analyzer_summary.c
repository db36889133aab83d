/* The summary command on synthetic traces: every section heading in its
 * order, under the token budget (bytes / 4), numbers equal to the other
 * commands' own --json (memory's peak, stragglers' rank and cost,
 * findings' kinds and cost_ms), --format json parses and has the
 * documented keys, start-up frames dropped from the CPU stacks, the
 * shortening levels, and two runs byte-identical.  The writers are copies
 * of test_analyzer_mem.c's and test_analyzer_stragglers.c's. */
#include "check.h"
#include "test_analyzer_synth.h"
#include "test_analyzer_job.h"
#include "test_analyzer_findings_trace.h"

#include "commands.h"
#include "out_summary.h"
#include "model_cpu.h"
#include "model_findings.h"
#include "model_mem.h"
#include "model_rdma.h"
#include "model_stragglers.h"
#include "trace_set.h"

#include <ctype.h>
#include <math.h>
#include <unistd.h>

/* ---- a GPU memory trace (test_analyzer_mem.c), with CPU samples whose
 * stacks start in _start and __libc_start_main ---- */

#define AT_MS(x) (1000000000ull + (uint64_t)(x) * 1000000ull)

static void mem_call(struct synth *s, uint32_t pid, uint16_t func, uint64_t ts, uint64_t ptr,
		     uint64_t bytes, uint32_t stack, int64_t result, int32_t device)
{
	synth_cuda(s, (struct fr_ev_cuda){ .c = { .ts_ns = ts, .pid = pid }, .func = func,
					   .stack_id = stack, .duration_ns = 1000, .result = result,
					   .ptr = ptr, .bytes = bytes, .device = device });
}

static int write_mem_trace(const char *path)
{
	struct synth s;
	if (synth_open(&s, path))
		return -1;
	synth_process(&s, 100, 1, "trainer", "python train.py");
	synth_process(&s, 200, 1, "loader", "python loader.py");
	synth_mapping(&s, 100, 0x400000, 0x500000, 0, 1, "/usr/bin/trainer");
	synth_mapping(&s, 200, 0x400000, 0x500000, 0, 1, "/usr/bin/trainer");
	uint64_t s1[] = { 0x402010, 0x401010 }, s2[] = { 0x403010, 0x401010 },
		 s3[] = { 0x404010, 0x401010 }, s4[] = { 0x405010, 0x401010 },
		 s6[] = { 0x402010, 0x401010, 0x407010, 0x406010 },
		 s7[] = { 0x403010, 0x401010, 0x407010, 0x406010 };
	synth_stack(&s, 1, 100, s1, 0, 2);
	synth_stack(&s, 2, 100, s2, 0, 2);
	synth_stack(&s, 3, 100, s3, 0, 2);
	synth_stack(&s, 4, 100, s4, 0, 2);
	synth_stack(&s, 5, 200, s1, 0, 2);
	synth_stack(&s, 6, 100, s6, 0, 4);
	synth_stack(&s, 7, 100, s7, 0, 4);
	mem_call(&s, 100, FR_CUDA_HOST_ALLOC, AT_MS(5), 0x7000000, 4096, 1, 0, 0);
	mem_call(&s, 100, FR_CUDA_MALLOC, AT_MS(10), 0xA000, 1000, 1, 0, 0);
	mem_call(&s, 100, FR_CUDA_MALLOC, AT_MS(20), 0xB000, 3000, 2, 0, 0);
	mem_call(&s, 100, FR_CU_MEM_ALLOC, AT_MS(30), 0xC000, 500, 3, 0, 0);
	mem_call(&s, 100, FR_CUDA_FREE, AT_MS(40), 0xA000, 0, 1, 0, 0);
	mem_call(&s, 100, FR_CUDA_MALLOC, AT_MS(50), 0xD000, 2000, 1, 0, 0);
	mem_call(&s, 100, FR_CUDA_MALLOC, AT_MS(60), 0, 1ull << 40, 4, 2, 0);
	mem_call(&s, 100, FR_CUDA_FREE, AT_MS(70), 0xB000, 0, 2, 0, 0);
	mem_call(&s, 100, FR_CUDA_FREE, AT_MS(80), 0xD000, 0, 1, 0, 0);
	mem_call(&s, 100, FR_CUDA_FREE, AT_MS(90), 0xDEAD, 0, 1, 0, 0);
	mem_call(&s, 100, FR_CUDA_FREE, AT_MS(95), 0, 0, 1, 0, 0);
	for (int i = 0; i < 6; i++)
		mem_call(&s, 200, FR_CUDA_MALLOC, AT_MS(100 + 10 * i), 0x10000000ull * (i + 1),
			 20ull << 20, 5, 0, 1);
	synth_samples(&s, 100, 100, 6, 30); /* _start;__libc_start_main;main;alloc_a */
	synth_samples(&s, 100, 100, 7, 10); /* _start;__libc_start_main;main;alloc_b */
	static const struct synth_sym syms[] = {
		{ 0x1000, 0x100, "main" }, { 0x2000, 0x100, "alloc_a" }, { 0x3000, 0x100, "alloc_b" },
		{ 0x4000, 0x100, "leak_fn" }, { 0x5000, 0x100, "big_fn" }, { 0x6000, 0x100, "_start" },
		{ 0x7000, 0x100, "__libc_start_main" },
	};
	synth_dso(&s, 1, 0, "/usr/bin/trainer", syms, 7);
	return synth_close(&s, 0, 0);
}

/* ---- a two-node NCCL job: test_analyzer_job.h ---- */

/* ---- running commands ---- */

struct run {
	int rc;
	char *out, *err;
};

static struct run run(int (*cmd)(int, char **, FILE *, FILE *), char **argv)
{
	struct run r = { 0 };
	size_t ol = 0, el = 0;
	int argc = 0;
	while (argv[argc])
		argc++;
	FILE *o = open_memstream(&r.out, &ol), *e = open_memstream(&r.err, &el);
	r.rc = cmd(argc, argv, o, e);
	fclose(o);
	fclose(e);
	return r;
}

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

/* The text after the first "key": in s (after from, when given), up to
 * the next ',' or '}' : a number, null or a short string. */
static char *value_of(const char *s, const char *from, const char *key)
{
	if (!s)
		return NULL;
	if (from) {
		s = strstr(s, from);
		if (!s)
			return NULL;
	}
	char pat[64];
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	const char *p = strstr(s, pat);
	if (!p)
		return NULL;
	p += strlen(pat);
	size_t n = strcspn(p, ",}");
	return strndup(p, n);
}

/* ---- a tiny JSON validator: 0 when s is one JSON value and nothing else ---- */

static const char *js_value(const char *p);

static const char *js_ws(const char *p)
{
	while (p && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r'))
		p++;
	return p;
}

static const char *js_string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	while (*p && *p != '"') {
		if ((unsigned char)*p < 0x20)
			return NULL;
		if (*p == '\\') {
			p++;
			if (*p == 'u') {
				for (int i = 1; i <= 4; i++)
					if (!isxdigit((unsigned char)p[i]))
						return NULL;
				p += 4;
			} else if (!strchr("\"\\/bfnrt", *p) || !*p) {
				return NULL;
			}
		}
		p++;
	}
	return *p == '"' ? p + 1 : NULL;
}

static const char *js_value(const char *p)
{
	p = js_ws(p);
	if (!p || !*p)
		return NULL;
	if (*p == '{' || *p == '[') {
		char close = *p == '{' ? '}' : ']';
		p = js_ws(p + 1);
		if (*p == close)
			return p + 1;
		for (;;) {
			if (close == '}') {
				p = js_string(js_ws(p));
				p = js_ws(p);
				if (!p || *p != ':')
					return NULL;
				p++;
			}
			p = js_ws(js_value(p));
			if (!p)
				return NULL;
			if (*p == close)
				return p + 1;
			if (*p != ',')
				return NULL;
			p++;
		}
	}
	if (*p == '"')
		return js_string(p);
	if (!strncmp(p, "null", 4) || !strncmp(p, "true", 4))
		return p + 4;
	if (!strncmp(p, "false", 5))
		return p + 5;
	char *end;
	strtod(p, &end);
	return end > p ? end : NULL;
}

static int json_ok(const char *s)
{
	const char *p = js_ws(js_value(s));
	return p && !*p;
}

/* ---- checks shared by both traces ---- */

static const char *const headings[] = {
	"## Recording\n", "## Findings\n", "## CPU\n", "## GPU memory\n", "## Stragglers\n",
	"## RDMA\n", "## Drops and damage\n",
};

static const char *const json_keys[] = {
	"\"budget\":{\"rule\":\"bytes/4\",\"max_tokens\":2000,", "\"recording\":{", "\"findings\":{",
	"\"cpu\":{", "\"gpu_memory\":{", "\"stragglers\":{", "\"rdma\":{", "\"drops\":{",
	"\"files_total\":", "\"ranks\":", "\"losses\":[", "\"damaged_regions\":",
};

/* md and json of files: headings in order, budget, json parses, keys,
 * deterministic; *md and *json returned (free them). */
static void check_summary(char **files, size_t n, char **md, char **json)
{
	char *argv[16] = { "summary" };
	for (size_t i = 0; i < n; i++)
		argv[1 + i] = files[i];
	struct run a = run(cmd_summary, argv);
	struct run b = run(cmd_summary, argv);
	CHECK(a.rc == 0);
	CHECK(a.out && b.out && strcmp(a.out, b.out) == 0); /* deterministic */
	const char *at = a.out ? a.out : "";
	for (size_t i = 0; i < sizeof(headings) / sizeof(headings[0]); i++) {
		const char *h = strstr(at, headings[i]);
		CHECK(h != NULL);
		if (h)
			at = h;
	}
	CHECK(a.out && summary_tokens(strlen(a.out)) <= SUMMARY_MAX_TOKENS);
	argv[1 + n] = "--format";
	argv[2 + n] = "json";
	struct run j = run(cmd_summary, argv);
	struct run k = run(cmd_summary, argv);
	CHECK(j.rc == 0);
	CHECK(j.out && k.out && strcmp(j.out, k.out) == 0);
	CHECK(j.out && json_ok(j.out));
	for (size_t i = 0; i < sizeof(json_keys) / sizeof(json_keys[0]); i++)
		CHECK(j.out && strstr(j.out, json_keys[i]) != NULL);
	CHECK(j.out && summary_tokens(strlen(j.out)) <= SUMMARY_MAX_TOKENS);
	*md = a.out;
	*json = j.out;
	free(a.err);
	run_free(&b);
	free(j.err);
	run_free(&k);
}

/* The findings' kinds and cost_ms in summary --format json equal
 * findings --json's, in order; at least min_seen of them compared (a set
 * known to have findings must not pass by comparing none). */
static void check_findings_equal(char **files, size_t n, const char *json, size_t min_seen)
{
	char *argv[16] = { "findings" };
	for (size_t i = 0; i < n; i++)
		argv[1 + i] = files[i];
	argv[1 + n] = "--json";
	struct run f = run(cmd_findings, argv);
	CHECK(f.rc == 0);
	const char *fp = f.out ? strstr(f.out, "\"findings\":[") : NULL;
	const char *sp = json ? strstr(json, "\"findings\":{") : NULL;
	CHECK(fp && sp);
	size_t seen = 0;
	while (fp && sp && seen < 5) {
		const char *fk = strstr(fp, "{\"kind\":");
		const char *below = strstr(fp, "\"below\":[");
		if (!fk || (below && fk > below))
			break;
		const char *sk = strstr(sp, "{\"kind\":");
		CHECK(sk != NULL);
		if (!sk)
			break;
		char *k1 = value_of(fk, NULL, "kind"), *k2 = value_of(sk, NULL, "kind");
		char *c1 = value_of(fk, NULL, "cost_ms"), *c2 = value_of(sk, NULL, "cost_ms");
		CHECK(k1 && k2 && !strcmp(k1, k2));
		CHECK(c1 && c2 && !strcmp(c1, c2));
		free(k1);
		free(k2);
		free(c1);
		free(c2);
		fp = fk + 1;
		sp = sk + 1;
		seen++;
	}
	char *total = value_of(json, "\"findings\":{", "total");
	char want[32];
	snprintf(want, sizeof(want), "%zu", seen);
	CHECK(total && (seen == 5 || !strcmp(total, want)));
	CHECK(seen >= min_seen);
	free(total);
	run_free(&f);
}

static void test_memory_trace(void)
{
	char path[512];
	synth_path("summary_mem.frec", path, sizeof(path));
	CHECK(write_mem_trace(path) == 0);
	char *files[] = { path };
	char *md, *json;
	check_summary(files, 1, &md, &json);

	/* memory --json's numbers */
	struct run m = run(cmd_memory, (char *[]){ "memory", "--json", path, NULL });
	CHECK(m.rc == 0);
	char *p1 = value_of(m.out, "\"files\":[", "peak_bytes");
	char *p2 = value_of(json, "\"gpu_memory\":{", "peak_bytes");
	CHECK(p1 && p2 && !strcmp(p1, p2));
	/* and the trace's own truth, not only memory's agreement: at 150 ms
	 * pid 200 holds its six 20 MiB buffers and pid 100 only the 500-byte
	 * cuMemAlloc (A freed at 40 ms, B at 70, D at 80; the pinned host
	 * buffer is not device memory) */
	CHECK_STR(p2, "125829620");
	free(p1);
	free(p2);
	p1 = value_of(m.out, "\"files\":[", "peak_s");
	p2 = value_of(json, "\"gpu_memory\":{", "peak_s");
	CHECK(p1 && p2 && !strcmp(p1, p2));
	free(p1);
	free(p2);
	p1 = value_of(m.out, NULL, "failed_allocations_total");
	p2 = value_of(json, "\"gpu_memory\":{", "failed_allocations");
	CHECK(p1 && p2 && !strcmp(p1, p2) && !strcmp(p2, "1"));
	free(p1);
	free(p2);
	run_free(&m);
	CHECK(md && strstr(md, "- failed allocations: 1; first: cudaMalloc of 1.0 TiB") != NULL);

	/* CPU: start-up frames dropped, shares of 40 samples */
	const char *cpu = md ? strstr(md, "## CPU\n") : NULL;
	CHECK(cpu && strstr(cpu, "- 75.0% (30): main;alloc_a\n") != NULL);
	CHECK(cpu && strstr(cpu, "- 25.0% (10): main;alloc_b\n") != NULL);
	CHECK(cpu && !strstr(cpu, "_start"));
	/* missing data: one line each */
	CHECK(md && strstr(md, "## Stragglers\nno NCCL calls\n") != NULL);
	CHECK(md && strstr(md, "## RDMA\nno RDMA verbs calls\n") != NULL);
	CHECK(json && strstr(json, "\"stragglers\":{\"missing\":\"no NCCL calls\"}") != NULL);
	check_findings_equal(files, 1, json, 1); /* oom */
	free(md);
	free(json);
}

static void test_straggler_set(void)
{
	struct job j = { .nodes = 2, .ranks_per_node = 2, .steps = 30, .k = 1, .compute_ms = 40,
			 .jitter_ms = 0.5, .slow_rank = 3, .slow_ms = 10, .slow_share = 1,
			 .with_init = 1, .with_markers = 0, .seed = 1 };
	char paths[MAX_NODES][512];
	CHECK(write_job(&j, "summary", paths) == 0);
	char *files[] = { paths[0], paths[1] };
	char *md, *json;
	check_summary(files, 2, &md, &json);
	struct run s = run(cmd_stragglers, (char *[]){ "stragglers", paths[0], paths[1], "--json", NULL });
	CHECK(s.rc == 0);
	char *r1 = value_of(s.out, "\"straggler\":{", "rank"), *r2 = value_of(json, "\"straggler\":{", "rank");
	CHECK(r1 && r2 && !strcmp(r1, r2) && !strcmp(r2, "3"));
	char *c1 = value_of(s.out, "\"straggler\":{", "cost_ms_per_step");
	char *c2 = value_of(json, "\"straggler\":{", "cost_ms_per_step");
	CHECK(c1 && c2 && !strcmp(c1, c2));
	char *m1 = value_of(s.out, "\"straggler\":{", "confidence");
	char *m2 = value_of(json, "\"straggler\":{", "confidence");
	CHECK(m1 && m2 && !strcmp(m1, m2));
	free(r1);
	free(r2);
	free(c1);
	free(c2);
	free(m1);
	free(m2);
	run_free(&s);
	CHECK(md && strstr(md, "- straggler: rank 3 (host node-b") != NULL);
	CHECK(md && strstr(md, "ranks: 4 (NCCL)") != NULL);
	CHECK(md && strstr(md, "## GPU memory\nno CUDA events\n") != NULL);
	CHECK(json && strstr(json, "\"gpu_memory\":{\"missing\":\"no CUDA events\"}") != NULL);
	check_findings_equal(files, 2, json, 1); /* straggler */
	free(md);
	free(json);

	/* no straggler: "none" with the reason */
	j.slow_rank = -1;
	CHECK(write_job(&j, "summary", paths) == 0);
	check_summary(files, 2, &md, &json);
	CHECK(md && strstr(md, "- straggler: none (") != NULL);
	CHECK(json && strstr(json, "\"straggler\":null,\"no_straggler_reason\":\"") != NULL);
	free(md);
	free(json);
}

/* Every level of the layout: no larger than the one before, every heading
 * kept, and the shortened list in the heading line. */
static void test_levels(void)
{
	char path[512];
	synth_path("summary_mem.frec", path, sizeof(path));
	struct frec_error err;
	struct trace_set *ts;
	const char *p[] = { path };
	CHECK(trace_set_open(p, 1, &ts, &err) == 0);
	void *cpu = trace_set_use_model(ts, "cpu", NULL), *mem = trace_set_use_model(ts, "mem", NULL);
	void *st = trace_set_use_model(ts, "stragglers", NULL), *rd = trace_set_use_model(ts, "rdma", NULL);
	void *fx = trace_set_use_model(ts, "findings", NULL);
	CHECK(cpu && mem && st && rd && fx && trace_set_run(ts, &err) == 0);
	struct summary_input in = { ts, model_findings_result(fx), model_cpu_result(cpu),
				    model_mem_result(mem), model_stragglers_result(st),
				    model_rdma_result(rd) };
	size_t prev = SIZE_MAX;
	for (size_t l = 0; l < summary_levels(); l++) {
		char *text = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&text, &len);
		CHECK(summary_write(&in, SUMMARY_MD, l, m) == 0);
		fclose(m);
		/* the body, below the heading line that names what was shortened */
		const char *body = strstr(text, "## Recording\n");
		CHECK(body && strlen(body) <= prev);
		prev = body ? strlen(body) : 0;
		for (size_t i = 0; i < sizeof(headings) / sizeof(headings[0]); i++)
			CHECK(strstr(text, headings[i]) != NULL);
		CHECK(l == 0 || strstr(text, "shortened: cpu_stacks") != NULL);
		free(text);
		text = NULL;
		m = open_memstream(&text, &len);
		CHECK(summary_write(&in, SUMMARY_JSON, l, m) == 0);
		fclose(m);
		CHECK(json_ok(text));
		free(text);
	}
	trace_set_free(ts);
}

/* ---- a trace too large for the budget: STACKS CPU stacks of 7 frames
 * each, every frame a distinct function whose name is name_len bytes ---- */

#define BIG_STACKS 8
#define BIG_FRAMES 7

static int write_big_trace(const char *path, size_t name_len)
{
	static char names[BIG_STACKS * BIG_FRAMES][400];
	static struct synth_sym syms[BIG_STACKS * BIG_FRAMES];
	struct synth s;
	if (name_len >= sizeof(names[0]) || synth_open(&s, path))
		return -1;
	synth_process(&s, 100, 1, "trainer", "python train.py");
	synth_mapping(&s, 100, 0x400000, 0x500000, 0, 1, "/usr/bin/trainer");
	for (unsigned i = 0; i < BIG_STACKS * BIG_FRAMES; i++) {
		int n = snprintf(names[i], sizeof(names[i]), "fn%02u_", i);
		memset(names[i] + n, 'a' + (int)(i % 26), name_len - (size_t)n);
		names[i][name_len] = '\0';
		syms[i] = (struct synth_sym){ 0x1000u * (i + 1), 0x100, names[i] };
	}
	for (unsigned k = 0; k < BIG_STACKS; k++) {
		uint64_t ips[BIG_FRAMES];
		for (unsigned f = 0; f < BIG_FRAMES; f++) /* leaf first */
			ips[f] = 0x400000 + 0x1000u * (k * BIG_FRAMES + f + 1) + 0x10;
		synth_stack(&s, k + 1, 100, ips, 0, BIG_FRAMES);
		synth_samples(&s, 100, 100, k + 1, 10 * (BIG_STACKS - k)); /* 80, 70 ... 10 */
		/* a holder at the peak on each stack, never freed, and one failure */
		mem_call(&s, 100, FR_CUDA_MALLOC, AT_MS(10 + k), 0x10000000ull * (k + 1),
			 (uint64_t)(BIG_STACKS - k) << 20, k + 1, 0, 0);
	}
	mem_call(&s, 100, FR_CUDA_MALLOC, AT_MS(50), 0, 1ull << 40, 1, 2, 0);
	synth_dso(&s, 1, 0, "/usr/bin/trainer", syms, BIG_STACKS * BIG_FRAMES);
	findings_trace_body(&s, 2000000000ull); /* two findings, with their texts */
	return synth_close(&s, 0, 0);
}

/* summary_write's bytes at every level of files, md or json; returns the
 * first level within the budget (summary_levels() if none). */
static size_t first_fitting(const char **files, size_t n, enum summary_format fmt, char **texts,
			    size_t *lens)
{
	struct frec_error err;
	struct trace_set *ts;
	size_t first = summary_levels();
	CHECK(trace_set_open(files, n, &ts, &err) == 0);
	void *cpu = trace_set_use_model(ts, "cpu", NULL), *mem = trace_set_use_model(ts, "mem", NULL);
	void *st = trace_set_use_model(ts, "stragglers", NULL), *rd = trace_set_use_model(ts, "rdma", NULL);
	void *fx = trace_set_use_model(ts, "findings", NULL);
	CHECK(cpu && mem && st && rd && fx && trace_set_run(ts, &err) == 0);
	struct summary_input in = { ts, model_findings_result(fx), model_cpu_result(cpu),
				    model_mem_result(mem), model_stragglers_result(st),
				    model_rdma_result(rd) };
	for (size_t l = 0; l < summary_levels(); l++) {
		FILE *m = open_memstream(&texts[l], &lens[l]);
		CHECK(summary_write(&in, fmt, l, m) == 0);
		fclose(m);
		if (first == summary_levels() && summary_tokens(lens[l]) <= SUMMARY_MAX_TOKENS)
			first = l;
	}
	trace_set_free(ts);
	return first;
}

/* cmd_summary on n_files big traces: it prints the first level of
 * summary_write that fits the budget, byte for byte, and that is the level
 * want[md, json] names (the set is sized for it); never over 8,000 bytes. */
static void check_forced(size_t n_files, size_t name_len, const size_t want[2])
{
	/* the files by name, from their directory: the JSON holds each path,
	 * and its size must not depend on where the test writes */
	char paths[8][300], dir[512], cwd[4096];
	const char *files[8];
	synth_path("", dir, sizeof(dir));
	CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
	CHECK(chdir(dir) == 0);
	for (size_t i = 0; i < n_files && i < 8; i++) {
		int k = snprintf(paths[i], sizeof(paths[i]), "summary_big_%zu_%zu_", n_files, i);
		memset(paths[i] + k, 'n', 200 - (size_t)k);
		snprintf(paths[i] + 200, sizeof(paths[i]) - 200, ".frec");
		CHECK(write_big_trace(paths[i], name_len) == 0);
		files[i] = paths[i];
	}
	for (int f = 0; f < 2; f++) {
		enum summary_format fmt = f ? SUMMARY_JSON : SUMMARY_MD;
		char *texts[16] = { 0 };
		size_t lens[16] = { 0 };
		CHECK(summary_levels() <= 16);
		size_t first = first_fitting(files, n_files, fmt, texts, lens);
		printf("%s, %zu files: level 0 is %zu bytes, level %zu the first to fit (%zu bytes)\n",
		       f ? "json" : "md", n_files, lens[0], first,
		       first < summary_levels() ? lens[first] : 0);
		CHECK_EQ_U64(first, want[f]);
		/* a level above 0 is chosen only when the ones before it are over */
		for (size_t l = 0; l < first && l < summary_levels(); l++)
			CHECK(summary_tokens(lens[l]) > SUMMARY_MAX_TOKENS);
		char *argv[16] = { "summary" };
		for (size_t i = 0; i < n_files; i++)
			argv[1 + i] = (char *)files[i];
		argv[1 + n_files] = f ? "--format" : NULL;
		argv[2 + n_files] = f ? "json" : NULL;
		struct run r = run(cmd_summary, argv);
		CHECK(r.rc == 0);
		CHECK(r.out && strlen(r.out) <= 8000 && summary_tokens(strlen(r.out)) <= SUMMARY_MAX_TOKENS);
		CHECK(r.out && first < summary_levels() && !strcmp(r.out, texts[first]));
		char level[32];
		snprintf(level, sizeof(level), "\"level\":%zu,", first);
		if (f) {
			CHECK(r.out && json_ok(r.out) && strstr(r.out, level));
			CHECK(first == 0 || (r.out && strstr(r.out, "\"shortened\":[\"cpu_stacks\"")));
			/* level 1 keeps 3 CPU stacks of the 9 (8 here, the findings
			 * trace's one): the third's leaf, not the fourth's */
			CHECK(first != 1 || (r.out && strstr(r.out, "\"stacks\":9,") &&
					     strstr(r.out, ";fn14_") && !strstr(r.out, ";fn21_")));
		}
		run_free(&r);
		for (size_t l = 0; l < summary_levels(); l++)
			free(texts[l]);
	}
	CHECK(chdir(cwd) == 0);
}

/* The budget forced: eight files of long stacks, GPU memory holders and
 * findings are 8,769 bytes of JSON at level 0 (the Markdown, terser, stays
 * at 5,829 and needs no shortening): cmd_summary has to pick level 1. */
static void test_forced_shortening(void)
{
	check_forced(8, 300, (const size_t[2]){ 0, 1 });
}

static void test_usage(void)
{
	struct run r = run(cmd_summary, (char *[]){ "summary", "--help", NULL });
	CHECK(r.rc == 0 && r.out && strstr(r.out, "bytes / 4") && strstr(r.out, "never_freed_bytes"));
	run_free(&r);
	r = run(cmd_summary, (char *[]){ "summary", NULL });
	CHECK(r.rc == 2);
	run_free(&r);
	r = run(cmd_summary, (char *[]){ "summary", "x.frec", "--format", "html", NULL });
	CHECK(r.rc == 2 && r.err && strstr(r.err, "unknown format 'html'"));
	run_free(&r);
}

int main(void)
{
	test_memory_trace();
	test_straggler_set();
	test_levels();
	test_forced_shortening();
	test_usage();
	return check_finish();
}
