/* The GPU memory model and its outputs (flame --kind mem-*, memory) on
 * synthetic traces: exact peak and bytes per stack at the peak, --at
 * before and after a free, leaks, a failed allocation with its top
 * holders, the before-recording bucket, the caching-allocator label, the
 * live-table bound, and hostile values. */
#include "check.h"
#include "test_analyzer_common.h"

#include "commands.h"
#include "flame_tree.h"
#include "model_mem.h"
#include "trace_set.h"

#include <time.h>

#define MS(x) (1000000000ull + (uint64_t)(x) * 1000000ull) /* entry at x ms after the start */

static void mem_call(struct synth *s, uint32_t pid, uint16_t func, uint64_t ts, uint64_t ptr,
		     uint64_t bytes, uint32_t stack, int64_t result, int32_t device)
{
	synth_cuda(s, (struct fr_ev_cuda){ .c = { .ts_ns = ts, .pid = pid }, .func = func,
					   .stack_id = stack, .duration_ns = 1000, .result = result,
					   .ptr = ptr, .bytes = bytes, .device = device });
}

/* pid 100 "trainer" (device 0):
 *   5 ms   cudaHostAlloc 0x7000000 4096        stack 1 (pinned host)
 *  10 ms   cudaMalloc    0xA000    1000        stack 1  main;alloc_a
 *  20 ms   cudaMalloc    0xB000    3000        stack 2  main;alloc_b
 *  30 ms   cuMemAlloc    0xC000     500        stack 3  main;leak_fn
 *  40 ms   cudaFree      0xA000                         -> 3500
 *  50 ms   cudaMalloc    0xD000    2000        stack 1  -> 5500 (peak)
 *  60 ms   cudaMalloc    fails (2), 1 TiB      stack 4  main;big_fn
 *  70 ms   cudaFree      0xB000                         -> 2500
 *  80 ms   cudaFree      0xD000                         -> 500
 *  90 ms   cudaFree      0xDEAD  (never seen: before recording)
 *  95 ms   cudaFree      NULL
 * pid 200 "loader" (device 1): six cudaMalloc of 20 MiB from 100 ms, never
 * freed: a caching allocator. */
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
		 s3[] = { 0x404010, 0x401010 }, s4[] = { 0x405010, 0x401010 };
	synth_stack(&s, 1, 100, s1, 0, 2);
	synth_stack(&s, 2, 100, s2, 0, 2);
	synth_stack(&s, 3, 100, s3, 0, 2);
	synth_stack(&s, 4, 100, s4, 0, 2);
	synth_stack(&s, 5, 200, s1, 0, 2);
	mem_call(&s, 100, FR_CUDA_HOST_ALLOC, MS(5), 0x7000000, 4096, 1, 0, 0);
	mem_call(&s, 100, FR_CUDA_MALLOC, MS(10), 0xA000, 1000, 1, 0, 0);
	mem_call(&s, 100, FR_CUDA_MALLOC, MS(20), 0xB000, 3000, 2, 0, 0);
	mem_call(&s, 100, FR_CU_MEM_ALLOC, MS(30), 0xC000, 500, 3, 0, 0);
	mem_call(&s, 100, FR_CUDA_FREE, MS(40), 0xA000, 0, 1, 0, 0);
	mem_call(&s, 100, FR_CUDA_MALLOC, MS(50), 0xD000, 2000, 1, 0, 0);
	mem_call(&s, 100, FR_CUDA_MALLOC, MS(60), 0, 1ull << 40, 4, 2, 0);
	mem_call(&s, 100, FR_CUDA_FREE, MS(70), 0xB000, 0, 2, 0, 0);
	mem_call(&s, 100, FR_CUDA_FREE, MS(80), 0xD000, 0, 1, 0, 0);
	mem_call(&s, 100, FR_CUDA_FREE, MS(90), 0xDEAD, 0, 1, 0, 0);
	mem_call(&s, 100, FR_CUDA_FREE, MS(95), 0, 0, 1, 0, 0);
	for (int i = 0; i < 6; i++)
		mem_call(&s, 200, FR_CUDA_MALLOC, MS(100 + 10 * i), 0x10000000ull * (i + 1),
			 20ull << 20, 5, 0, 1);
	static const struct synth_sym syms[] = {
		{ 0x1000, 0x100, "main" }, { 0x2000, 0x100, "alloc_a" }, { 0x3000, 0x100, "alloc_b" },
		{ 0x4000, 0x100, "leak_fn" }, { 0x5000, 0x100, "big_fn" },
	};
	synth_dso(&s, 1, 0, "/usr/bin/trainer", syms, 5);
	return synth_close(&s, 0, 0);
}

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

static char *folded(const struct flame_tree *t)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	flame_write_folded(t, mem);
	fclose(mem);
	char *sorted = sorted_lines(text);
	free(text);
	return sorted;
}

static const struct mem_series *find_series(const struct mem_result *r, uint32_t pid,
					    enum mem_space space)
{
	for (size_t i = 0; i < r->n_series; i++)
		if (r->series[i].pid == pid && r->series[i].space == space)
			return &r->series[i];
	return NULL;
}

static void test_model(const char *path)
{
	const char *paths[] = { path };
	struct trace_set *ts;
	struct frec_error err;
	CHECK_EQ_U64(trace_set_open(paths, 1, &ts, &err), 0);
	struct model_opts mo = { .filter_pid = 1, .pid = 100 };
	void *mem = trace_set_add_model(ts, &model_mem_ops, &mo);
	CHECK_EQ_U64(trace_set_run(ts, &err), 0);
	const struct mem_result *r = model_mem_result(mem);

	/* exact peak and bytes per stack at the peak */
	CHECK_EQ_U64(r->files[0].peak_bytes, 5500);
	CHECK_EQ_U64(r->files[0].peak_t_ns, 50001000);
	char *f = folded(r->inuse);
	CHECK_STR(f, "main;alloc_a;cudaMalloc 2000\nmain;alloc_b;cudaMalloc 3000\nmain;leak_fn;cuMemAlloc_v2 500\n");
	free(f);
	f = folded(r->alloc);
	CHECK_STR(f, "main;alloc_a;cudaMalloc 3000\nmain;alloc_b;cudaMalloc 3000\nmain;leak_fn;cuMemAlloc_v2 500\n");
	free(f);

	const struct mem_series *d = find_series(r, 100, MEM_SPACE_DEVICE);
	CHECK(d != NULL);
	if (d) {
		CHECK_EQ_U64(d->device, 0);
		CHECK_EQ_U64(d->peak_bytes, 5500);
		CHECK_EQ_U64(d->peak_t_ns, 50001000);
		CHECK_EQ_U64(d->allocs, 4);
		CHECK_EQ_U64(d->frees, 3);
		CHECK_EQ_U64(d->failed_allocs, 1);
		CHECK_EQ_U64(d->before_frees, 1);
		/* exact leaked bytes: never freed by the end of the recording */
		CHECK_EQ_U64(d->end_bytes, 500);
		CHECK_EQ_U64(d->end_count, 1);
		CHECK_EQ_U64(d->n_top_leaks, 1);
		CHECK_EQ_U64(d->top_leaks[0].stack_id, 3);
		CHECK_EQ_U64(d->top_leaks[0].bytes, 500);
		CHECK_EQ_U64(d->n_top_at_peak, 3);
		CHECK_EQ_U64(d->top_at_peak[0].stack_id, 2);
		CHECK_EQ_U64(d->top_at_peak[0].bytes, 3000);
		CHECK_EQ_U64(d->top_at_peak[1].bytes, 2000);
		/* points: the curve goes 1000 3000? no: 1000, 4000, 4500, 3500, 5500, 2500, 500 */
		CHECK(d->n_points >= 7);
		uint64_t maxp = 0;
		for (size_t i = 0; i < d->n_points; i++)
			if (d->points[i].bytes > maxp)
				maxp = d->points[i].bytes;
		CHECK_EQ_U64(maxp, 5500);
		CHECK_EQ_U64(d->points[d->n_points - 1].bytes, 500);
	}
	const struct mem_series *h = find_series(r, 100, MEM_SPACE_PINNED_HOST);
	CHECK(h != NULL);
	if (h) {
		CHECK_EQ_U64(h->end_bytes, 4096);
		CHECK_EQ_U64((uint64_t)(int64_t)h->device, (uint64_t)(int64_t)-1);
	}
	/* a failed allocation: stack, size, time, top holders then */
	CHECK_EQ_U64(r->n_failures, 1);
	const struct mem_failure *fl = &r->failures[0];
	CHECK_EQ_U64(fl->stack_id, 4);
	CHECK_EQ_U64(fl->bytes, 1ull << 40);
	CHECK_EQ_U64(fl->error, 2);
	CHECK_EQ_U64(fl->t_ns, 60001000);
	CHECK_EQ_U64(fl->inuse_bytes, 5500);
	CHECK_EQ_U64(fl->n_holders, 3);
	CHECK_EQ_U64(fl->holders[0].stack_id, 2);
	CHECK_EQ_U64(fl->holders[0].bytes, 3000);
	CHECK_EQ_U64(fl->holders[1].stack_id, 1);
	CHECK_EQ_U64(fl->holders[1].bytes, 2000);
	CHECK_EQ_U64(fl->holders[2].stack_id, 3);
	CHECK_EQ_U64(fl->holders[2].bytes, 500);
	CHECK_EQ_U64(r->files[0].null_frees, 1);
	CHECK_EQ_U64(r->n_procs, 1);
	CHECK_EQ_U64(r->procs[0].caching_allocator, 0);
	trace_set_free(ts);

	/* the whole file: pid 200 is a caching allocator, and the peak moves */
	CHECK_EQ_U64(trace_set_open(paths, 1, &ts, &err), 0);
	mem = trace_set_add_model(ts, &model_mem_ops, NULL);
	CHECK_EQ_U64(trace_set_run(ts, &err), 0);
	r = model_mem_result(mem);
	CHECK_EQ_U64(r->files[0].peak_bytes, 500 + 6 * (20ull << 20));
	CHECK_EQ_U64(r->files[0].peak_t_ns, 150001000);
	int caching = 0;
	for (size_t i = 0; i < r->n_procs; i++)
		if (r->procs[i].pid == 200)
			caching = r->procs[i].caching_allocator && r->procs[i].pytorch_like;
	CHECK(caching);
	trace_set_free(ts);
}

/* The in-use graph at SECONDS, via the command. */
static char *flame_at(const char *path, const char *at)
{
	struct run r = run(cmd_flame, (char *[]){ "flame", (char *)path, "--kind", "mem-inuse", "--pid",
						  "100", "--at", (char *)at, NULL });
	CHECK_EQ_U64(r.rc, 0);
	char *sorted = sorted_lines(r.out);
	run_free(&r);
	return sorted;
}

static void test_commands(const char *path)
{
	char *f = flame_at(path, "0.035");
	CHECK_STR(f, "main;alloc_a;cudaMalloc 1000\nmain;alloc_b;cudaMalloc 3000\nmain;leak_fn;cuMemAlloc_v2 500\n");
	free(f);
	/* the free at 40 ms returns at 40.001 ms: before it, then after it */
	f = flame_at(path, "0.040");
	CHECK_STR(f, "main;alloc_a;cudaMalloc 1000\nmain;alloc_b;cudaMalloc 3000\nmain;leak_fn;cuMemAlloc_v2 500\n");
	free(f);
	f = flame_at(path, "0.0401");
	CHECK_STR(f, "main;alloc_b;cudaMalloc 3000\nmain;leak_fn;cuMemAlloc_v2 500\n");
	free(f);
	f = flame_at(path, "peak");
	CHECK_STR(f, "main;alloc_a;cudaMalloc 2000\nmain;alloc_b;cudaMalloc 3000\nmain;leak_fn;cuMemAlloc_v2 500\n");
	free(f);
	f = flame_at(path, "1000"); /* after the end: what is left */
	CHECK_STR(f, "main;leak_fn;cuMemAlloc_v2 500\n");
	free(f);

	struct run r = run(cmd_flame, (char *[]){ "flame", (char *)path, "--kind", "mem-inuse", NULL });
	CHECK_EQ_U64(r.rc, 0);
	CHECK(strstr(r.err, "1 free of memory allocated before the recording") != NULL);
	run_free(&r);
	r = run(cmd_flame, (char *[]){ "flame", (char *)path, "--kind", "mem-alloc", "--format", "svg", NULL });
	CHECK_EQ_U64(r.rc, 0);
	CHECK(strstr(r.out, "<svg") != NULL && strstr(r.out, "GPU bytes allocated per stack") != NULL);
	run_free(&r);
	r = run(cmd_flame, (char *[]){ "flame", (char *)path, "--kind", "mem-inuse", "--at", "soon", NULL });
	CHECK_EQ_U64(r.rc, 2);
	run_free(&r);
	r = run(cmd_flame, (char *[]){ "flame", (char *)path, "--kind", "mem-inuse", "--pid", "4242", NULL });
	CHECK_EQ_U64(r.rc, 1);
	CHECK(strstr(r.err, "no CUDA allocation events of pid 4242") != NULL);
	run_free(&r);

	r = run(cmd_memory, (char *[]){ "memory", (char *)path, NULL });
	CHECK_EQ_U64(r.rc, 0);
	CHECK(strstr(r.out, "process 100 (trainer), device 0") != NULL);
	CHECK(strstr(r.out, "5.4 KiB at 0.050001 s") != NULL);
	CHECK(strstr(r.out, "1 free of memory allocated before the recording") != NULL);
	CHECK(strstr(r.out, "leak_fn <- main") != NULL);
	CHECK(strstr(r.out, "reserved by a caching allocator (segments)") != NULL);
	CHECK(strstr(r.out, "cudaMalloc of 1.0 TiB failed: cudaErrorMemoryAllocation (2)") != NULL);
	CHECK(strstr(r.out, "pinned host memory") != NULL);
	if (getenv("SHOW"))
		fputs(r.out, stdout);
	run_free(&r);
	r = run(cmd_memory, (char *[]){ "memory", "--json", "--pid", "100", (char *)path, NULL });
	CHECK_EQ_U64(r.rc, 0);
	CHECK(strstr(r.out, "\"peak_bytes\":5500,\"peak_s\":0.050001000") != NULL);
	CHECK(strstr(r.out, "\"before_recording_frees\":1") != NULL);
	CHECK(strstr(r.out, "\"top_holders\":[{\"bytes\":3000,\"allocations\":1,\"stack\":[\"main\",\"alloc_b\"]}") != NULL);
	run_free(&r);
	r = run(cmd_memory, (char *[]){ "memory", "--help", NULL });
	CHECK(r.rc == 0 && strstr(r.out, "examples:"));
	run_free(&r);
	r = run(cmd_memory, (char *[]){ "memory", (char *)path, "--rows", "0", NULL });
	CHECK_EQ_U64(r.rc, 2);
	run_free(&r);
}

/* 1M alloc/free pairs on 3 stacks, fed straight into the model: the live
 * table stays small, whatever the number of events. */
static void test_bounded(const char *path)
{
	const char *paths[] = { path };
	struct trace_set *ts;
	struct frec_error err;
	CHECK_EQ_U64(trace_set_open(paths, 1, &ts, &err), 0);
	CHECK_EQ_U64(trace_set_run(ts, &err), 0);
	void *m = model_mem_ops.create(NULL);
	struct fr_ev_cuda ev = { .c = { .h = { .size = sizeof(ev), .type = FR_EV_CUDA }, .pid = 7,
				       .tid = 7 }, .duration_ns = 100 };
	const uint64_t pairs = 1000000;
	uint64_t feed_failures = 0;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t i = 0; i < pairs; i++) {
		ev.c.ts_ns = 1000000000ull + i * 1000;
		ev.func = FR_CUDA_MALLOC;
		ev.ptr = 0x100000 + (i % 8) * 0x1000 + ((i / 8) << 20);
		ev.bytes = 256 * (1 + i % 3);
		ev.stack_id = 1 + (uint32_t)(i % 3);
		feed_failures += model_mem_ops.feed(m, 0, &ev.c.h) != 0;
		if (i >= 8) { /* keep 8 live: free the one from 8 allocations ago */
			uint64_t j = i - 8;
			ev.func = FR_CUDA_FREE;
			ev.ptr = 0x100000 + (j % 8) * 0x1000 + ((j / 8) << 20);
			feed_failures += model_mem_ops.feed(m, 0, &ev.c.h) != 0;
		}
	}
	CHECK_EQ_U64(feed_failures, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK_EQ_U64(model_mem_ops.finish(m, ts, &err), 0);
	const struct mem_result *r = model_mem_result(m);
	CHECK_EQ_U64(r->live_entries_max, 9);
	CHECK_EQ_U64(r->stacks, 3);
	CHECK_EQ_U64(r->series[0].end_count, 8);
	CHECK(r->series[0].n_points <= 2048);
	double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("model_mem: %.1f M events/s (%" PRIu64 " events, live high-water %zu)\n",
	       (double)(2 * pairs - 8) / s / 1e6, 2 * pairs - 8, r->live_entries_max);
	model_mem_ops.destroy(m);
	trace_set_free(ts);
}

/* The one-pass peak snapshot against brute force: random allocations and
 * frees on 5 stacks; the bytes per stack at the peak must match a copy
 * taken at every new peak. */
static void test_peak_random(const char *path)
{
	const char *paths[] = { path };
	struct trace_set *ts;
	struct frec_error err;
	CHECK_EQ_U64(trace_set_open(paths, 1, &ts, &err), 0);
	CHECK_EQ_U64(trace_set_run(ts, &err), 0);
	for (unsigned seed = 1; seed <= 20; seed++) {
		void *m = model_mem_ops.create(NULL);
		uint64_t live_ptr[64] = { 0 }, live_bytes[64] = { 0 };
		uint32_t live_stack[64] = { 0 };
		uint64_t per_stack[6] = { 0 }, at_peak[6] = { 0 }, total = 0, peak = 0;
		uint32_t x = seed * 2654435761u;
		struct fr_ev_cuda ev = { .c = { .h = { .size = sizeof(ev), .type = FR_EV_CUDA },
					       .pid = 9, .tid = 9 }, .duration_ns = 10 };
		for (uint64_t i = 0; i < 5000; i++) {
			x ^= x << 13; x ^= x >> 17; x ^= x << 5;
			unsigned k = x % 64;
			ev.c.ts_ns = 1000000000ull + i * 100;
			if (live_ptr[k]) {
				ev.func = FR_CUDA_FREE;
				ev.ptr = live_ptr[k];
				per_stack[live_stack[k]] -= live_bytes[k];
				total -= live_bytes[k];
				live_ptr[k] = 0;
			} else {
				ev.func = FR_CUDA_MALLOC;
				ev.ptr = live_ptr[k] = 0x100000 + i * 0x100;
				ev.bytes = live_bytes[k] = 1 + (x >> 8) % 1000;
				ev.stack_id = live_stack[k] = 1 + (x >> 20) % 5;
				per_stack[live_stack[k]] += live_bytes[k];
				total += live_bytes[k];
				if (total > peak) {
					peak = total;
					memcpy(at_peak, per_stack, sizeof(at_peak));
				}
			}
			model_mem_ops.feed(m, 0, &ev.c.h);
		}
		CHECK_EQ_U64(model_mem_ops.finish(m, ts, &err), 0);
		const struct mem_result *r = model_mem_result(m);
		CHECK_EQ_U64(r->files[0].peak_bytes, peak);
		CHECK_EQ_U64(r->series[0].peak_bytes, peak);
		for (size_t i = 0; i < r->series[0].n_top_at_peak; i++) {
			const struct mem_stack_bytes *t = &r->series[0].top_at_peak[i];
			CHECK_EQ_U64(t->bytes, at_peak[t->stack_id]);
		}
		uint64_t sum = 0;
		for (size_t i = 0; i < r->series[0].n_top_at_peak; i++)
			sum += r->series[0].top_at_peak[i].bytes;
		CHECK_EQ_U64(sum, peak);
		CHECK_EQ_U64(flame_tree_total(r->inuse), peak);
		model_mem_ops.destroy(m);
	}
	trace_set_free(ts);
}

/* cudaMalloc around cuMemAlloc_v2 (both probed): one allocation; the same
 * for frees and failures. */
static void test_nested(void)
{
	char path[512];
	synth_path("analyzer_mem_nested.frec", path, sizeof(path));
	struct synth s;
	CHECK_EQ_U64(synth_open(&s, path), 0);
	struct fr_ev_cuda in = { .c = { .ts_ns = MS(1) + 100, .pid = 300, .tid = 301 },
				 .func = FR_CU_MEM_ALLOC, .duration_ns = 500, .ptr = 0x5000,
				 .bytes = 64, .stack_id = 2 };
	struct fr_ev_cuda out = in;
	out.c.ts_ns = MS(1);
	out.duration_ns = 1000;
	out.func = FR_CUDA_MALLOC;
	out.stack_id = 1;
	synth_cuda(&s, in);
	synth_cuda(&s, out);
	in.c.ts_ns += 1000000; out.c.ts_ns += 1000000;
	in.func = FR_CU_MEM_FREE; out.func = FR_CUDA_FREE;
	synth_cuda(&s, in);
	synth_cuda(&s, out);
	in.c.ts_ns += 1000000; out.c.ts_ns += 1000000;
	in.func = FR_CU_MEM_ALLOC; out.func = FR_CUDA_MALLOC;
	in.result = 2; out.result = 2;
	in.ptr = out.ptr = 0;
	synth_cuda(&s, in);
	synth_cuda(&s, out);
	CHECK_EQ_U64(synth_close(&s, 0, 0), 0);
	const char *paths[] = { path };
	struct trace_set *ts;
	struct frec_error err;
	CHECK_EQ_U64(trace_set_open(paths, 1, &ts, &err), 0);
	void *mem = trace_set_add_model(ts, &model_mem_ops, NULL);
	CHECK_EQ_U64(trace_set_run(ts, &err), 0);
	const struct mem_result *r = model_mem_result(mem);
	CHECK_EQ_U64(r->n_series, 1);
	CHECK_EQ_U64(r->series[0].allocs, 1);
	CHECK_EQ_U64(r->series[0].frees, 1);
	CHECK_EQ_U64(r->series[0].before_frees, 0);
	CHECK_EQ_U64(r->series[0].replaced, 0);
	CHECK_EQ_U64(r->series[0].failed_allocs, 1);
	CHECK_EQ_U64(r->series[0].peak_bytes, 64);
	CHECK_EQ_U64(r->files[0].nested_dups, 3);
	CHECK_EQ_U64(r->n_failures, 1);
	CHECK_EQ_U64(r->failures[0].stack_id, 2);
	trace_set_free(ts);
}

/* Hostile values: nothing crashes, nothing is silently dropped. */
static void test_hostile(void)
{
	char path[512];
	synth_path("analyzer_mem_hostile.frec", path, sizeof(path));
	struct synth s;
	CHECK_EQ_U64(synth_open(&s, path), 0);
	mem_call(&s, 1, FR_CUDA_FREE, MS(1), 0, 0, 0, 0, 0);                  /* free(NULL) */
	mem_call(&s, 1, FR_CUDA_MALLOC, MS(2), 0x1000, UINT64_MAX, 9, 0, 0);  /* huge: ignored */
	mem_call(&s, 1, FR_CUDA_MALLOC, MS(3), 0, 4096, 9, 0, 0);             /* NULL result */
	mem_call(&s, 1, 999, MS(4), 0x1000, 1, 9, 0, 0);                      /* unknown func */
	mem_call(&s, 1, 0, MS(4), 0x1000, 1, 9, 0, 0);
	mem_call(&s, 1, FR_CUDA_MALLOC, MS(5), 0x2000, 1ull << 47, 77, 0, -5);
	mem_call(&s, 1, FR_CUDA_MALLOC, MS(5) + 5000, 0x2000, 10, 77, 0, 3);  /* same address again */
	mem_call(&s, 1, FR_CUDA_FREE, MS(6), 0x2000, 0, 0, -1, 0);            /* failed free */
	mem_call(&s, 1, FR_CU_MEM_RELEASE, MS(6), 0x2000, 0, 0, 0, 0);        /* handle never created */
	synth_cuda(&s, (struct fr_ev_cuda){ .c = { .ts_ns = UINT64_MAX - 5, .pid = 1 },
					    .func = FR_CUDA_MALLOC, .duration_ns = UINT64_MAX,
					    .ptr = 0x3000, .bytes = 8 });
	synth_cuda(&s, (struct fr_ev_cuda){ .c = { .ts_ns = 0, .pid = 1 }, .func = FR_CUDA_FREE,
					    .ptr = 0x3000 });
	CHECK_EQ_U64(synth_close(&s, 0, 0), 0);
	struct run r = run(cmd_memory, (char *[]){ "memory", path, NULL });
	CHECK_EQ_U64(r.rc, 0);
	CHECK(strstr(r.out, "missed frees") != NULL);
	run_free(&r);
	r = run(cmd_memory, (char *[]){ "memory", "--json", path, NULL });
	CHECK_EQ_U64(r.rc, 0);
	CHECK(strstr(r.out, "\"failed_frees\":1") != NULL);
	run_free(&r);
	r = run(cmd_flame, (char *[]){ "flame", path, "--kind", "mem-inuse", NULL });
	CHECK_EQ_U64(r.rc, 0);
	run_free(&r);
	r = run(cmd_flame, (char *[]){ "flame", path, "--kind", "mem-alloc", "--format", "html", NULL });
	CHECK_EQ_U64(r.rc, 0);
	run_free(&r);
}

int main(void)
{
	char path[512];
	synth_path("analyzer_mem.frec", path, sizeof(path));
	CHECK_EQ_U64(write_mem_trace(path), 0);
	test_model(path);
	test_commands(path);
	test_bounded(path);
	test_peak_random(path);
	test_nested();
	test_hostile();

	/* no CUDA events at all: one line, exit 1 */
	char plain[512];
	synth_path("analyzer_mem_plain.frec", plain, sizeof(plain));
	CHECK_EQ_U64(std_trace_write(plain, 1), 0);
	struct run r = run(cmd_memory, (char *[]){ "memory", plain, NULL });
	CHECK_EQ_U64(r.rc, 1);
	CHECK(strstr(r.err, "no CUDA memory events") != NULL);
	run_free(&r);
	return check_finish();
}
