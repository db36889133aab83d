/* explain on synthetic traces agrees with the commands whose numbers it
 * gathers: CPU total and self equal the sums of `flame --kind cpu`'s
 * folded lines holding the function (and ending in it), GPU memory the
 * sums of `flame --kind mem-alloc|mem-inuse`'s, the CUDA calls under the
 * outermost function every row of `cuda --json`, the system calls under
 * train_step the getpid calls the trace holds; the findings whose where
 * holds a frame are listed with findings' numbers; a Python frame matches
 * every line of it; a name no frame has fails with the frames holding it
 * (a function without CPU samples found by its CUDA calls' stacks);
 * --pid keeps one process; two runs give the same bytes. */
#include "check.h"
#include "test_analyzer_findings_trace.h"
#include "test_analyzer_models_trace.h"
#include "test_analyzer_run.h"

#include "commands.h"
#include "func_story.h"

#include <inttypes.h>

/* The folded lines' values whose frames hold fn (self: whose leaf is fn). */
static uint64_t folded_sum(const char *folded, const char *fn, int self)
{
	uint64_t sum = 0;
	char *copy = strdup(folded);
	for (char *save, *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' ');
		if (!sp)
			continue;
		*sp = '\0';
		uint64_t v = strtoull(sp + 1, NULL, 10);
		int hit = 0;
		char *leaf = NULL;
		for (char *s2, *fr = strtok_r(line, ";", &s2); fr; fr = strtok_r(NULL, ";", &s2)) {
			hit |= func_frame_matches(fr, fn);
			leaf = fr;
		}
		if (self ? leaf && func_frame_matches(leaf, fn) : hit)
			sum += v;
	}
	free(copy);
	return sum;
}

/* The number after "key": following at in text; UINT64_MAX when absent. */
static uint64_t json_u64(const char *at, const char *key)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	const char *p = at ? strstr(at, pat) : NULL;
	return p ? strtoull(p + strlen(pat), NULL, 10) : UINT64_MAX;
}

static char *run_out(cmd_fn cmd, char **argv, int want_rc)
{
	struct cmd_run r = cmd_run_argv(cmd, argv);
	CHECK_EQ_U64(r.rc, want_rc);
	if (r.rc != want_rc)
		fprintf(stderr, "%s: %s", argv[0], r.err);
	free(r.err);
	return r.out;
}

static void check_cpu(const char *trace, const char *fn)
{
	char *folded = run_out(cmd_flame, (char *[]){ "flame", (char *)trace, "-o", "-", NULL }, 0);
	char *ex = run_out(cmd_explain, (char *[]){ "explain", (char *)fn, (char *)trace, "--json",
						    NULL }, 0);
	uint64_t total = folded_sum(folded, fn, 0), self = folded_sum(folded, fn, 1);
	CHECK(total > 0);
	CHECK_EQ_U64(json_u64(ex, "total"), total);
	CHECK_EQ_U64(json_u64(ex, "self"), self);
	/* the processes' samples add up to the total */
	uint64_t procs = 0;
	for (const char *p = strstr(ex, "\"processes\":["); p && (p = strstr(p, "\"samples\":")); p++)
		procs += strtoull(p + 10, NULL, 10);
	CHECK_EQ_U64(procs, total);
	free(folded);
	free(ex);
}

static void check_mem(const char *trace, const char *fn)
{
	const char *kinds[] = { "mem-alloc", "mem-inuse" }, *keys[] = { "allocated_bytes",
									 "inuse_at_peak_bytes" };
	char *ex = run_out(cmd_explain, (char *[]){ "explain", (char *)fn, (char *)trace, "--json",
						    NULL }, 0);
	for (int k = 0; k < 2; k++) {
		char *folded = run_out(cmd_flame, (char *[]){ "flame", (char *)trace, "--kind",
							      (char *)kinds[k], "-o", "-", NULL }, 0);
		CHECK(folded_sum(folded, fn, 0) > 0);
		CHECK_EQ_U64(json_u64(strstr(ex, "\"gpu_memory\""), keys[k]), folded_sum(folded, fn, 0));
		free(folded);
	}
	free(ex);
}

/* Every row of cuda --json is under main (every stack starts there). */
static void check_cuda(const char *trace)
{
	char *cuda = run_out(cmd_cuda, (char *[]){ "cuda", (char *)trace, "--json", NULL }, 0);
	char *ex = run_out(cmd_explain, (char *[]){ "explain", "main", (char *)trace, "--json",
						    "--top", "100", NULL }, 0);
	size_t rows = 0;
	uint64_t calls = 0;
	for (const char *p = strstr(cuda, "{\"function\":\""); p; p = strstr(p + 1, "{\"function\":\"")) {
		char name[64], want[256];
		sscanf(p + 13, "%63[^\"]", name);
		uint64_t c = json_u64(p, "calls"), t = json_u64(p, "total_ns"), e = json_u64(p, "errors");
		snprintf(want, sizeof(want), "{\"name\":\"%s\",\"calls\":%" PRIu64 ",\"total_ns\":%" PRIu64
			 ",\"errors\":%" PRIu64 "}", name, c, t, e);
		CHECK(strstr(ex, want) != NULL);
		if (!strstr(ex, want))
			fprintf(stderr, "explain main lacks %s\n", want);
		rows++;
		calls += c;
	}
	CHECK_EQ_U64(rows, 7);
	CHECK_EQ_U64(json_u64(strstr(ex, "\"cuda\":"), "calls"), calls);
	CHECK_EQ_U64(calls, json_u64(cuda, "events"));
	free(cuda);
	free(ex);
}

int main(void)
{
	char trace[512], ftrace[512];
	struct synth s;
	synth_path("analyzer_explain.frec", trace, sizeof(trace));
	CHECK_EQ_U64(synth_open(&s, trace), 0);
	std_trace_body(&s);
	models_trace_body(&s);
	findings_trace_body(&s, s.ts_ns + 100000000ull);
	CHECK_EQ_U64(synth_close(&s, 0, 0), 0);

	check_cpu(trace, "main");
	check_cpu(trace, "work_a");
	check_cpu(trace, "train_step");
	check_cpu(trace, "schedule_[k]");
	check_cpu(trace, "foo::bar()");
	check_mem(trace, "main");
	check_mem(trace, "work_a");
	check_mem(trace, "work_b");
	check_cuda(trace);

	/* work_a: its caller, its module and symbol, its CUDA calls (stack 1
	 * of models_trace_body: 3 cudaMalloc, one failed, a free, a copy, a
	 * synchronize), the oom finding (number 2) whose where holds it */
	char *ex = run_out(cmd_explain, (char *[]){ "explain", "work_a", trace, "--json", NULL }, 0);
	CHECK(strstr(ex, "\"callers\":[{\"name\":\"main\",\"samples\":300,") != NULL);
	CHECK(strstr(ex, "\"callees\":[]") != NULL);
	CHECK(strstr(ex, "\"module\":\"/usr/bin/trainer\",\"offset\":\"0x2000\"") != NULL);
	CHECK(strstr(ex, "\"cuda\":{\"calls\":6,\"total_ns\":114000,\"errors\":1,") != NULL);
	CHECK(strstr(ex, "{\"name\":\"cudaMalloc\",\"calls\":3,\"total_ns\":15000,\"errors\":1}") != NULL);
	CHECK(strstr(ex, "\"findings\":[{\"number\":2,\"kind\":\"oom\",\"cost_ms\":null") != NULL);
	CHECK(strstr(ex, "\"processes\":[{\"file\":0,\"pid\":100,\"rank\":null,\"comm\":\"trainer\","
			 "\"samples\":300,\"cuda_calls\":6,") != NULL);
	char *again = run_out(cmd_explain, (char *[]){ "explain", "work_a", trace, "--json", NULL }, 0);
	CHECK_STR(ex, again);
	free(again);
	free(ex);

	/* train_step: its getpid calls (10 of 0.4 ms, stack 70) */
	ex = run_out(cmd_explain, (char *[]){ "explain", "train_step", trace, "--json", NULL }, 0);
	CHECK(strstr(ex, "\"syscalls\":{\"calls\":10,\"total_ns\":4000000,\"errors\":0,"
			 "\"functions\":[{\"name\":\"getpid\",\"calls\":10,") != NULL);
	free(ex);

	/* --pid: only pid 500's share of main */
	ex = run_out(cmd_explain, (char *[]){ "explain", "main", trace, "--pid", "500", "--json", NULL }, 0);
	CHECK_EQ_U64(json_u64(ex, "total"), 30);
	CHECK(strstr(ex, "\"processes\":[{\"file\":0,\"pid\":500,") != NULL);
	CHECK(strstr(ex, "\"pid\":100") == NULL);
	free(ex);

	/* the findings trace alone: host_sync's where holds train_step and
	 * pageable_copy's to_device */
	synth_path("analyzer_explain_findings.frec", ftrace, sizeof(ftrace));
	CHECK_EQ_U64(synth_open(&s, ftrace), 0);
	findings_trace_body(&s, 2000000000ull);
	CHECK_EQ_U64(synth_close(&s, 0, 0), 0);
	char *fx = run_out(cmd_findings, (char *[]){ "findings", ftrace, "--json", NULL }, 0);
	ex = run_out(cmd_explain, (char *[]){ "explain", "train_step", ftrace, "--json", NULL }, 0);
	CHECK(strstr(fx, "\"kind\":\"host_sync\",\"cost_ms\":26.000,\"cost_ms_per_step\":2.600,"
			 "\"share\":0.5098,\"pids\":[500],\"ranks\":[],"
			 "\"where\":[\"main\",\"train_step\",\"cudaDeviceSynchronize\"]") != NULL);
	CHECK(strstr(ex, "\"findings\":[{\"number\":1,\"kind\":\"host_sync\",\"cost_ms\":26.000,"
			 "\"cost_ms_per_step\":2.600,\"share\":0.5098}]") != NULL);
	free(ex);
	ex = run_out(cmd_explain, (char *[]){ "explain", "main", ftrace, NULL }, 0);
	CHECK(strstr(ex, "  1. host_sync: 26.0 ms of GPU idle (2.60 ms per step, 51.0%)\n") != NULL);
	CHECK(strstr(ex, "  2. pageable_copy: 10.0 ms") != NULL);
	free(ex);
	free(fx);

	/* a name no frame has: exit 1, the frames that hold it */
	struct cmd_run r = CMD_RUN(cmd_explain, "explain", "work", trace);
	CHECK_EQ_U64(r.rc, 1);
	CHECK(strstr(r.out, "no frame of the recording is this function") != NULL);
	CHECK(strstr(r.out, "66.4%  work_a\n") != NULL && strstr(r.out, "22.1%  work_b\n") != NULL);
	CHECK(strstr(r.err, "no frame is 'work'") != NULL);
	cmd_run_free(&r);
	/* to_device spends no CPU (no sample) but calls cudaMemcpy: found by its CUDA calls */
	r = CMD_RUN(cmd_explain, "explain", "to_dev", ftrace);
	CHECK_EQ_U64(r.rc, 1);
	CHECK(strstr(r.out, "   0.0%  to_device\n") != NULL);
	cmd_run_free(&r);
	r = CMD_RUN(cmd_explain, "explain", "to_device", ftrace, "--json");
	CHECK_EQ_U64(r.rc, 0);
	CHECK(strstr(r.out, "\"total\":0,") != NULL);
	CHECK(strstr(r.out, "{\"name\":\"cudaMemcpy\",\"calls\":10,\"total_ns\":10000000,\"errors\":0}") != NULL);
	cmd_run_free(&r);
	r = CMD_RUN(cmd_explain, "explain", "main");
	CHECK_EQ_U64(r.rc, 2);
	CHECK(strstr(r.err, "no trace file given") != NULL);
	cmd_run_free(&r);

	/* Python frames match every line; a longer name does not match */
	CHECK(func_frame_matches("forward (model.py:12)", "forward"));
	CHECK(func_frame_matches("forward", "forward"));
	CHECK(!func_frame_matches("forward_hook (model.py:3)", "forward"));
	CHECK(!func_frame_matches("forwardx", "forward"));
	CHECK(!func_frame_matches("forward", ""));
	return check_finish();
}
