/* The timeline output: a synthetic trace with nested and crossing slices on
 * one thread, allocations, RDMA work requests and steps, through
 * `flightrec-analyze timeline`; the JSON is parsed by a strict validator
 * here and checked: every event has ph, ts, pid, tid, name (dur for X); X
 * slices on one thread nest; counters never go back in time; the crossing
 * slice became async; names of hostile processes are escaped; the GPU-idle
 * intervals of the findings model are slices on a "GPU idle" track named
 * by their cause; --from/--to keep exactly the events meeting the window
 * (and each counter's value at its start), --pid/--rank one process's. */
#include "check.h"
#include "test_analyzer_run.h"
#include "test_analyzer_common.h"
#include "test_analyzer_findings_trace.h"

#include "commands.h"

#include <ctype.h>
#include <math.h>
#include <unistd.h>

/* ---- a strict little JSON parser that keeps the fields tests need ---- */

struct ev {
	char ph[4], name[96], id[48];
	double ts, dur, bytes;
	double pid, tid;
	int has_ts, has_dur, has_pid, has_tid, has_name, has_bytes;
};

struct parser {
	const char *p;
	int ok;
	struct ev *evs;
	size_t n, cap;
};

static void ws(struct parser *ps)
{
	while (*ps->p && isspace((unsigned char)*ps->p))
		ps->p++;
}

static int lit(struct parser *ps, const char *w)
{
	size_t n = strlen(w);
	if (strncmp(ps->p, w, n))
		return 0;
	ps->p += n;
	return 1;
}

/* A string into buf (may be NULL); \uXXXX kept as '?'. */
static int str(struct parser *ps, char *buf, size_t len)
{
	size_t n = 0;
	if (*ps->p != '"')
		return 0;
	ps->p++;
	while (*ps->p && *ps->p != '"') {
		char c = *ps->p++;
		if ((unsigned char)c < 0x20)
			return 0;
		if (c == '\\') {
			char e = *ps->p++;
			if (e == 'u') {
				for (int i = 0; i < 4; i++)
					if (!isxdigit((unsigned char)*ps->p++))
						return 0;
				c = '?';
			} else if (strchr("\"\\/bfnrt", e)) {
				c = e == 'n' ? '\n' : e;
			} else {
				return 0;
			}
		}
		if (buf && n + 1 < len)
			buf[n++] = c;
	}
	if (buf)
		buf[n] = '\0';
	if (*ps->p != '"')
		return 0;
	ps->p++;
	return 1;
}

static int num(struct parser *ps, double *v)
{
	char *end;
	const char *s = ps->p;
	if (*s == '-')
		s++;
	if (!isdigit((unsigned char)*s))
		return 0;
	*v = strtod(ps->p, &end);
	ps->p = end;
	return 1;
}

static int value(struct parser *ps, int depth, struct ev *ev, const char *key);

static int object(struct parser *ps, int depth, struct ev *ev)
{
	ps->p++; /* { */
	ws(ps);
	if (*ps->p == '}') {
		ps->p++;
		return 1;
	}
	for (;;) {
		char key[64];
		ws(ps);
		if (!str(ps, key, sizeof(key)))
			return 0;
		ws(ps);
		if (*ps->p++ != ':')
			return 0;
		ws(ps);
		if (!value(ps, depth + 1, ev, key))
			return 0;
		ws(ps);
		if (*ps->p == ',') {
			ps->p++;
			continue;
		}
		if (*ps->p == '}') {
			ps->p++;
			return 1;
		}
		return 0;
	}
}

static int array(struct parser *ps, int depth, int events)
{
	ps->p++; /* [ */
	ws(ps);
	if (*ps->p == ']') {
		ps->p++;
		return 1;
	}
	for (;;) {
		ws(ps);
		if (events) {
			if (*ps->p != '{')
				return 0;
			if (ps->n == ps->cap)
				ps->evs = realloc(ps->evs, (ps->cap = ps->cap ? 2 * ps->cap : 256) * sizeof(*ps->evs));
			struct ev *ev = &ps->evs[ps->n++];
			memset(ev, 0, sizeof(*ev));
			if (!object(ps, depth + 1, ev))
				return 0;
		} else if (!value(ps, depth + 1, NULL, NULL)) {
			return 0;
		}
		ws(ps);
		if (*ps->p == ',') {
			ps->p++;
			continue;
		}
		if (*ps->p == ']') {
			ps->p++;
			return 1;
		}
		return 0;
	}
}

/* depth: 1 document members, 3 event members, 4 args members */
static int value(struct parser *ps, int depth, struct ev *ev, const char *key)
{
	double v;
	if (*ps->p == '{') {
		/* only the event's args object keeps fields ("bytes") */
		struct ev *inner = ev && depth == 3 && key && strcmp(key, "args") == 0 ? ev : NULL;
		return object(ps, depth, inner);
	}
	if (*ps->p == '[')
		return array(ps, depth, depth == 1 && key && strcmp(key, "traceEvents") == 0);
	if (*ps->p == '"') {
		char buf[96];
		if (!str(ps, buf, sizeof(buf)))
			return 0;
		if (ev && depth == 3 && key) {
			if (!strcmp(key, "ph"))
				snprintf(ev->ph, sizeof(ev->ph), "%.3s", buf);
			else if (!strcmp(key, "name"))
				snprintf(ev->name, sizeof(ev->name), "%s", buf), ev->has_name = 1;
			else if (!strcmp(key, "id"))
				snprintf(ev->id, sizeof(ev->id), "%.47s", buf);
		}
		return 1;
	}
	if (lit(ps, "true") || lit(ps, "false") || lit(ps, "null"))
		return 1;
	if (!num(ps, &v))
		return 0;
	if (ev && key) {
		if (depth == 3 && !strcmp(key, "ts"))
			ev->ts = v, ev->has_ts = 1;
		else if (depth == 3 && !strcmp(key, "dur"))
			ev->dur = v, ev->has_dur = 1;
		else if (depth == 3 && !strcmp(key, "pid"))
			ev->pid = v, ev->has_pid = 1;
		else if (depth == 3 && !strcmp(key, "tid"))
			ev->tid = v, ev->has_tid = 1;
		else if (depth == 4 && !strcmp(key, "bytes"))
			ev->bytes = v, ev->has_bytes = 1;
	}
	return 1;
}

static int parse(const char *text, struct parser *ps)
{
	memset(ps, 0, sizeof(*ps));
	ps->p = text;
	ws(ps);
	if (*ps->p != '{' || !object(ps, 0, NULL))
		return 0;
	ws(ps);
	return *ps->p == '\0';
}

/* ---- the trace ---- */

static void cuda(struct synth *s, uint32_t tid, uint16_t func, uint64_t ts, uint64_t dur,
		 uint64_t ptr, uint64_t bytes)
{
	struct fr_ev_cuda ev = { .c = { .ts_ns = ts, .pid = 100, .tid = tid }, .func = func,
				 .duration_ns = dur, .ptr = ptr, .bytes = bytes };
	synth_raw(s->ev, &ev, sizeof(ev), FR_EV_CUDA, ts);
}

static void sysc(struct synth *s, uint32_t tid, uint64_t ts, uint64_t dur)
{
	struct fr_ev_syscall ev = { .c = { .ts_ns = ts, .pid = 100, .tid = tid }, .nr = 16,
				    .duration_ns = dur };
	synth_raw(s->ev, &ev, sizeof(ev), FR_EV_SYSCALL, ts);
}

static int write_trace(const char *path)
{
	struct synth s;
	if (synth_open(&s, path))
		return -1;
	synth_process(&s, 100, 1, "<img src=x>", "python train.py");
	synth_thread(&s, 100, 101, "<b>loader");
	uint64_t t = 2000000000ull;
	/* nested: a syscall inside a cudaMalloc (arrives first: it ends first) */
	sysc(&s, 100, t + 1000, 2000);
	cuda(&s, 100, FR_CUDA_MALLOC, t, 10000, 0x1000, 4096);
	/* crossing: starts inside the cudaMalloc above, ends after it */
	sysc(&s, 100, t + 8000, 5000);
	/* a free that arrives before the allocation it frees ended: the
	 * counter must not go back in time */
	cuda(&s, 101, FR_CUDA_MALLOC, t + 20000, 50000, 0x2000, 100);
	cuda(&s, 100, FR_CUDA_FREE, t + 30000, 1000, 0x1000, 0);
	/* many short syscalls then a long call around them all (ring eviction) */
	for (int i = 0; i < 100; i++)
		sysc(&s, 102, t + 100000 + 1000 * (uint64_t)i, 500);
	cuda(&s, 102, FR_CUDA_DEVICE_SYNC, t + 99000, 200000, 0, 0);
	for (int i = 0; i < 3; i++) {
		struct fr_ev_step st = { .c = { .ts_ns = t + 1000000ull * (uint64_t)i, .pid = 100, .tid = 100 } };
		synth_raw(s.ev, &st, sizeof(st), FR_EV_STEP, st.c.ts_ns);
	}
	struct fr_ev_rdma_post p = { .c = { .ts_ns = t + 5000, .pid = 100, .tid = 100 }, .wr_id = 9,
				     .qp_num = 3, .flags = FR_RDMA_POST_SIGNALED };
	synth_raw(s.ev, &p, sizeof(p), FR_EV_RDMA_POST, p.c.ts_ns);
	struct fr_ev_rdma_cqe c = { .c = { .ts_ns = t + 9000, .pid = 100, .tid = 100 }, .wr_id = 9,
				    .qp_num = 3 };
	synth_raw(s.ev, &c, sizeof(c), FR_EV_RDMA_CQE, c.c.ts_ns);
	/* a call of a family without a case of its own: a slice from its
	 * descriptor (name, family, duration) */
	struct fr_ev_rdma_ctrl q = { .c = { .ts_ns = t + 400000, .pid = 100, .tid = 101 },
				     .func = FR_RDMA_CREATE_QP, .duration_ns = 7000 };
	synth_raw(s.ev, &q, sizeof(q), FR_EV_RDMA_CTRL, q.c.ts_ns);
	return synth_close(&s, 0, 0);
}

static int cmp_start(const void *a, const void *b)
{
	const struct ev *x = *(const struct ev *const *)a, *y = *(const struct ev *const *)b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->dur > y->dur ? -1 : x->dur < y->dur; /* outer first */
}

/* Two nodes, one rank each, 10 all-reduces whose exits are simultaneous in
 * true time; node b's realtime clock is 250 ms ahead.  Anchors alone would
 * put b's events 250 ms late; the NCCL model's alignment removes that. */
#define EPOCH_NS 1714564800000000000ull
static int write_node(const char *path, int node, int64_t skew_ns)
{
	static const char *const argv[] = { "flightrec", "record" };
	uint64_t origin = 7000000000ull * (uint64_t)(node + 1);
	struct frec_file_info info = { .host = node ? "node-b" : "node-a", .argv = argv, .argc = 2,
				       .start_mono_ns = origin,
				       .start_real_ns = (uint64_t)((int64_t)EPOCH_NS + skew_ns) };
	struct frec_writer_opts opts = { .codec = FR_CODEC_ZSTD, .level = 1 };
	opts.schema = fr_schema_table(&opts.n_schema);
	struct frec_error err;
	struct synth s;
	memset(&s, 0, sizeof(s));
	s.ts_ns = origin;
	if (frec_writer_open(path, &info, &opts, &s.w, &err))
		return -1;
	s.ev = frec_builder_new(s.w, FR_CHUNK_EVENTS);
	s.meta = frec_builder_new(s.w, FR_CHUNK_META);
	uint32_t pid = 1000 + 100 * (uint32_t)node;
	synth_process(&s, pid, 1, "train", "train");
	char env[64];
	int n = snprintf(env, sizeof(env), "RANK=%d%cWORLD_SIZE=2", node, 0);
	uint8_t buf[128] = { 0 };
	struct fr_rec_proc_env pe = { .ts_ns = origin, .pid = pid, .len = (uint32_t)n + 1 };
	memcpy(buf, &pe, sizeof(pe));
	memcpy(buf + sizeof(pe), env, (size_t)n + 1);
	synth_raw(s.meta, buf, FR_ALIGN8((uint32_t)sizeof(pe) + (uint32_t)n + 1), FR_REC_PROC_ENV, origin);
	struct fr_ev_nccl init = { .c = { .ts_ns = origin + 1000000, .pid = pid, .tid = pid },
				   .func = FR_NCCL_COMM_INIT_RANK, .duration_ns = 1000000, .comm = 0x77,
				   .rank = node, .nranks = 2, .uid_hash = 0xabcdef, .peer = -1 };
	synth_raw(s.ev, &init, sizeof(init), FR_EV_NCCL, init.c.ts_ns);
	uint64_t last = 0;
	for (int k = 0; k < 10; k++) {
		/* true time: entries 20 + 10k ms (node b 2 ms later), exit 25 + 10k ms */
		uint64_t entry = 20000000ull + 10000000ull * (uint64_t)k + (node ? 2000000ull : 0);
		uint64_t exit = 25000000ull + 10000000ull * (uint64_t)k + 3000ull * (uint64_t)node;
		struct fr_ev_nccl ev = { .c = { .ts_ns = origin + entry, .pid = pid, .tid = pid },
					 .func = FR_NCCL_ALL_REDUCE, .duration_ns = exit - entry, .comm = 0x77,
					 .count = 1024, .datatype = 7, .peer = -1, .rank = -1, .nranks = -1 };
		synth_raw(s.ev, &ev, sizeof(ev), FR_EV_NCCL, ev.c.ts_ns);
		last = origin + exit;
	}
	for (uint64_t x = origin; x <= last + 1000000000ull; x += 1000000000ull) {
		struct fr_rec_clock c = { .mono_ns = x,
					  .real_ns = (uint64_t)((int64_t)(EPOCH_NS + (x - origin)) + skew_ns) };
		synth_raw(s.meta, &c, sizeof(c), FR_REC_CLOCK, x);
	}
	s.ts_ns = last;
	return synth_close(&s, 0, 0);
}

static void check_aligned(void)
{
	char a[512], b[512], out[512];
	synth_path("analyzer_timeline_node_a.frec", a, sizeof(a));
	synth_path("analyzer_timeline_node_b.frec", b, sizeof(b));
	synth_path("analyzer_timeline_nodes.json", out, sizeof(out));
	CHECK_EQ_U64(write_node(a, 0, 0), 0);
	CHECK_EQ_U64(write_node(b, 1, 250000000), 0);
	char *argv[] = { "timeline", a, b, "-o", out, NULL };
	CHECK_EQ_U64(cmd_timeline(5, argv, stdout, stderr), 0);
	FILE *f = fopen(out, "r");
	CHECK(f != NULL);
	if (!f)
		return;
	char *text = calloc(1, 1 << 20);
	size_t n = fread(text, 1, (1 << 20) - 1, f);
	fclose(f);
	text[n] = '\0';
	struct parser ps;
	CHECK(parse(text, &ps));
	/* the k-th all-reduce of each rank: ends line up (3 us apart in true
	 * time), entries 2 ms apart; the 250 ms of realtime skew is gone */
	double end[2][10], start[2][10];
	size_t cnt[2] = { 0, 0 };
	double pid0 = -1;
	for (size_t i = 0; i < ps.n; i++) {
		struct ev *e = &ps.evs[i];
		if (strcmp(e->ph, "X") || strcmp(e->name, "ncclAllReduce"))
			continue;
		if (pid0 < 0)
			pid0 = e->pid;
		int which = e->pid == pid0 ? 0 : 1;
		if (cnt[which] < 10) {
			start[which][cnt[which]] = e->ts;
			end[which][cnt[which]++] = e->ts + e->dur;
		}
	}
	CHECK_EQ_U64(cnt[0], 10);
	CHECK_EQ_U64(cnt[1], 10);
	size_t lined_up = 0;
	for (size_t k = 0; k < 10 && cnt[0] == 10 && cnt[1] == 10; k++) {
		if (fabs(end[0][k] - end[1][k]) < 50.0 && fabs(fabs(start[0][k] - start[1][k]) - 2000.0) < 50.0)
			lined_up++;
	}
	CHECK_EQ_U64(lined_up, 10);
	/* tracks are named with their rank and host */
	CHECK(strstr(text, "rank 1") != NULL && strstr(text, "node-b") != NULL);
	free(ps.evs);
	free(text);
}

/* GPU idle: the findings trace's 10 intervals of 4 ms (host_sync 2.6,
 * pageable_copy 1, unexplained 0.4) as X slices named host_sync on the
 * process's "GPU idle" track, their sum what `findings` counts. */
static void check_gpu_idle(void)
{
	char trace[512], out[512];
	synth_path("analyzer_timeline_idle.frec", trace, sizeof(trace));
	synth_path("analyzer_timeline_idle.json", out, sizeof(out));
	struct synth s;
	CHECK_EQ_U64(synth_open(&s, trace), 0);
	findings_trace_body(&s, 2000000000ull);
	CHECK_EQ_U64(synth_close(&s, 0, 0), 0);
	char *argv[] = { "timeline", trace, "-o", out, NULL };
	CHECK_EQ_U64(cmd_timeline(4, argv, stdout, stderr), 0);
	FILE *f = fopen(out, "r");
	CHECK(f != NULL);
	if (!f)
		return;
	char *text = calloc(1, 1 << 20);
	size_t n = fread(text, 1, (1 << 20) - 1, f);
	fclose(f);
	text[n] = '\0';
	struct parser ps;
	CHECK(parse(text, &ps));
	const double idle_tid = 4294967296.0 + FINDINGS_PID; /* IDLE_TID_BIT | pid */
	size_t n_idle = 0;
	double sum_us = 0, last_end = -1;
	for (size_t i = 0; i < ps.n; i++) {
		struct ev *e = &ps.evs[i];
		if (strcmp(e->ph, "X") || e->tid != idle_tid)
			continue;
		n_idle++;
		CHECK(e->pid == FINDINGS_PID && !strcmp(e->name, "host_sync"));
		CHECK(fabs(e->dur - 4000.0) < 1e-6);
		CHECK(e->ts >= last_end); /* one track, in time order, disjoint */
		last_end = e->ts + e->dur;
		sum_us += e->dur;
	}
	CHECK_EQ_U64(n_idle, FINDINGS_STEPS);
	CHECK(fabs(sum_us / 1000 - 40.0) < 1e-6); /* findings: "gpu_idle_ms":{"500":40.000} */
	/* the first: 1 ms after the first launch, 2 ms after the earliest event */
	CHECK(strstr(text, "{\"ph\":\"X\",\"cat\":\"gpu_idle\",\"name\":\"host_sync\",\"pid\":500,"
			   "\"tid\":4294967796,\"ts\":2000.000,\"dur\":4000.000,\"args\":{"
			   "\"pageable_copy_ms\":1.000,\"host_sync_ms\":2.600,\"unexplained_ms\":0.400}}") != NULL);
	CHECK(strstr(text, "\"tid\":4294967796,\"ts\":0,\"args\":{\"name\":\"GPU idle\"}") != NULL);
	free(ps.evs);
	free(text);
}

/* The timeline of argv as parsed events (ps->evs), 0 on success. */
static int run_timeline(char **argv, int argc, const char *out, struct parser *ps, char **text)
{
	memset(ps, 0, sizeof(*ps));
	*text = NULL;
	if (cmd_timeline(argc, argv, stdout, stderr) != 0)
		return -1;
	FILE *f = fopen(out, "r");
	if (!f || !(*text = calloc(1, 1 << 20))) {
		if (f)
			fclose(f);
		return -1;
	}
	size_t n = fread(*text, 1, (1 << 20) - 1, f);
	fclose(f);
	(*text)[n] = '\0';
	return parse(*text, ps) ? 0 : -1;
}

/* write_trace's events between 150 and 250 us: the ioctls 50..99 of tid
 * 102 (each 500 ns, 1 us apart from 100 us), the device synchronize around
 * them, step 0 (0 to 1 ms), and the device counter's value then (100
 * bytes: 4096 allocated and freed, 100 allocated) at 150 us. */
static void check_window(char *trace)
{
	char out[512];
	synth_path("analyzer_timeline_window.json", out, sizeof(out));
	char *argv[] = { "timeline", trace, "--from", "0.00015", "--to", "0.00025", "-o", out, NULL };
	struct parser ps;
	char *text = NULL;
	CHECK_EQ_U64(run_timeline(argv, 8, out, &ps, &text), 0);
	size_t ioctls = 0, syncs = 0, steps = 0, counters = 0, idle = 0, other = 0;
	for (size_t i = 0; text && i < ps.n; i++) {
		const struct ev *e = &ps.evs[i];
		if (e->ph[0] == 'M')
			continue;
		if (!strcmp(e->name, "ioctl")) {
			ioctls++;
			CHECK(e->ts + e->dur >= 150.0 && e->ts <= 250.0);
		} else if (!strcmp(e->name, "cudaDeviceSynchronize")) {
			syncs++;
		} else if (!strcmp(e->name, "step 0")) {
			steps++;
		} else if (e->ph[0] == 'C') {
			counters++;
			CHECK(fabs(e->ts - 150.0) < 1e-9 && e->bytes == 100);
		} else if (!strcmp(e->name, "unexplained")) {
			/* the GPU idle after the last synchronize, which runs to the
			 * process's last event (31 to 299 us), meets the window */
			idle++;
			CHECK(e->ts <= 250.0 && e->ts + e->dur >= 150.0);
		} else {
			other++;
		}
	}
	CHECK_EQ_U64(ioctls, 50);
	CHECK(syncs >= 1); /* as an X or a b/e pair */
	CHECK_EQ_U64(steps, 1);
	CHECK_EQ_U64(counters, 1);
	CHECK_EQ_U64(idle, 1);
	CHECK_EQ_U64(other, 0);
	free(ps.evs);
	free(text);
	/* no such process: names and nothing else */
	char *argv2[] = { "timeline", trace, "--pid", "999", "-o", out, NULL };
	text = NULL;
	CHECK_EQ_U64(run_timeline(argv2, 6, out, &ps, &text), 0);
	for (size_t i = 0; text && i < ps.n; i++)
		CHECK(ps.evs[i].ph[0] == 'M' && strcmp(ps.evs[i].name, "process_name"));
	free(ps.evs);
	free(text);
	char *bad[] = { "timeline", trace, "--from", "2", "--to", "1", "-o", out, NULL };
	CHECK(cmd_timeline(8, bad, stdout, stderr) != 0);
}

/* --rank 1 of the two-node job: only node b's process (pid 1100). */
static void check_rank(void)
{
	char a[512], b[512], out[512];
	synth_path("analyzer_timeline_node_a.frec", a, sizeof(a));
	synth_path("analyzer_timeline_node_b.frec", b, sizeof(b));
	synth_path("analyzer_timeline_rank.json", out, sizeof(out));
	char *argv[] = { "timeline", a, b, "--rank", "1", "-o", out, NULL };
	struct parser ps;
	char *text = NULL;
	CHECK_EQ_U64(run_timeline(argv, 7, out, &ps, &text), 0);
	size_t kept = 0;
	double pid = -1;
	for (size_t i = 0; text && i < ps.n; i++) {
		if (ps.evs[i].ph[0] == 'M')
			continue;
		if (pid < 0)
			pid = ps.evs[i].pid;
		CHECK(ps.evs[i].pid == pid);
		kept++;
	}
	CHECK(kept >= 10); /* its init and ten all-reduces, at least */
	CHECK(text && strstr(text, "rank 1") && !strstr(text, "rank 0"));
	free(ps.evs);
	free(text);
}

/* A JSON timeline past the viewers' size says so and names the ways out
 * (Perfetto's format first); one within it says nothing (the bound lowered
 * to a few bytes, then raised: the whole-file size is what decides), and
 * neither does a Perfetto file of any size, that format being the way out. */
static void check_big_note(const char *trace, const char *out)
{
	setenv("FLIGHTREC_TIMELINE_BIG_BYTES", "1000", 1);
	struct cmd_run r = CMD_RUN(cmd_timeline, "timeline", (char *)trace, "-o", (char *)out);
	CHECK_EQ_U64(r.rc, 0);
	CHECK(strstr(r.err, "chrome://tracing refuses JSON past 256 MB") != NULL);
	CHECK(strstr(r.err, "--from SEC --to SEC") != NULL);
	CHECK(strstr(r.err, "--format perfetto -o OUT.pftrace") != NULL);
	cmd_run_free(&r);
	r = CMD_RUN(cmd_timeline, "timeline", (char *)trace, "--format", "perfetto", "-o",
		    (char *)out);
	CHECK_EQ_U64(r.rc, 0);
	CHECK(strstr(r.err, "256 MB") == NULL);
	CHECK(strstr(r.err, "slices") != NULL);
	cmd_run_free(&r);
	setenv("FLIGHTREC_TIMELINE_BIG_BYTES", "1000000000", 1);
	r = CMD_RUN(cmd_timeline, "timeline", (char *)trace, "-o", (char *)out);
	CHECK_EQ_U64(r.rc, 0);
	CHECK(strstr(r.err, "256 MB") == NULL);
	CHECK(strstr(r.err, "slices") != NULL);
	cmd_run_free(&r);
	unsetenv("FLIGHTREC_TIMELINE_BIG_BYTES");
}

int main(void)
{
	check_aligned();
	check_gpu_idle();
	check_rank();

	char trace[512], out[512];
	synth_path("analyzer_timeline.frec", trace, sizeof(trace));
	synth_path("analyzer_timeline.json", out, sizeof(out));
	CHECK_EQ_U64(write_trace(trace), 0);
	check_window(trace);
	check_big_note(trace, out);
	char *argv[] = { "timeline", trace, "-o", out, NULL };
	CHECK_EQ_U64(cmd_timeline(4, argv, stdout, stderr), 0);

	FILE *f = fopen(out, "r");
	CHECK(f != NULL);
	char *text = calloc(1, 1 << 20);
	size_t n = fread(text, 1, (1 << 20) - 1, f);
	fclose(f);
	text[n] = '\0';
	struct parser ps;
	CHECK(parse(text, &ps));
	CHECK(ps.n > 100);
	CHECK(strstr(text, "<img") == NULL); /* escaped as \u003c */

	size_t n_x = 0, n_b = 0, n_e = 0, n_c = 0, n_steps = 0, n_overlap = 0;
	struct ev **xs = calloc(ps.n, sizeof(*xs));
	double last_counter = -1, first_ts = 1e300;
	for (size_t i = 0; i < ps.n; i++) {
		struct ev *e = &ps.evs[i];
		CHECK(e->ph[0] && e->has_pid && e->has_tid && e->has_name && e->has_ts);
		if (!strcmp(e->ph, "X")) {
			CHECK(e->has_dur && e->dur >= 0);
			xs[n_x++] = e;
			if (!strncmp(e->name, "step ", 5))
				n_steps++;
		} else if (!strcmp(e->ph, "b")) {
			n_b++;
			CHECK(e->id[0]);
		} else if (!strcmp(e->ph, "e")) {
			n_e++;
		} else if (!strcmp(e->ph, "C")) {
			CHECK(e->has_bytes);
			CHECK(e->ts >= last_counter); /* one counter track in this trace */
			last_counter = e->ts;
			n_c++;
		}
		if (e->ph[0] != 'M' && e->ts < first_ts)
			first_ts = e->ts;
		if (strstr(text, "syscall.overlap"))
			n_overlap = 1;
	}
	CHECK(fabs(first_ts) < 1e-9); /* times count from the earliest event */
	CHECK_EQ_U64(n_c, 3);       /* two allocations, one free */
	CHECK_EQ_U64(n_steps, 3);
	CHECK(n_b >= 2 && n_b == n_e);
	CHECK(n_overlap);
	/* X slices of one thread nest: sorted by start (outer first), each
	 * either ends before the next starts or contains it */
	qsort(xs, n_x, sizeof(*xs), cmp_start);
	size_t bad = 0;
	for (size_t i = 0; i < n_x; i++) {
		for (size_t j = i + 1; j < n_x && xs[j]->pid == xs[i]->pid && xs[j]->tid == xs[i]->tid; j++) {
			double ei = xs[i]->ts + xs[i]->dur, sj = xs[j]->ts, ej = sj + xs[j]->dur;
			if (sj >= ei - 1e-9)
				break;
			if (ej > ei + 1e-9)
				bad++;
		}
	}
	CHECK_EQ_U64(bad, 0);
	/* the crossing syscall is async, the nested one an X */
	CHECK(strstr(text, "\"cat\":\"syscall.overlap\",\"name\":\"mmap\"") != NULL ||
	      strstr(text, "\"cat\":\"syscall.overlap\",\"name\":\"ioctl\"") != NULL);
	CHECK(strstr(text, "\"ph\":\"X\",\"cat\":\"cuda\",\"name\":\"cudaMalloc\"") != NULL);
	CHECK(strstr(text, "\"ph\":\"X\",\"cat\":\"rdma\",\"name\":\"ibv_create_qp\"") != NULL &&
	      strstr(text, "\"dur\":7.000") != NULL);
	CHECK(strstr(text, "\"name\":\"process_name\"") != NULL);
	/* tid 101's name from its THREAD record; 102 has none: its tid */
	CHECK(strstr(text, "\"args\":{\"name\":\"\\u003cb\\u003eloader\"}") != NULL);
	CHECK(strstr(text, "\"args\":{\"name\":\"tid 102\"}") != NULL);
	free(xs);
	free(ps.evs);
	free(text);
	return check_finish();
}
