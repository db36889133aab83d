/* The CUDA API model and the cuda command on synthetic traces: self time
 * with a nested driver call, percentiles on known distributions, error
 * codes and names, the _ptsz suffix, copies by direction and pinned or
 * pageable (explicit and inferred), nested copies counted once, async
 * copies followed by a synchronize, and hostile values. */
#include "check.h"
#include "test_analyzer_common.h"

#include "commands.h"
#include "model_cuda.h"
#include "trace_set.h"

#define US(x) (1000000000ull + (uint64_t)(x) * 1000ull) /* x microseconds after the start */

static void call(struct synth *s, uint32_t tid, uint16_t func, uint64_t ts, uint64_t dur,
		 int64_t result)
{
	synth_cuda(s, (struct fr_ev_cuda){ .c = { .ts_ns = ts, .pid = 100, .tid = tid }, .func = func,
					   .duration_ns = dur, .result = result, .stack_id = 1 });
}

static void copy(struct synth *s, uint32_t tid, uint16_t func, uint64_t ts, uint64_t dur,
		 uint64_t dst, uint64_t src, uint64_t bytes, uint32_t kind, uint32_t stack)
{
	synth_cuda(s, (struct fr_ev_cuda){ .c = { .ts_ns = ts, .pid = 100, .tid = tid }, .func = func,
					   .duration_ns = dur, .ptr = dst, .src = src, .bytes = bytes,
					   .kind = kind, .stack_id = stack });
}

static void alloc(struct synth *s, uint16_t func, uint64_t ts, uint64_t ptr, uint64_t bytes)
{
	synth_cuda(s, (struct fr_ev_cuda){ .c = { .ts_ns = ts, .pid = 100, .tid = 100 }, .func = func,
					   .duration_ns = 100, .ptr = ptr, .bytes = bytes, .stack_id = 1 });
}

#define PINNED 0x7f0000000000ull
#define DEVICE 0x700000000ull

static int write_cuda_trace(const char *path)
{
	struct synth s;
	if (synth_open(&s, path))
		return -1;
	synth_process(&s, 100, 1, "trainer", "python train.py");
	synth_mapping(&s, 100, 0x400000, 0x500000, 0, 1, "/usr/bin/trainer");
	uint64_t s1[] = { 0x402010, 0x401010 }, s2[] = { 0x403010, 0x401010 };
	synth_stack(&s, 1, 100, s1, 0, 2);
	synth_stack(&s, 2, 100, s2, 0, 2);

	/* Thread 101: cudaMalloc [1000, 11000] around cuMemAlloc [2000, 6000]:
	 * the nested call is written first (it returns first). */
	synth_cuda(&s, (struct fr_ev_cuda){ .c = { .ts_ns = US(1000) + 1000, .pid = 100, .tid = 101 },
					    .func = FR_CU_MEM_ALLOC, .duration_ns = 4000,
					    .ptr = DEVICE + (64 << 20), .bytes = 1 << 20 });
	synth_cuda(&s, (struct fr_ev_cuda){ .c = { .ts_ns = US(1000), .pid = 100, .tid = 101 },
					    .func = FR_CUDA_MALLOC, .duration_ns = 10000,
					    .ptr = DEVICE + (64 << 20), .bytes = 1 << 20 });
	/* errors */
	call(&s, 101, FR_CUDA_MALLOC, US(2000), 500, 2);
	call(&s, 101, FR_CU_MEM_ALLOC, US(2001), 500, 2);
	call(&s, 101, FR_CUDA_SET_DEVICE, US(2002), 100, 4242);

	/* Percentiles: 100 launches of 1..100 ns (exact), 1000 synchronizes
	 * of 1..1000 us (log-linear, within 0.4%). */
	for (int i = 1; i <= 100; i++)
		call(&s, 102, FR_CUDA_LAUNCH_KERNEL, US(3000 + i), (uint64_t)i, 0);
	for (int i = 1; i <= 1000; i++)
		call(&s, 103, FR_CUDA_DEVICE_SYNC, US(4000) + (uint64_t)i * 2000000, (uint64_t)i * 1000, 0);

	/* Memory the copies are classified against. */
	alloc(&s, FR_CUDA_HOST_ALLOC, US(10), PINNED, 1 << 20);
	alloc(&s, FR_CUDA_MALLOC, US(11), DEVICE, 1 << 20);
	/* H2D pinned (interior pointer), H2D pageable, inferred D2H pinned,
	 * inferred H2D pageable, D2D, all sync, on thread 100. */
	copy(&s, 100, FR_CUDA_MEMCPY, US(20), 1000, DEVICE, PINNED + 100, 4000, FR_COPY_H2D, 1);
	copy(&s, 100, FR_CUDA_MEMCPY, US(30), 2000, DEVICE, 0x5000, 1000, FR_COPY_H2D, 1);
	copy(&s, 100, FR_CUDA_MEMCPY, US(40), 1000, PINNED + 16, DEVICE + 16, 2000, FR_COPY_DEFAULT, 1);
	copy(&s, 100, FR_CUDA_MEMCPY, US(50), 1000, DEVICE + 32, 0x9999, 3000, FR_COPY_DEFAULT, 1);
	copy(&s, 100, FR_CUDA_MEMCPY, US(60), 1000, DEVICE, DEVICE + 512, 500, FR_COPY_D2D, 1);
	/* a cudaMemcpy around a cuMemcpy: counted once, as the outer call */
	copy(&s, 100, FR_CU_MEMCPY, US(70) + 100, 800, 0x6000, DEVICE, 7000, FR_COPY_D2H, 1);
	copy(&s, 100, FR_CUDA_MEMCPY, US(70), 1000, 0x6000, DEVICE, 7000, FR_COPY_D2H, 1);

	/* Async then sync on thread 104:
	 *  - copy (stack 2), sync 10 us after its return: a finding
	 *  - copy, sync 100 us later: not one
	 *  - copy, launch, sync: not one
	 *  - cudaMemcpyAsync_ptsz around cuMemcpyAsync, then sync: one finding,
	 *    the outer copy, counted once in copies */
	copy(&s, 104, FR_CUDA_MEMCPY_ASYNC, US(100), 2000, DEVICE, PINNED + 8, 64, FR_COPY_H2D, 2);
	call(&s, 104, FR_CUDA_STREAM_SYNC, US(112), 5000, 0);
	copy(&s, 104, FR_CUDA_MEMCPY_ASYNC, US(200), 2000, DEVICE, 0x5000, 64, FR_COPY_H2D, 2);
	call(&s, 104, FR_CUDA_STREAM_SYNC, US(302), 5000, 0);
	copy(&s, 104, FR_CUDA_MEMCPY_ASYNC, US(400), 2000, DEVICE, 0x5000, 64, FR_COPY_H2D, 2);
	call(&s, 104, FR_CUDA_LAUNCH_KERNEL, US(403), 1000, 0);
	call(&s, 104, FR_CUDA_STREAM_SYNC, US(405), 5000, 0);
	copy(&s, 104, FR_CU_MEMCPY_ASYNC, US(500) + 100, 1000, DEVICE, 0x5000, 64, FR_COPY_H2D, 2);
	synth_cuda(&s, (struct fr_ev_cuda){ .c = { .ts_ns = US(500), .pid = 100, .tid = 104 },
					    .func = FR_CUDA_MEMCPY_ASYNC, .flags = FR_CUDAF_PTSZ,
					    .duration_ns = 2000, .ptr = DEVICE, .src = 0x5000,
					    .bytes = 64, .kind = FR_COPY_H2D, .stack_id = 2 });
	call(&s, 104, FR_CUDA_EVENT_SYNC, US(503), 7000, 0);
	/* after cudaFreeHost the range is pageable again */
	alloc(&s, FR_CUDA_FREE_HOST, US(800), PINNED, 0);
	copy(&s, 100, FR_CUDA_MEMCPY, US(900), 1000, DEVICE, PINNED + 100, 100, FR_COPY_H2D, 1);

	static const struct synth_sym syms[] = {
		{ 0x1000, 0x100, "main" }, { 0x2000, 0x100, "step" }, { 0x3000, 0x100, "copy_batch" },
	};
	synth_dso(&s, 1, 0, "/usr/bin/trainer", syms, 3);
	return synth_close(&s, 0, 0);
}

static const struct cuda_api_row *row(const struct cuda_result *r, const char *name)
{
	for (size_t i = 0; i < r->n_rows; i++)
		if (strcmp(r->rows[i].name, name) == 0)
			return &r->rows[i];
	return NULL;
}

static const struct cuda_copy_row *cell(const struct cuda_result *r, enum cuda_dir d,
					enum cuda_host h, enum cuda_mode m)
{
	for (size_t i = 0; i < r->n_copies; i++)
		if (r->copies[i].dir == d && r->copies[i].host == h && r->copies[i].mode == m)
			return &r->copies[i];
	return NULL;
}

static int within(uint64_t got, uint64_t want, double rel)
{
	double d = (double)got - (double)want;
	return (d < 0 ? -d : d) <= rel * (double)want;
}

static void test_model(const char *path)
{
	const char *paths[] = { path };
	struct trace_set *ts;
	struct frec_error err;
	CHECK_EQ_U64(trace_set_open(paths, 1, &ts, &err), 0);
	void *m = trace_set_add_model(ts, &model_cuda_ops, NULL);
	CHECK_EQ_U64(trace_set_run(ts, &err), 0);
	const struct cuda_result *r = model_cuda_result(m);

	/* self time: the runtime call minus its nested driver call */
	const struct cuda_api_row *w = row(r, "cudaMalloc");
	CHECK(w != NULL);
	if (w) {
		CHECK_EQ_U64(w->count, 3); /* the nested pair, a failure, the 1 MiB device buffer */
		CHECK_EQ_U64(w->total_ns, 10000 + 500 + 100);
		CHECK_EQ_U64(w->self_ns, 6000 + 500 + 100);
		CHECK_EQ_U64(w->errors, 1);
		CHECK_EQ_U64(w->n_codes, 1);
		CHECK_EQ_U64(w->codes[0].code, 2);
		CHECK_STR(cuda_error_name(w->func, 2), "cudaErrorMemoryAllocation");
	}
	w = row(r, "cuMemAlloc_v2");
	CHECK(w != NULL);
	if (w) {
		CHECK_EQ_U64(w->self_ns, 4500);
		CHECK_STR(cuda_error_name(w->func, 2), "CUDA_ERROR_OUT_OF_MEMORY");
	}
	w = row(r, "cudaSetDevice");
	CHECK(w && w->errors == 1 && w->codes[0].code == 4242 && !cuda_error_name(w->func, 4242));
	CHECK_STR(cuda_error_name(FR_CUDA_MALLOC, 35), "cudaErrorInsufficientDriver");
	CHECK_STR(cuda_error_name(FR_CUDA_MALLOC, 100), "cudaErrorNoDevice");

	/* percentiles */
	w = row(r, "cudaLaunchKernel");
	CHECK(w != NULL);
	if (w) {
		CHECK_EQ_U64(w->count, 101); /* + the one on thread 104 */
		CHECK_EQ_U64(w->p50_ns, 51);
		CHECK_EQ_U64(w->p99_ns, 100);
		CHECK_EQ_U64(w->max_ns, 1000);
	}
	w = row(r, "cudaDeviceSynchronize");
	CHECK(w != NULL);
	if (w) {
		CHECK(within(w->p50_ns, 500000, 0.004));
		CHECK(within(w->p99_ns, 990000, 0.004));
		CHECK_EQ_U64(w->max_ns, 1000000);
		CHECK_EQ_U64(w->total_ns, 500500000ull);
	}
	CHECK(row(r, "cudaMemcpyAsync_ptsz") != NULL);

	/* copies */
	const struct cuda_copy_row *c = cell(r, CUDA_DIR_H2D, CUDA_HOST_PINNED, CUDA_MODE_SYNC);
	CHECK(c && c->count == 1 && c->bytes == 4000 && c->inferred == 0);
	c = cell(r, CUDA_DIR_H2D, CUDA_HOST_PAGEABLE, CUDA_MODE_SYNC);
	CHECK(c && c->count == 3 && c->bytes == 1000 + 3000 + 100 && c->inferred == 1);
	c = cell(r, CUDA_DIR_D2H, CUDA_HOST_PINNED, CUDA_MODE_SYNC);
	CHECK(c && c->count == 1 && c->bytes == 2000 && c->inferred == 1);
	c = cell(r, CUDA_DIR_D2D, CUDA_HOST_NA, CUDA_MODE_SYNC);
	CHECK(c && c->count == 1 && c->bytes == 500);
	c = cell(r, CUDA_DIR_D2H, CUDA_HOST_PAGEABLE, CUDA_MODE_SYNC);
	CHECK(c && c->count == 1 && c->bytes == 7000 && c->time_ns == 1000);
	c = cell(r, CUDA_DIR_H2D, CUDA_HOST_PINNED, CUDA_MODE_ASYNC);
	CHECK(c && c->count == 1 && c->bytes == 64);
	c = cell(r, CUDA_DIR_H2D, CUDA_HOST_PAGEABLE, CUDA_MODE_ASYNC);
	CHECK(c && c->count == 3 && c->bytes == 192);
	CHECK_EQ_U64(r->nested_copies, 2);

	/* async then sync */
	CHECK_EQ_U64(r->async_then_sync, 2);
	CHECK_EQ_U64(r->async_then_sync_ns, 5000 + 7000);
	CHECK_EQ_U64(r->n_sync_stacks, 1);
	CHECK_EQ_U64(r->sync_stacks[0].stack_id, 2);
	CHECK_EQ_U64(r->sync_stacks[0].count, 2);
	CHECK_EQ_U64(r->nesting_overflow, 0);
	trace_set_free(ts);
}

struct run {
	int rc;
	char *out, *err;
};

static struct run run(char **argv)
{
	struct run r = { 0 };
	size_t ol = 0, el = 0;
	int argc = 0;
	while (argv[argc])
		argc++;
	FILE *o = open_memstream(&r.out, &ol), *e = open_memstream(&r.err, &el);
	r.rc = cmd_cuda(argc, argv, o, e);
	fclose(o);
	fclose(e);
	return r;
}

static void test_command(const char *path)
{
	struct run r = run((char *[]){ "cuda", (char *)path, NULL });
	CHECK_EQ_U64(r.rc, 0);
	CHECK(strstr(r.out, "cudaErrorMemoryAllocation (2) x1") != NULL);
	CHECK(strstr(r.out, "H2D       pageable") != NULL);
	CHECK(strstr(r.out, "async copies immediately followed by a synchronize (next call < 50 us later): 2") != NULL);
	CHECK(strstr(r.out, "copy_batch <- main") != NULL);
	if (getenv("SHOW"))
		fputs(r.out, stdout);
	free(r.out);
	free(r.err);
	r = run((char *[]){ "cuda", "--json", (char *)path, NULL });
	CHECK_EQ_U64(r.rc, 0);
	CHECK(strstr(r.out, "{\"direction\":\"H2D\",\"host\":\"pinned\",\"mode\":\"sync\",\"calls\":1,\"bytes\":4000,\"time_ns\":1000,\"gb_per_s\":4.000") != NULL);
	CHECK(strstr(r.out, "\"async_then_sync\":{\"count\":2") != NULL);
	CHECK(strstr(r.out, "\"stack\":[\"main\",\"copy_batch\"]") != NULL);
	free(r.out);
	free(r.err);
	r = run((char *[]){ "cuda", "--help", NULL });
	CHECK(r.rc == 0 && strstr(r.out, "examples:"));
	free(r.out);
	free(r.err);
	r = run((char *[]){ "cuda", (char *)path, "--pid", "77", NULL });
	CHECK_EQ_U64(r.rc, 1);
	CHECK(strstr(r.err, "no CUDA calls of pid 77") != NULL);
	free(r.out);
	free(r.err);
	r = run((char *[]){ "cuda", "--bogus", NULL });
	CHECK_EQ_U64(r.rc, 2);
	free(r.out);
	free(r.err);
}

static void test_hostile(void)
{
	char path[512];
	synth_path("analyzer_cuda_hostile.frec", path, sizeof(path));
	struct synth s;
	CHECK_EQ_U64(synth_open(&s, path), 0);
	call(&s, 1, 999, US(1), 10, 0);
	call(&s, 1, 0, US(2), 10, -7);
	call(&s, 1, 0xffff, US(3), UINT64_MAX, 0);
	copy(&s, 1, FR_CUDA_MEMCPY, US(4), 0, 0, 0, UINT64_MAX, 77, 0);
	copy(&s, 1, FR_CUDA_MEMCPY, US(5), 10, UINT64_MAX, UINT64_MAX, 1, FR_COPY_DEFAULT, 0);
	alloc(&s, FR_CUDA_MALLOC_HOST, US(6), UINT64_MAX - 10, UINT64_MAX);
	alloc(&s, FR_CU_MEM_MAP, US(7), 0x1000, 0);
	alloc(&s, FR_CU_MEM_UNMAP, US(8), 0x1000, 0);
	copy(&s, 1, FR_CUDA_MEMCPY_ASYNC, US(9), 10, 0, UINT64_MAX - 5, 1, FR_COPY_H2D, 0);
	call(&s, 1, FR_CUDA_STREAM_SYNC, 0, 10, 0);
	/* deep nesting on one thread: 40 calls inside one another, innermost first */
	for (int i = 1; i <= 40; i++)
		call(&s, 2, FR_CUDA_LAUNCH_KERNEL, US(1000) - (uint64_t)i, 2 * (uint64_t)i, 0);
	for (int i = 0; i < 100; i++)
		call(&s, 3, FR_CUDA_LAUNCH_KERNEL, US(2000) + (uint64_t)i * 10, 5, 0);
	call(&s, 3, FR_CUDA_DEVICE_SYNC, US(1999), 100000, 0);
	CHECK_EQ_U64(synth_close(&s, 0, 0), 0);
	struct run r = run((char *[]){ "cuda", path, NULL });
	CHECK_EQ_U64(r.rc, 0);
	CHECK(strstr(r.out, "[unknown function]") != NULL);
	free(r.out);
	free(r.err);
	r = run((char *[]){ "cuda", path, "--json", NULL });
	CHECK_EQ_U64(r.rc, 0);
	CHECK(strstr(r.out, "\"direction\":\"unknown\"") != NULL);
	free(r.out);
	free(r.err);
}

int main(void)
{
	char path[512];
	synth_path("analyzer_cuda.frec", path, sizeof(path));
	CHECK_EQ_U64(write_cuda_trace(path), 0);
	test_model(path);
	test_command(path);
	test_hostile();
	return check_finish();
}
