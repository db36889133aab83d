/* gen_ranks: synthetic but format-valid traces of a data-parallel job with
 * many ranks, for measuring how the analyzer grows with the rank count
 * (tests/bench/bench_ranks.py).  Not a workload to record and not a test.
 *
 *   gen_ranks --ranks N --ranks-per-node R --steps S --straggler RANK --out DIR
 *             [--late-ms 10] [--compute-ms 40] [--seed 1] [--pids job|node]
 *
 * writes DIR/node-NNN.frec, one file per node (N/R files), each with R
 * processes (PROC_ENV RANK=, LOCAL_RANK=, WORLD_SIZE=).  Each rank makes one
 * ncclCommInitRank (uid_hash shared, nranks = N), then S steps of compute
 * (CPU samples every 10 ms on a forward then a backward stack, jittered per
 * rank and step) and one allreduce.  An allreduce releases every rank when
 * the last has entered; each leaves after a small wake-up latency.  The
 * straggler (--straggler -1: none) loads its batch for --late-ms longer each
 * step (samples on a load_batch stack), so it enters every collective late
 * by that much.  --pids node numbers each node's processes from 10000
 * again, as containers with a PID namespace per node do (default job:
 * pids unique across the job).  Each node has its own monotonic origin and a realtime clock
 * off by a node-specific skew; realtime anchors are written every second.
 *
 * The job is simulated once in true time for all ranks (three doubles per
 * rank and step), then the files are written one node at a time, so memory
 * is bounded by N * S and only one writer is open.  Deterministic: one
 * seeded PRNG, drawn in a fixed order, and a fixed file header: the same
 * arguments give the same bytes. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "frec_writer.h"
#include "fr_family.h"

#define MS 1000000.0
#define EPOCH_NS 1714564800000000000ull
#define SAMPLE_PERIOD_NS (10 * MS)
#define UID_HASH 0x9e3779b97f4a7c15ull

/* symbols of /opt/train/train, mapped at 0x400000 (offset 0) */
#define IP_MAIN 0x401010ull
#define IP_FORWARD 0x402010ull
#define IP_BACKWARD 0x403010ull
#define IP_LOAD_BATCH 0x404010ull
enum { STACK_FORWARD, STACK_BACKWARD, STACK_LOAD_BATCH, STACKS_PER_RANK };

struct job {
	int ranks, ranks_per_node, steps, straggler;
	double late_ms, compute_ms, jitter_ms;
	unsigned seed;
	const char *out_dir;
};

/* per rank and step, true ns since the job's start */
struct rank_step {
	double start, entry, exit;
};

static uint64_t rng_state;
static double rnd(void) /* [0, 1) */
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(rng_state >> 11) / 9007199254740992.0;
}

static struct rank_step *simulate(const struct job *j)
{
	size_t n = (size_t)j->ranks * (size_t)j->steps;
	struct rank_step *rs = calloc(n, sizeof(*rs));
	double *t = calloc((size_t)j->ranks, sizeof(*t));
	if (!rs || !t) {
		free(rs);
		free(t);
		return NULL;
	}
	for (int r = 0; r < j->ranks; r++)
		t[r] = 50 * MS + rnd() * MS;
	for (int s = 0; s < j->steps; s++) {
		double release = 0;
		for (int r = 0; r < j->ranks; r++) {
			struct rank_step *x = &rs[(size_t)r * j->steps + s];
			double compute = j->compute_ms * MS + (2 * rnd() - 1) * j->jitter_ms * MS;
			if (r == j->straggler)
				compute += j->late_ms * MS;
			x->start = t[r];
			x->entry = t[r] + compute;
			if (x->entry > release)
				release = x->entry;
		}
		release += 0.3 * MS; /* the transfer */
		for (int r = 0; r < j->ranks; r++) {
			struct rank_step *x = &rs[(size_t)r * j->steps + s];
			x->exit = release + rnd() * 0.05 * MS; /* wake-up latency */
			t[r] = x->exit;
		}
	}
	free(t);
	return rs;
}

struct node_file {
	struct frec_writer *w;
	struct frec_builder *ev, *meta;
	uint64_t mono_origin;  /* node mono = true ns + mono_origin */
	int64_t skew_ns;       /* node realtime error */
	uint64_t next_anchor;  /* node mono of the next clock anchor */
	uint64_t cpu_samples;
};

static int put(struct frec_builder *b, void *rec, uint32_t size, uint16_t type, uint64_t ts_ns)
{
	struct fr_rec_hdr h = { .size = size, .type = type, .flags = 0 };
	memcpy(rec, &h, sizeof(h));
	return frec_builder_append(b, rec, size, ts_ns);
}

/* A record with a variable tail: fixed part, then len bytes, padded to 8. */
static int put_tail(struct frec_builder *b, void *fixed, uint32_t fixed_size, const void *tail,
		    uint32_t len, uint16_t type, uint64_t ts_ns)
{
	uint32_t size = FR_ALIGN8(fixed_size + len);
	uint8_t *buf = calloc(1, size);
	if (!buf)
		return -1;
	struct fr_rec_hdr h = { .size = size, .type = type, .flags = 0 };
	memcpy(fixed, &h, sizeof(h));
	memcpy(buf, fixed, fixed_size);
	memcpy(buf + fixed_size, tail, len);
	int rc = frec_builder_append(b, buf, size, ts_ns);
	free(buf);
	return rc;
}

static int put_dso(struct frec_builder *b)
{
	static const struct { uint64_t offset; uint32_t size; const char *name; } syms[] = {
		{ 0x1000, 0x100, "main" }, { 0x2000, 0x100, "forward" },
		{ 0x3000, 0x100, "backward" }, { 0x4000, 0x100, "load_batch" },
	};
	enum { NSYMS = sizeof(syms) / sizeof(syms[0]) };
	static const char path[] = "/opt/train/train";
	uint32_t path_len = sizeof(path) - 1, strtab_len = 0;
	for (int i = 0; i < NSYMS; i++)
		strtab_len += (uint32_t)strlen(syms[i].name) + 1;
	uint32_t size = FR_ALIGN8((uint32_t)(sizeof(struct fr_rec_dso) + FR_ALIGN8(path_len) +
					     NSYMS * sizeof(struct fr_dso_sym) + strtab_len));
	uint8_t *buf = calloc(1, size);
	if (!buf)
		return -1;
	struct fr_rec_dso r = { .dso_id = 1, .nsyms = NSYMS, .strtab_len = strtab_len,
				.path_len = (uint16_t)path_len, .kind = 0 };
	memcpy(buf, &r, sizeof(r));
	uint8_t *p = buf + sizeof(r);
	memcpy(p, path, path_len);
	p += FR_ALIGN8(path_len);
	char *strtab = (char *)p + NSYMS * sizeof(struct fr_dso_sym);
	uint32_t name_off = 0;
	for (int i = 0; i < NSYMS; i++) {
		struct fr_dso_sym sym = { syms[i].offset, syms[i].size, name_off };
		memcpy(p + i * sizeof(sym), &sym, sizeof(sym));
		memcpy(strtab + name_off, syms[i].name, strlen(syms[i].name) + 1);
		name_off += (uint32_t)strlen(syms[i].name) + 1;
	}
	int rc = put(b, buf, size, FR_REC_DSO, 0);
	free(buf);
	return rc;
}

static int pids_per_node; /* 0: unique across the job; else ranks per node */
static uint32_t rank_pid(int rank)
{
	return 10000u + (uint32_t)(pids_per_node ? rank % pids_per_node : rank);
}
static uint64_t rank_comm(int rank) { return 0x7f3a00a00000ull + 0x1000ull * (uint64_t)rank; }
static uint32_t stack_id(int local, int which) { return 1 + (uint32_t)(local * STACKS_PER_RANK + which); }

/* Processes, their mappings, launcher environment and stacks. */
static int put_rank_meta(const struct job *j, struct node_file *f, int rank, int local)
{
	uint64_t ts = f->mono_origin + (uint64_t)(10 * MS);
	uint32_t pid = rank_pid(rank);
	static const char cmdline[] = "python\0train.py\0--steps\0" "100";
	struct fr_rec_process p = { .ts_ns = ts, .start_time_ns = f->mono_origin, .pid = pid,
				    .ppid = 1, .cmdline_len = sizeof(cmdline) };
	memcpy(p.comm, "python", 6);
	struct fr_rec_thread th = { .ts_ns = ts, .pid = pid, .tid = pid };
	memcpy(th.comm, "python", 6);
	static const char map_path[] = "/opt/train/train";
	struct fr_rec_mapping m = { .ts_ns = ts, .pid = pid, .dso_id = 1, .start = 0x400000,
				    .end = 0x500000, .pgoff = 0,
				    .path_len = (uint16_t)(sizeof(map_path) - 1) };
	char env[160];
	int n = snprintf(env, sizeof(env), "RANK=%d%cLOCAL_RANK=%d%cWORLD_SIZE=%d%cLOCAL_WORLD_SIZE=%d"
			 "%cMASTER_ADDR=10.0.0.1", rank, 0, local, 0, j->ranks, 0, j->ranks_per_node, 0);
	struct fr_rec_proc_env e = { .ts_ns = ts, .pid = pid, .len = (uint32_t)n + 1 };
	if (put_tail(f->meta, &p, sizeof(p), cmdline, sizeof(cmdline), FR_REC_PROCESS, ts) ||
	    put(f->meta, &th, sizeof(th), FR_REC_THREAD, ts) ||
	    put_tail(f->meta, &m, sizeof(m), map_path, sizeof(map_path) - 1, FR_REC_MAPPING, ts) ||
	    put_tail(f->meta, &e, sizeof(e), env, (uint32_t)n + 1, FR_REC_PROC_ENV, ts))
		return -1;
	static const uint64_t leaf[STACKS_PER_RANK] = { IP_FORWARD, IP_BACKWARD, IP_LOAD_BATCH };
	for (int s = 0; s < STACKS_PER_RANK; s++) {
		uint8_t buf[sizeof(struct fr_rec_stack) + 16];
		struct fr_rec_stack st = { .stack_id = stack_id(local, s), .pid = pid, .n_kernel = 0,
					   .n_user = 2 };
		uint64_t ips[2] = { leaf[s], IP_MAIN };
		memcpy(buf, &st, sizeof(st));
		memcpy(buf + sizeof(st), ips, sizeof(ips));
		if (put(f->ev, buf, sizeof(buf), FR_REC_STACK, 0))
			return -1;
	}
	return 0;
}

static int put_nccl(struct node_file *f, int rank, uint16_t func, double true_ns, double dur_ns,
		    uint64_t count, int32_t init_rank, int32_t nranks, uint64_t uid_hash)
{
	uint32_t pid = rank_pid(rank);
	uint64_t ts = f->mono_origin + (uint64_t)true_ns;
	struct fr_ev_nccl ev = { .c = { .ts_ns = ts, .pid = pid, .tid = pid }, .func = func,
				 .duration_ns = (uint64_t)dur_ns, .comm = rank_comm(rank), .count = count,
				 .datatype = 7 /* ncclFloat32 */, .peer = -1, .rank = init_rank,
				 .nranks = nranks, .stream = 0x5600000ull + (uint64_t)rank,
				 .uid_hash = uid_hash };
	return put(f->ev, &ev, sizeof(ev), FR_EV_NCCL, ts);
}

static int put_sample(struct node_file *f, int rank, int local, double true_ns, int which)
{
	uint32_t pid = rank_pid(rank);
	uint64_t ts = f->mono_origin + (uint64_t)true_ns;
	struct fr_ev_cpu_sample ev = { .c = { .ts_ns = ts, .pid = pid, .tid = pid },
				       .cpu = (uint32_t)local, .stack_id = stack_id(local, which) };
	f->cpu_samples++;
	return put(f->ev, &ev, sizeof(ev), FR_EV_CPU_SAMPLE, ts);
}

/* Realtime anchors every second up to node mono upto, with this node's error. */
static int put_anchors(struct node_file *f, uint64_t upto)
{
	for (; f->next_anchor <= upto; f->next_anchor += 1000000000ull) {
		uint64_t x = f->next_anchor;
		struct fr_rec_clock c = { .mono_ns = x,
					  .real_ns = EPOCH_NS + (x - f->mono_origin) + (uint64_t)f->skew_ns };
		if (put(f->meta, &c, sizeof(c), FR_REC_CLOCK, x))
			return -1;
	}
	return 0;
}

static int write_node(const struct job *j, const struct rank_step *rs, int node, int64_t skew_ns)
{
	char path[4096], host[32];
	snprintf(path, sizeof(path), "%s/node-%03d.frec", j->out_dir, node);
	snprintf(host, sizeof(host), "node-%03d", node);
	struct node_file f = { .mono_origin = 3000000000ull * (uint64_t)(node + 1) + 777777ull * (uint64_t)node,
			       .skew_ns = skew_ns };
	f.next_anchor = f.mono_origin;
	static const char *const argv[] = { "flightrec", "record", "--probes", "cpu,nccl" };
	/* a fixed recorder pid, CPU count and kernel: the same bytes on any host */
	static const struct fr_file_hdr like = { .recorder_pid = 4242, .n_cpus = 8,
						 .kernel_release = "6.8.0" };
	struct frec_file_info info = { .host = host, .argv = argv, .argc = 4,
				       .start_mono_ns = f.mono_origin,
				       .start_real_ns = EPOCH_NS + (uint64_t)skew_ns, .like = &like };
	struct frec_writer_opts opts;
	frec_writer_opts_default(&opts);
	opts.schema = fr_schema_table(&opts.n_schema);
	struct frec_error err;
	if (frec_writer_open(path, &info, &opts, &f.w, &err)) {
		fprintf(stderr, "gen_ranks: cannot write %s: %s\n", path, err.what);
		return -1;
	}
	f.ev = frec_builder_new(f.w, FR_CHUNK_EVENTS);
	f.meta = frec_builder_new(f.w, FR_CHUNK_META);
	int rc = !f.ev || !f.meta || put_dso(f.meta);
	int first = node * j->ranks_per_node, R = j->ranks_per_node, S = j->steps;
	for (int l = 0; l < R && !rc; l++)
		rc = put_rank_meta(j, &f, first + l, l);
	/* ncclCommInitRank 5 ms before the first step */
	for (int l = 0; l < R && !rc; l++) {
		const struct rank_step *x = &rs[(size_t)(first + l) * S];
		rc = put_nccl(&f, first + l, FR_NCCL_COMM_INIT_RANK, x->start - 5 * MS, 2 * MS, 0,
			      first + l, j->ranks, UID_HASH);
	}
	uint64_t last_mono = f.mono_origin;
	for (int s = 0; s < S && !rc; s++) {
		for (int l = 0; l < R && !rc; l++) {
			int r = first + l;
			const struct rank_step *x = &rs[(size_t)r * S + s];
			double late = r == j->straggler ? j->late_ms * MS : 0;
			double half = late + (x->entry - x->start - late) / 2;
			for (double at = 5 * MS; x->start + at < x->entry && !rc; at += SAMPLE_PERIOD_NS)
				rc = put_sample(&f, r, l, x->start + at,
						at < late ? STACK_LOAD_BATCH :
						at < half ? STACK_FORWARD : STACK_BACKWARD);
		}
		for (int l = 0; l < R && !rc; l++) {
			int r = first + l;
			const struct rank_step *x = &rs[(size_t)r * S + s];
			rc = put_nccl(&f, r, FR_NCCL_ALL_REDUCE, x->entry, x->exit - x->entry, 1u << 22,
				      -1, -1, 0);
			if (f.mono_origin + (uint64_t)x->exit > last_mono)
				last_mono = f.mono_origin + (uint64_t)x->exit;
		}
		if (!rc)
			rc = put_anchors(&f, last_mono);
	}
	if (!rc)
		rc = put_anchors(&f, last_mono + 1000000000ull);
	frec_builder_free(f.ev);
	frec_builder_free(f.meta);
	if (rc) {
		fprintf(stderr, "gen_ranks: cannot append to %s\n", path);
		frec_writer_abandon(f.w);
		return -1;
	}
	struct fr_end end = { .end_mono_ns = last_mono + 1000000ull,
			      .end_real_ns = EPOCH_NS + (last_mono + 1000000ull - f.mono_origin) +
					     (uint64_t)skew_ns,
			      .cpu_user_ns = 30000000, .cpu_sys_ns = 10000000 };
	struct fr_probe_stats probes[2] = { { .events = f.cpu_samples }, { .events = 0 } };
	strcpy(probes[0].name, "cpu");
	strcpy(probes[1].name, "nccl");
	probes[1].events = (uint64_t)R * (uint64_t)(S + 1);
	if (frec_writer_close(f.w, &end, probes, 2, &err)) {
		fprintf(stderr, "gen_ranks: cannot close %s: %s\n", path, err.what);
		return -1;
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: gen_ranks --ranks N --ranks-per-node R --steps S --straggler RANK "
			"--out DIR\n                 [--late-ms 10] [--compute-ms 40] [--seed 1] "
			"[--pids job|node]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct job j = { .ranks = 64, .ranks_per_node = 8, .steps = 100, .straggler = -1,
			 .late_ms = 10, .compute_ms = 40, .jitter_ms = 1, .seed = 1 };
	for (int i = 1; i < argc; i += 2) { /* every option takes a value */
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			usage();
		if (!strcmp(a, "--ranks"))
			j.ranks = atoi(v);
		else if (!strcmp(a, "--ranks-per-node"))
			j.ranks_per_node = atoi(v);
		else if (!strcmp(a, "--steps"))
			j.steps = atoi(v);
		else if (!strcmp(a, "--straggler"))
			j.straggler = atoi(v);
		else if (!strcmp(a, "--late-ms"))
			j.late_ms = atof(v);
		else if (!strcmp(a, "--compute-ms"))
			j.compute_ms = atof(v);
		else if (!strcmp(a, "--seed"))
			j.seed = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(a, "--out"))
			j.out_dir = v;
		else if (!strcmp(a, "--pids") && (!strcmp(v, "job") || !strcmp(v, "node")))
			pids_per_node = !strcmp(v, "node");
		else
			usage();
	}
	if (pids_per_node)
		pids_per_node = j.ranks_per_node;
	if (!j.out_dir || j.ranks < 1 || j.ranks_per_node < 1 || j.steps < 1 ||
	    j.ranks % j.ranks_per_node || j.straggler >= j.ranks || j.ranks_per_node > 4096) {
		fprintf(stderr, "gen_ranks: --ranks must be a multiple of --ranks-per-node, "
				"--straggler below --ranks (-1: none), --out given\n");
		usage();
	}
	if (mkdir(j.out_dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "gen_ranks: cannot create %s: %s\n", j.out_dir, strerror(errno));
		return 1;
	}
	rng_state = j.seed * 2654435761ull + 1;
	struct rank_step *rs = simulate(&j);
	if (!rs) {
		fprintf(stderr, "gen_ranks: out of memory for %d ranks x %d steps\n", j.ranks, j.steps);
		return 1;
	}
	int nodes = j.ranks / j.ranks_per_node;
	for (int n = 0; n < nodes; n++) {
		/* node 0 keeps true time; the others are off by up to +-200 ms */
		int64_t skew_ns = n ? (int64_t)((2 * rnd() - 1) * 200 * MS) : 0;
		if (write_node(&j, rs, n, skew_ns)) {
			free(rs);
			return 1;
		}
	}
	free(rs);
	printf("gen_ranks: %d ranks on %d nodes, %d steps, straggler %d: %s/node-*.frec\n", j.ranks,
	       nodes, j.steps, j.straggler, j.out_dir);
	return 0;
}
