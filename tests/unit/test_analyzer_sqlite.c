/* The sqlite output end to end: a synthetic trace (the standard one plus
 * CUDA, NCCL, RDMA and step events and a hostile command line) through
 * `flightrec-analyze sqlite`, then every example query of
 * analyzer/SQLITE_SCHEMA.md run by name, with answers checked against the
 * analyzer's own outputs (flame folded, the syscalls model) and against the
 * events written. */
#include "check.h"
#include "test_analyzer_common.h"
#include "test_analyzer_findings_trace.h"

#include "commands.h"
#include "out_sqlite.h"
#include "model_syscalls.h"
#include "syscall_names.h"
#include "trace_set.h"

#include <sqlite3.h>
#include <unistd.h>

#define HOSTILE "x'); DROP TABLE processes; -- <img src=x onerror=alert(1)>"

static void cuda(struct synth *s, uint32_t pid, uint16_t func, uint32_t stack_id, uint64_t ptr,
		 uint64_t bytes, int64_t result, uint64_t dur)
{
	s->ts_ns += 100000;
	struct fr_ev_cuda ev = { .c = { .ts_ns = s->ts_ns, .pid = pid, .tid = pid }, .func = func,
				 .stack_id = stack_id, .duration_ns = dur, .result = result,
				 .ptr = ptr, .bytes = bytes, .device = 0 };
	synth_raw(s->ev, &ev, sizeof(ev), FR_EV_CUDA, s->ts_ns);
}

static void nccl(struct synth *s, uint32_t pid, uint16_t func, uint64_t dur)
{
	s->ts_ns += 1000000;
	struct fr_ev_nccl ev = { .c = { .ts_ns = s->ts_ns, .pid = pid, .tid = pid }, .func = func,
				 .duration_ns = dur, .comm = 0xc0, .count = 1024, .peer = -1,
				 .rank = -1, .nranks = -1 };
	synth_raw(s->ev, &ev, sizeof(ev), FR_EV_NCCL, s->ts_ns);
}

static void rdma(struct synth *s, uint32_t pid, uint64_t wr_id, uint64_t latency)
{
	s->ts_ns += 100000;
	struct fr_ev_rdma_post p = { .c = { .ts_ns = s->ts_ns, .pid = pid, .tid = pid },
				     .wr_id = wr_id, .bytes = 4096, .qp_num = 7, .opcode = 0,
				     .num_sge = 1, .flags = FR_RDMA_POST_SIGNALED };
	synth_raw(s->ev, &p, sizeof(p), FR_EV_RDMA_POST, s->ts_ns);
	struct fr_ev_rdma_cqe c = { .c = { .ts_ns = s->ts_ns + latency, .pid = pid, .tid = pid },
				    .wr_id = wr_id, .qp_num = 7, .byte_len = 4096 };
	synth_raw(s->ev, &c, sizeof(c), FR_EV_RDMA_CQE, s->ts_ns + latency);
}

static void step(struct synth *s, uint32_t pid)
{
	s->ts_ns += 5000000;
	struct fr_ev_step ev = { .c = { .ts_ns = s->ts_ns, .pid = pid, .tid = pid } };
	synth_raw(s->ev, &ev, sizeof(ev), FR_EV_STEP, s->ts_ns);
}

static int write_trace(const char *path)
{
	struct synth s;
	if (synth_open(&s, path))
		return -1;
	std_trace_body(&s);
	synth_process(&s, 300, 1, "evil", HOSTILE);
	{ /* launcher environment of pid 300: RANK=3 */
		static const char env[] = "LOCAL_RANK=1\0RANK=3\0WORLD_SIZE=4";
		uint8_t buf[sizeof(struct fr_rec_proc_env) + FR_ALIGN8(sizeof(env))] = { 0 };
		struct fr_rec_proc_env r = { .ts_ns = s.ts_ns, .pid = 300, .len = sizeof(env) };
		memcpy(buf, &r, sizeof(r));
		memcpy(buf + sizeof(r), env, sizeof(env));
		synth_raw(s.meta, buf, sizeof(buf), FR_REC_PROC_ENV, s.ts_ns);
	}
	cuda(&s, 100, FR_CUDA_MALLOC, 1, 0xa000, 1000, 0, 5000);   /* A */
	cuda(&s, 100, FR_CUDA_MALLOC, 2, 0xb000, 500, 0, 5000);    /* B, leaks */
	cuda(&s, 100, FR_CUDA_FREE, 1, 0xa000, 0, 0, 2000);        /* A freed */
	cuda(&s, 100, FR_CUDA_MALLOC, 1, 0xc000, 2000, 0, 5000);   /* C, leaks: peak 2500 */
	cuda(&s, 100, FR_CUDA_MALLOC, 1, 0, 1ull << 40, 2, 9000);  /* out of memory */
	cuda(&s, 100, FR_CUDA_MEMCPY, 1, 0xc000, 4096, 0, 7000);
	step(&s, 100);
	nccl(&s, 100, FR_NCCL_ALL_REDUCE, 400000);
	nccl(&s, 100, FR_NCCL_ALL_REDUCE, 900000);
	nccl(&s, 100, FR_NCCL_ALL_REDUCE, 100000);
	nccl(&s, 100, FR_NCCL_ALL_GATHER, 700000);
	nccl(&s, 100, FR_NCCL_GROUP_START, 50);
	step(&s, 100);
	rdma(&s, 100, 1, 10000);
	rdma(&s, 100, 2, 30000);
	return synth_close(&s, 522, 3);
}

/* The SQL of the named example query from SQLITE_SCHEMA.md (static buffer). */
static const char *doc_query(const char *name)
{
	static char *doc;
	static char sql[8192];
	if (!doc) {
		char path[1024];
		snprintf(path, sizeof(path), "%s", __FILE__);
		char *at = strstr(path, "tests/unit/test_analyzer_sqlite.c");
		if (!at)
			return NULL;
		strcpy(at, "analyzer/SQLITE_SCHEMA.md");
		FILE *f = fopen(path, "r");
		if (!f)
			return NULL;
		doc = calloc(1, 1 << 17);
		size_t n = fread(doc, 1, (1 << 17) - 1, f);
		doc[n] = '\0';
		fclose(f);
	}
	char marker[128];
	snprintf(marker, sizeof(marker), "-- query: %s\n", name);
	const char *start = strstr(doc, marker);
	if (!start)
		return NULL;
	const char *end = strstr(start, "```");
	if (!end || (size_t)(end - start) >= sizeof(sql))
		return NULL;
	memcpy(sql, start, (size_t)(end - start));
	sql[end - start] = '\0';
	return sql;
}

/* Rows of a query as text: columns joined by '|', rows by '\n'. */
static char *rows_of(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	if (!sql || sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		fprintf(stderr, "prepare: %s\n%s\n", sqlite3_errmsg(db), sql ? sql : "(no sql)");
		return NULL;
	}
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		for (int c = 0; c < sqlite3_column_count(st); c++) {
			const unsigned char *v = sqlite3_column_text(st, c);
			fprintf(m, "%s%s", c ? "|" : "", v ? (const char *)v : "NULL");
		}
		fputc('\n', m);
	}
	if (rc != SQLITE_DONE)
		fprintf(stderr, "step: %s\n", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	fclose(m);
	return text;
}

static char *run_cmd(int (*cmd)(int, char **, FILE *, FILE *), char **argv, int argc, int *rc)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	*rc = cmd(argc, argv, m, stderr);
	fclose(m);
	return text;
}

/* The generic tables a family without a hand-written table gets
 * (out_sqlite_generic.c), asked for here for types the hand-written tables
 * cover, so both must hold the same rows. */
static void test_generic_tables(const char *trace, const char *db_path)
{
	unlink(db_path);
	struct frec_error err = { .offset = -1 };
	struct trace_set *ts = NULL;
	struct out_sqlite *o = NULL;
	const char *files[] = { trace };
	CHECK(trace_set_open(files, 1, &ts, &err) == 0);
	CHECK(out_sqlite_open(db_path, &o, &err) == 0);
	CHECK(out_sqlite_attach(o, ts, &err) == 0);
	CHECK(out_sqlite_event_table(o, FR_EV_CUDA) == 0);
	CHECK(out_sqlite_event_table(o, FR_EV_RDMA_POST) == 0);
	CHECK(out_sqlite_event_table(o, FR_EV_STEP) == 0);
	CHECK(out_sqlite_event_table(o, 0x7f) == -1); /* no family writes it */
	CHECK(trace_set_run(ts, &err) == 0);
	CHECK(out_sqlite_finish(o, ts, &err) == 0);
	out_sqlite_close(o);
	trace_set_free(ts);

	sqlite3 *db;
	CHECK(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
	static const char *const pairs[][2] = {
		{ "SELECT file_id, pid, tid, ts_ns, duration_ns, func, result, device, ptr, src, bytes,"
		  " stream, kind, flags, stack_id FROM cuda_calls ORDER BY ts_ns",
		  "SELECT file_id, pid, tid, ts_ns, duration_ns, func, result, device, ptr, src, bytes,"
		  " stream, kind, flags, stack_id FROM events_cuda ORDER BY ts_ns" },
		{ "SELECT file_id, pid, ts_ns, qp_num, wr_id, opcode, bytes, num_sge, wr_index, result"
		  " FROM rdma_posts ORDER BY ts_ns",
		  "SELECT file_id, pid, ts_ns, qp_num, wr_id, opcode, bytes, num_sge, wr_index, result"
		  " FROM events_rdma_post ORDER BY ts_ns" },
		{ "SELECT file_id, pid, tid, ts_ns, stack_id FROM step_marks ORDER BY ts_ns",
		  "SELECT file_id, pid, tid, ts_ns, stack_id FROM events_step ORDER BY ts_ns" },
	};
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		char *a = rows_of(db, pairs[i][0]), *b = rows_of(db, pairs[i][1]);
		CHECK(a && a[0]);
		CHECK_STR(b, a);
		free(a);
		free(b);
	}
	/* the function's name beside its id */
	char *v = rows_of(db, "SELECT name, count(*) FROM events_cuda GROUP BY name ORDER BY name");
	CHECK_STR(v, "cudaFree|1\ncudaMalloc|4\ncudaMemcpy|1\n");
	free(v);
	sqlite3_close(db);
}

static int cmp_value_desc(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	long vx = atol(strrchr(x, ' ') + 1), vy = atol(strrchr(y, ' ') + 1);
	if (vx != vy)
		return vx > vy ? -1 : 1;
	return strcmp(x, y);
}

/* findings: the rows are `findings --json`'s findings (the numbers the
 * synthetic trace was built for: test_analyzer_findings_trace.h). */
static void test_findings_table(void)
{
	char trace[512], db_path[512];
	synth_path("analyzer_sqlite_findings.frec", trace, sizeof(trace));
	synth_path("analyzer_sqlite_findings.db", db_path, sizeof(db_path));
	struct synth s;
	CHECK_EQ_U64(synth_open(&s, trace), 0);
	findings_trace_body(&s, 2000000000ull);
	CHECK_EQ_U64(synth_close(&s, 0, 0), 0);
	unlink(db_path);
	int rc;
	char *argv[] = { "sqlite", trace, "-o", db_path, NULL };
	free(run_cmd(cmd_sqlite, argv, 4, &rc));
	CHECK_EQ_U64(rc, 0);
	char *fargv[] = { "findings", trace, "--json", NULL };
	char *json = run_cmd(cmd_findings, fargv, 3, &rc);
	CHECK_EQ_U64(rc, 0);
	CHECK(json && strstr(json, "{\"kind\":\"host_sync\",\"cost_ms\":26.000,\"cost_ms_per_step\":2.600,"
				 "\"share\":0.5098,\"pids\":[500],\"ranks\":[],"
				 "\"where\":[\"main\",\"train_step\",\"cudaDeviceSynchronize\"]") != NULL);
	CHECK(json && strstr(json, "},{\"kind\":\"pageable_copy\",\"cost_ms\":10.000,"
				 "\"cost_ms_per_step\":1.000,\"share\":0.1961,\"pids\":[500],\"ranks\":[],"
				 "\"where\":[\"main\",\"to_device\",\"cudaMemcpy\"]") != NULL);
	CHECK(json && strstr(json, "\"below\":[]") != NULL);
	sqlite3 *db;
	CHECK(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
	char *v = rows_of(db, doc_query("findings_by_cost"));
	CHECK_STR(v, "1|host_sync|26.0|2.6|0.5098|500|main;train_step;cudaDeviceSynchronize\n"
		     "2|pageable_copy|10.0|1.0|0.1961|500|main;to_device;cudaMemcpy\n");
	free(v);
	v = rows_of(db, "SELECT finding_id, listed, ranks, evidence FROM findings ORDER BY finding_id");
	CHECK(v && strncmp(v, "1|1||10 gaps between a synchronize's return", 43) == 0);
	CHECK(v && strstr(v, "\n2|1||10 copies from pageable host memory") != NULL);
	free(v);
	v = rows_of(db, "SELECT count(*) FROM findings WHERE fix IS NULL OR fix = ''");
	CHECK_STR(v, "0\n");
	free(v);
	sqlite3_close(db);
	free(json);
}

int main(void)
{
	char trace[512], db_path[512];
	synth_path("analyzer_sqlite.frec", trace, sizeof(trace));
	synth_path("analyzer_sqlite.db", db_path, sizeof(db_path));
	CHECK_EQ_U64(write_trace(trace), 0);
	unlink(db_path);

	int rc;
	char *argv[] = { "sqlite", trace, "-o", db_path, NULL };
	free(run_cmd(cmd_sqlite, argv, 4, &rc));
	CHECK_EQ_U64(rc, 0);
	/* refuses to overwrite without --force */
	free(run_cmd(cmd_sqlite, argv, 4, &rc));
	CHECK_EQ_U64(rc, 1);

	sqlite3 *db;
	CHECK(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
	char *v = rows_of(db, "SELECT value FROM meta WHERE key = 'schema_version'");
	CHECK_STR(v, "4\n");
	free(v);
	v = rows_of(db, "SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_master "
			"WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name)");
	CHECK_STR(v, "allocations,collectives,cpu_samples,cuda_calls,damaged_regions,drop_reasons,drops,"
		     "enum_copy_kinds,enum_cuda_funcs,enum_nccl_funcs,enum_rdma_funcs,enum_syscalls,"
		     "enum_wc_status,events_fd_path,events_gpu_kernel,events_gpu_launch,events_sched,files,findings,frames,hosts,memory_inuse,memory_series,memory_top_stacks,"
		     "meta,nccl_calls,process_events,"
		     "processes,rdma_completions,rdma_connections,rdma_ctrl_calls,rdma_ops,rdma_posts,"
		     "stack_frames,stacks,step_marks,steps,syscalls,threads\n");
	free(v);

	/* top stacks by samples == flame folded sorted by value */
	char *fargv[] = { "flame", trace, NULL };
	char *folded = run_cmd(cmd_flame, fargv, 2, &rc);
	CHECK_EQ_U64(rc, 0);
	char *lines[64];
	size_t n_lines = 0;
	for (char *save, *tok = strtok_r(folded, "\n", &save); tok && n_lines < 64;
	     tok = strtok_r(NULL, "\n", &save))
		lines[n_lines++] = tok;
	qsort(lines, n_lines, sizeof(*lines), cmp_value_desc);
	char want[4096] = "";
	for (size_t i = 0; i < n_lines && i < 10; i++) {
		char *sp = strrchr(lines[i], ' ');
		*sp = '|';
		strcat(want, lines[i]);
		strcat(want, "\n");
		*sp = ' ';
	}
	v = rows_of(db, doc_query("top_stacks_by_samples"));
	CHECK_STR(v, want);
	CHECK(v && strncmp(v, "main;work_a|300\n", 16) == 0);
	free(v);
	free(folded);

	/* syscall counts == the syscalls model (what info prints) */
	struct trace_set *ts;
	struct frec_error err;
	const char *paths[] = { trace };
	CHECK_EQ_U64(trace_set_open(paths, 1, &ts, &err), 0);
	void *sc = trace_set_add_model(ts, &model_syscalls_ops, NULL);
	CHECK_EQ_U64(trace_set_run(ts, &err), 0);
	struct syscall_stat top[16];
	size_t n_top = model_syscalls_top(sc, 0, top, 16);
	char expect[1024] = "";
	for (size_t i = 0; i < n_top; i++) {
		char line[128];
		snprintf(line, sizeof(line), "%s|%" PRIu64 "|%" PRIu64 "|%" PRIu64 "|%" PRIu64 "\n",
			 syscall_name(top[i].nr), top[i].count, top[i].total_ns, top[i].max_ns, top[i].failed);
		strcat(expect, line);
	}
	trace_set_free(ts);
	v = rows_of(db, doc_query("syscalls_by_time"));
	CHECK_STR(v, expect);
	CHECK_STR(expect, "read|2|3000000|2000000|1\nwrite|1|500000|500000|0\n");
	free(v);

	v = rows_of(db, doc_query("cuda_api_summary"));
	CHECK_STR(v, "cudaMalloc|4|24000|1\ncudaMemcpy|1|7000|0\ncudaFree|1|2000|0\n");
	free(v);
	v = rows_of(db, doc_query("top_stacks_by_bytes_at_peak"));
	CHECK_STR(v, "main;work_a|2000\nmain;work_b|500\n");
	free(v);
	v = rows_of(db, "SELECT max(inuse_bytes), count(*) FROM memory_inuse");
	CHECK_STR(v, "2500|4\n");
	free(v);
	v = rows_of(db, "SELECT pid, address, size_bytes FROM (" /* leaks, as the doc lists them */
			"SELECT pid, printf('0x%x', address) AS address, size_bytes FROM allocations "
			"WHERE failed = 0 AND free_ns IS NULL) ORDER BY size_bytes DESC");
	CHECK_STR(v, "100|0xc000|2000\n100|0xb000|500\n");
	free(v);
	v = rows_of(db, doc_query("leaks"));
	CHECK(v && strstr(v, "100|0|0xc000|2000|") == v);
	free(v);
	v = rows_of(db, doc_query("failed_allocations"));
	CHECK(v && strncmp(v, "100|0|1099511627776|2|", 22) == 0);
	free(v);
	/* A: alive from the malloc's return to the free's return, as `memory`
	 * counts it (the GPU memory model's ledger) */
	v = rows_of(db, "SELECT free_ns - alloc_ns FROM allocations WHERE address = 40960");
	CHECK_STR(v, "197000\n"); /* 2 x 100 us apart, minus the 5 us malloc, plus the 2 us free */
	free(v);

	v = rows_of(db, doc_query("slowest_collectives_per_rank"));
	CHECK_STR(v, "NULL|100|ncclAllReduce|900000\nNULL|100|ncclAllGather|700000\n"
		     "NULL|100|ncclAllReduce|400000\n");
	free(v);
	v = rows_of(db, doc_query("rdma_latency_from_raw"));
	CHECK_STR(v, "0|100|7|2|10000|30000|30000\n");
	free(v);
	/* model tables: the same answers as the commands' own JSON */
	char *rargv[] = { "rdma", trace, "--json", NULL };
	char *rjson = run_cmd(cmd_rdma, rargv, 3, &rc);
	CHECK_EQ_U64(rc, 0);
	CHECK(rjson && strstr(rjson, "\"latency_us\":{\"p50\":10.047,\"p99\":30.000,\"max\":30.000,") != NULL);
	v = rows_of(db, doc_query("rdma_latency_percentiles"));
	CHECK_STR(v, "1|2|10047|30000|30000\n");
	free(v);
	v = rows_of(db, doc_query("rdma_latency_by_opcode"));
	CHECK(rjson && strstr(rjson, "{\"opcode\":\"RDMA_WRITE\",\"recv\":false,\"size\":\"4K-64K\",\"ops\":2,") != NULL);
	CHECK_STR(v, "1|RDMA_WRITE|4K-64K|2|10047|30000|30000\n");
	free(v);
	free(rjson);
	v = rows_of(db, "SELECT local_qp, ops, bytes, errors, last_ns - first_ns FROM rdma_connections");
	CHECK_STR(v, "7|2|8192|0|130000\n"); /* rdma --json: active_s 0.000130 */
	free(v);

	char *margv[] = { "memory", trace, "--json", NULL };
	char *mjson = run_cmd(cmd_memory, margv, 3, &rc);
	CHECK_EQ_U64(rc, 0);
	CHECK(mjson && strstr(mjson, "\"top_at_peak\":[{\"bytes\":2000,\"stack\":[\"main\",\"work_a\"]},"
				  "{\"bytes\":500,\"stack\":[\"main\",\"work_b\"]}]") != NULL);
	CHECK(mjson && strstr(mjson, "\"peak_bytes\":2500,\"peak_s\":4.220408000") != NULL);
	free(mjson);
	v = rows_of(db, "SELECT m.pid, m.device, m.peak_bytes, m.peak_ns - f.clock_offset_ns - f.start_mono_ns,"
			" m.end_bytes FROM memory_series m JOIN files f USING (file_id)");
	CHECK_STR(v, "100|0|2500|4220408000|2500\n");
	free(v);
	v = rows_of(db, doc_query("memory_peaks"));
	CHECK(v && strncmp(v, "0|100|0|2500|", 13) == 0);
	free(v);

	char *sargv[] = { "stragglers", trace, "--json", NULL };
	char *sjson = run_cmd(cmd_stragglers, sargv, 3, &rc);
	CHECK_EQ_U64(rc, 0);
	CHECK(sjson && strstr(sjson, "\"steps\":1,\"mean_step_ms\":10.000,\"mean_wait_ms\":2.100") != NULL);
	free(sjson);
	v = rows_of(db, doc_query("steps_per_rank"));
	CHECK_STR(v, "NULL|100|1|10.0|2.1\n");
	free(v);
	v = rows_of(db, "SELECT count(*), sum(wait_ns), min(step), sum(bytes) FROM collectives");
	CHECK_STR(v, "4|NULL|0|4096\n"); /* datatype 0 (int8): 1024 bytes each; comm init not recorded: unmatched, wait unknown */
	free(v);
	v = rows_of(db, doc_query("drops_and_damage"));
	CHECK(v && strstr(v, "|drops|cpu|3\n") != NULL);
	free(v);

	/* values are bound, not pasted: the hostile command line is data */
	v = rows_of(db, "SELECT cmdline FROM processes WHERE pid = 300");
	CHECK_STR(v, HOSTILE "\n");
	free(v);
	v = rows_of(db, "SELECT pid, rank FROM processes ORDER BY pid");
	CHECK_STR(v, "100|NULL\n200|NULL\n300|3\n");
	free(v);
	/* common clock: file clock + offset */
	v = rows_of(db, "SELECT min(c.ts_ns) - f.clock_offset_ns, f.clock_offset_ns FROM cpu_samples c "
			"JOIN files f USING (file_id)");
	CHECK_STR(v, "1010000000|1714564799123000000\n");
	free(v);
	v = rows_of(db, "SELECT count(*), sum(depth) FROM stacks");
	CHECK_STR(v, "6|14\n");
	free(v);
	v = rows_of(db, "SELECT name, symbol, dso, kind FROM frames WHERE name IN "
			"('schedule_[k]', 'libx.so+0x1900', 'foo::bar()') ORDER BY name");
	CHECK_STR(v, "foo::bar()|foo::bar()|/usr/bin/trainer|native\n"
		     "libx.so+0x1900|NULL|/usr/lib/libx.so|native\n"
		     "schedule_[k]|schedule|[kernel.kallsyms]|kernel\n");
	free(v);
	v = rows_of(db, "SELECT count(*) FROM step_marks");
	CHECK_STR(v, "2\n");
	free(v);
	v = rows_of(db, "SELECT tid, events FROM threads WHERE pid = 100 ORDER BY tid");
	CHECK(v && strncmp(v, "100|", 4) == 0 && strstr(v, "\n101|100\n"));
	free(v);
	/* names from the THREAD records; pid 200's tid 200 has none */
	v = rows_of(db, "SELECT pid, tid, coalesce(name, 'NULL') FROM threads WHERE pid IN (100, 200) ORDER BY pid, tid");
	CHECK_STR(v, "100|100|trainer\n100|101|dataloader\n200|200|NULL\n");
	free(v);
	v = rows_of(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%'");
	CHECK_STR(v, "18\n");
	free(v);
	/* the failed cudaMalloc: a finding with no idle cost (NULL cost) */
	v = rows_of(db, "SELECT position, listed, kind, cost_ms, share, pids FROM findings");
	CHECK_STR(v, "1|1|oom|NULL|NULL|100\n");
	free(v);
	sqlite3_close(db);
	test_findings_table();
	test_generic_tables(trace, db_path);
	return check_finish();
}
