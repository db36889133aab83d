/* A synthetic data-parallel job on several nodes, for the tests of the
 * distributed analyses (test_analyzer_stragglers.c, test_analyzer_summary.c):
 * in true time, per step each rank computes, then makes K collectives; an
 * instance releases every rank when the last one has entered, and each
 * leaves after a small wake-up latency.  Each node gets its own monotonic
 * origin and a realtime clock that may be off by skew_ms.  write_job
 * writes one trace per node, named PREFIX_nodeN.frec.
 *
 * A hang (hang_at > 0, for test_analyzer_hang.c): rank hang_rank never
 * enters collective number hang_at (from 1, counted over every collective
 * of the job), the others enter it and never leave, and every node's
 * recorder looks hang_wait_ms after the last of them entered; the traces
 * end there.  hang_mode says how the waiting ranks wait (enum job_hang). */
#ifndef FLIGHTREC_TEST_ANALYZER_JOB_H
#define FLIGHTREC_TEST_ANALYZER_JOB_H

#include "test_analyzer_synth.h"

#include <math.h>

#define MAX_NODES 4
#define MAX_RANKS 16
#define MAX_K 4
#define EPOCH_NS 1714564800000000000ull
#define MS 1000000.0

struct job {
	int nodes, ranks_per_node, steps, k;   /* k collectives per step */
	double compute_ms, jitter_ms;          /* uniform +- jitter per rank and step */
	int slow_rank;                         /* -1: none */
	double slow_ms;                        /* extra compute of slow_rank */
	int slow_from_step;
	double slow_share;                     /* share of steps it is slow in (1: all) */
	double skew_ms[MAX_NODES];             /* node realtime clock error */
	int with_init, with_markers;
	unsigned seed;
	int hang_at;                           /* 0: no hang */
	int hang_rank;
	int hang_mode;                         /* enum job_hang */
	double hang_wait_ms;
	int hang_returned;                     /* rank + 1 whose in-flight call also
						  returned while its recorder looked
						  (its event is in the trace); 0 none */
	double hang_poll_ms;                   /* JOB_HANG_POLL: polls for this long
						  only; 0: to the end */
};

enum job_hang {
	JOB_HANG_BLOCKING,  /* inside the collective: an INFLIGHT record names it */
	JOB_HANG_SYNC,      /* it returned at enqueue; a stream synchronize is in flight */
	JOB_HANG_POLL,      /* it returned; an event recorded after it is polled not ready
			       every ms to the end; no INFLIGHT record at all */
	JOB_HANG_GROUP,     /* queued in a group; the group's ncclGroupEnd is in flight */
};

static uint64_t rng_state;
static double rnd(void) /* [0, 1) */
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(rng_state >> 11) / 9007199254740992.0;
}

struct node_out {
	struct synth s;
	uint64_t mono_origin;   /* node mono = true_ns + mono_origin */
	uint64_t last_ns;
};

static void put_env(struct synth *s, uint32_t pid, int rank, int local, int world)
{
	char env[256];
	int n = snprintf(env, sizeof(env), "RANK=%d%cLOCAL_RANK=%d%cWORLD_SIZE=%d%cMASTER_ADDR=10.0.0.1",
			 rank, 0, local, 0, world, 0);
	uint32_t len = (uint32_t)n + 1;
	uint32_t size = FR_ALIGN8((uint32_t)sizeof(struct fr_rec_proc_env) + len);
	uint8_t buf[512] = { 0 };
	struct fr_rec_proc_env r = { .ts_ns = s->ts_ns, .pid = pid, .len = len };
	memcpy(buf, &r, sizeof(r));
	memcpy(buf + sizeof(r), env, len);
	synth_raw(s->meta, buf, size, FR_REC_PROC_ENV, s->ts_ns);
}

/* seq: the recorder's number (FR_EV_NCCL.seq), 0 none */
static void put_nccl_seq(struct synth *s, uint32_t pid, uint16_t func, uint64_t ts, uint64_t dur,
			 uint64_t comm, uint64_t count, int rank, int nranks, uint64_t uid,
			 uint32_t seq, uint64_t stream)
{
	struct fr_ev_nccl ev = { .c = { .ts_ns = ts, .pid = pid, .tid = pid }, .func = func,
				 .duration_ns = dur, .comm = comm, .count = count, .peer = -1,
				 .rank = rank, .nranks = nranks, .uid_hash = uid, .seq = seq,
				 .stream = stream };
	synth_raw(s->ev, &ev, sizeof(ev), FR_EV_NCCL, ts);
}

static void put_nccl(struct synth *s, uint32_t pid, uint16_t func, uint64_t ts, uint64_t dur,
		     uint64_t comm, uint64_t count, int rank, int nranks, uint64_t uid)
{
	put_nccl_seq(s, pid, func, ts, dur, comm, count, rank, nranks, uid, 0, 0);
}

static void put_cuda(struct synth *s, uint32_t pid, uint16_t func, uint64_t ts, uint64_t ptr,
		     uint64_t stream, int64_t result)
{
	struct fr_ev_cuda ev = { .c = { .ts_ns = ts, .pid = pid, .tid = pid }, .func = func,
				 .duration_ns = 2000, .result = result, .ptr = ptr,
				 .stream = stream, .device = 0 };
	synth_raw(s->ev, &ev, sizeof(ev), FR_EV_CUDA, ts);
}

/* One INFLIGHT record of n calls, looked at seen_ns. */
static void put_inflight(struct synth *s, const struct fr_inflight_call *c, uint32_t n,
			 uint64_t seen_ns)
{
	uint8_t buf[sizeof(struct fr_rec_inflight) + MAX_RANKS * sizeof(*c)];
	uint32_t size = (uint32_t)(sizeof(struct fr_rec_inflight) + n * sizeof(*c));
	struct fr_rec_inflight r = { .seen_ns = seen_ns, .n = n };
	memcpy(buf, &r, sizeof(r));
	memcpy(buf + sizeof(r), c, n * sizeof(*c));
	synth_raw(s->meta, buf, size, FR_REC_INFLIGHT, seen_ns);
}

static void put_sample(struct synth *s, uint32_t pid, uint64_t ts, uint32_t stack_id)
{
	struct fr_ev_cpu_sample ev = { .c = { .ts_ns = ts, .pid = pid, .tid = pid },
				       .stack_id = stack_id };
	synth_raw(s->ev, &ev, sizeof(ev), FR_EV_CPU_SAMPLE, ts);
}

/* The hang at collective ci (see enum job_hang): the ranks but hang_rank
 * enter it at entry[r] (job time) and wait until every node's recorder
 * looks, hang_wait_ms after the last entry; the traces end then. */
static void write_hang(const struct job *j, struct node_out *node, const double *entry,
		       uint16_t func, uint64_t count, int ci)
{
	int world = j->nodes * j->ranks_per_node;
	double last = 0;
	for (int r = 0; r < world; r++)
		if (r != j->hang_rank && entry[r] > last)
			last = entry[r];
	double look = last + j->hang_wait_ms * MS;
	static struct fr_inflight_call calls[MAX_NODES][MAX_RANKS];
	uint32_t nc[MAX_NODES] = { 0 };
	for (int r = 0; r < world; r++) {
		int n = r / j->ranks_per_node;
		uint32_t pid = 1000 + (uint32_t)(n * 100 + r % j->ranks_per_node);
		struct synth *s = &node[n].s;
		uint64_t off = node[n].mono_origin, e = off + (uint64_t)entry[r];
		uint64_t comm = 0x55000000ull + (uint64_t)r, stream = 0x1000ull + (uint64_t)r;
		if (r == j->hang_rank)
			continue;
		struct fr_inflight_call *c = &calls[n][nc[n]];
		*c = (struct fr_inflight_call){ .entry_ns = e, .pid = pid, .tid = pid,
						.probe = FR_PROBE_NCCL, .func = func, .seq = (uint32_t)ci,
						.comm = comm, .count = count, .handle = stream,
						.peer = -1, .named_func = func };
		int returned = j->hang_returned == r + 1;
		switch (j->hang_mode) {
		case JOB_HANG_BLOCKING:
			if (returned)
				put_nccl_seq(s, pid, func, e, (uint64_t)(look - entry[r]), comm, count,
					     -1, -1, 0, (uint32_t)ci, stream);
			nc[n]++;
			break;
		case JOB_HANG_SYNC:
			put_nccl_seq(s, pid, func, e, 20000, comm, count, -1, -1, 0, (uint32_t)ci, stream);
			*c = (struct fr_inflight_call){ .entry_ns = e + 50000, .pid = pid, .tid = pid,
							.probe = FR_PROBE_CUDA,
							.func = FR_CUDA_STREAM_SYNC, .handle = stream,
							.peer = -1, .named_func = FR_CUDA_STREAM_SYNC };
			if (returned)
				put_cuda(s, pid, FR_CUDA_STREAM_SYNC, e + 50000, stream, 0, 0);
			nc[n]++;
			break;
		case JOB_HANG_POLL:
			put_nccl_seq(s, pid, func, e, 20000, comm, count, -1, -1, 0, (uint32_t)ci, stream);
			put_cuda(s, pid, FR_CUDA_EVENT_RECORD, e + 30000, 0x7000ull + (uint64_t)r, stream, 0);
			uint64_t poll_end = j->hang_poll_ms > 0 ? e + (uint64_t)(j->hang_poll_ms * MS)
							       : off + (uint64_t)look;
			for (uint64_t x = e + 1000000; x < poll_end; x += 1000000)
				put_cuda(s, pid, FR_CUDA_EVENT_QUERY, x, 0x7000ull + (uint64_t)r, 0, 600);
			break;
		case JOB_HANG_GROUP:
			put_nccl_seq(s, pid, FR_NCCL_GROUP_START, e - 10000, 1000, 0, 0, -1, -1, 0, 0, 0);
			put_nccl_seq(s, pid, func, e, 20000, comm, count, -1, -1, 0, (uint32_t)ci, stream);
			c->entry_ns = e + 40000;
			c->func = FR_NCCL_GROUP_END;
			c->count = 1;
			c->handle = 0;
			nc[n]++;
			break;
		}
	}
	for (int n = 0; n < j->nodes; n++) {
		node[n].last_ns = node[n].mono_origin + (uint64_t)look;
		if (j->hang_mode != JOB_HANG_POLL)
			put_inflight(&node[n].s, calls[n], nc[n], node[n].last_ns);
	}
}

#define IP_MAIN 0x401010ull
#define IP_COMPUTE 0x402010ull
#define IP_SLOW 0x403010ull

static int write_job(const struct job *j, const char *prefix, char paths[][512])
{
	struct node_out node[MAX_NODES];
	memset(node, 0, sizeof(node));
	int world = j->nodes * j->ranks_per_node;
	rng_state = j->seed * 2654435761u + 1;
	static const struct synth_sym syms[] = {
		{ 0x1000, 0x100, "main" }, { 0x2000, 0x100, "compute_step" },
		{ 0x3000, 0x100, "slow_data_loader" },
	};
	for (int n = 0; n < j->nodes; n++) {
		char name[64], host[32];
		snprintf(name, sizeof(name), "%s_node%d.frec", prefix, n);
		synth_path(name, paths[n], 512);
		snprintf(host, sizeof(host), "node-%c", 'a' + n);
		node[n].mono_origin = 5000000000ull * (uint64_t)(n + 1) + 777777ull * (uint64_t)n;
		static const char *const argv[] = { "flightrec", "record", "--freq", "100" };
		uint64_t real0 = EPOCH_NS + (uint64_t)(int64_t)(j->skew_ms[n] * MS);
		struct frec_file_info info = { .host = host, .argv = argv, .argc = 4,
					       .start_mono_ns = node[n].mono_origin, .start_real_ns = real0 };
		struct frec_writer_opts opts = { .codec = FR_CODEC_ZSTD, .level = 1 };
		opts.schema = fr_schema_table(&opts.n_schema);
		struct frec_error err;
		struct synth *s = &node[n].s;
		memset(s, 0, sizeof(*s));
		s->ts_ns = node[n].mono_origin;
		if (frec_writer_open(paths[n], &info, &opts, &s->w, &err))
			return -1;
		s->ev = frec_builder_new(s->w, FR_CHUNK_EVENTS);
		s->meta = frec_builder_new(s->w, FR_CHUNK_META);
		synth_dso(s, 1, 0, "/opt/train", syms, 3);
		for (int l = 0; l < j->ranks_per_node; l++) {
			uint32_t pid = 1000 + (uint32_t)(n * 100 + l);
			synth_process(s, pid, 1, "train", "train --steps 30");
			synth_mapping(s, pid, 0x400000, 0x500000, 0, 1, "/opt/train");
			put_env(s, pid, n * j->ranks_per_node + l, l, world);
			uint64_t compute_ips[] = { IP_COMPUTE, IP_MAIN }, slow_ips[] = { IP_SLOW, IP_MAIN };
			synth_stack(s, 1 + 2 * (uint32_t)l, pid, compute_ips, 0, 2); /* ids: per file */
			synth_stack(s, 2 + 2 * (uint32_t)l, pid, slow_ips, 0, 2);
		}
	}
	/* true time in ns since the job's start */
	double t[MAX_RANKS], entry[MAX_RANKS];
	uint64_t uid = 0x1234abcd5678ef01ull;
	for (int r = 0; r < world; r++) {
		t[r] = 50 * MS + rnd() * MS;
		int n = r / j->ranks_per_node;
		uint32_t pid = 1000 + (uint32_t)(n * 100 + r % j->ranks_per_node);
		if (j->with_init)
			put_nccl(&node[n].s, pid, FR_NCCL_COMM_INIT_RANK,
				 node[n].mono_origin + (uint64_t)(t[r] - 5 * MS), 2000000,
				 0x55000000ull + (uint64_t)r, 0, r, world, uid);
	}
	static const uint64_t counts[MAX_K] = { 1u << 20, 1u << 18, 4096, 77 };
	static const uint16_t funcs[MAX_K] = { FR_NCCL_ALL_REDUCE, FR_NCCL_ALL_REDUCE,
					       FR_NCCL_ALL_GATHER, FR_NCCL_BROADCAST };
	for (int step = 0; step < j->steps; step++) {
		for (int r = 0; r < world; r++) {
			int n = r / j->ranks_per_node;
			uint32_t pid = 1000 + (uint32_t)(n * 100 + r % j->ranks_per_node);
			struct synth *s = &node[n].s;
			uint64_t off = node[n].mono_origin;
			if (j->with_markers) {
				struct fr_ev_step ev = { .c = { .ts_ns = off + (uint64_t)t[r], .pid = pid,
								.tid = pid } };
				synth_raw(s->ev, &ev, sizeof(ev), FR_EV_STEP, ev.c.ts_ns);
			}
			double compute = j->compute_ms * MS + (2 * rnd() - 1) * j->jitter_ms * MS;
			double slow = 0;
			if (r == j->slow_rank && step >= j->slow_from_step && rnd() < j->slow_share)
				slow = j->slow_ms * MS;
			/* CPU samples every 10 ms: slow part first */
			for (double x = 5 * MS; x < slow + compute; x += 10 * MS)
				put_sample(s, pid, off + (uint64_t)(t[r] + x),
					   (x < slow ? 2 : 1) + 2 * (uint32_t)(r % j->ranks_per_node));
			if (slow > 0) { /* reads in the slow part */
				for (double x = 1 * MS; x < slow; x += 2 * MS) {
					struct fr_ev_syscall ev = {
						.c = { .ts_ns = off + (uint64_t)(t[r] + x), .pid = pid, .tid = pid },
						.nr = 0, .ret = 4096, .duration_ns = 300000 };
					synth_raw(s->ev, &ev, sizeof(ev), FR_EV_SYSCALL, ev.c.ts_ns);
				}
			}
			t[r] += slow + compute;
		}
		for (int k = 0; k < j->k; k++) {
			double release = 0;
			int ci = step * j->k + k + 1; /* the collective's number */
			for (int r = 0; r < world; r++) {
				if (k)
					t[r] += 0.2 * MS + rnd() * 0.1 * MS; /* bucketing between calls */
				entry[r] = t[r];
				if (t[r] > release)
					release = t[r];
			}
			if (j->hang_at == ci) {
				write_hang(j, node, entry, funcs[k], counts[k], ci);
				goto hung;
			}
			release += 0.3 * MS; /* transfer */
			for (int r = 0; r < world; r++) {
				int n = r / j->ranks_per_node;
				uint32_t pid = 1000 + (uint32_t)(n * 100 + r % j->ranks_per_node);
				double exit = release + rnd() * 0.05 * MS; /* wake-up latency */
				put_nccl_seq(&node[n].s, pid, funcs[k],
					     node[n].mono_origin + (uint64_t)entry[r],
					     (uint64_t)(exit - entry[r]), 0x55000000ull + (uint64_t)r,
					     counts[k], -1, -1, 0, (uint32_t)ci, 0x1000ull + (uint64_t)r);
				t[r] = exit;
				if ((uint64_t)exit + node[n].mono_origin > node[n].last_ns)
					node[n].last_ns = (uint64_t)exit + node[n].mono_origin;
			}
		}
	}
hung:
	for (int n = 0; n < j->nodes; n++) {
		struct synth *s = &node[n].s;
		/* realtime anchors every second, with this node's error */
		for (uint64_t x = node[n].mono_origin; x <= node[n].last_ns + 1000000000ull;
		     x += 1000000000ull) {
			struct fr_rec_clock c = { .mono_ns = x,
						  .real_ns = EPOCH_NS + (x - node[n].mono_origin) +
							     (uint64_t)(int64_t)(j->skew_ms[n] * MS) };
			synth_raw(s->meta, &c, sizeof(c), FR_REC_CLOCK, x);
		}
		s->ts_ns = node[n].last_ns;
		if (synth_close(s, 0, 0))
			return -1;
	}
	return 0;
}


#endif
