/* Shared bits of the archive tests (test_analyzer_archive.c,
 * test_analyzer_archive_hostile.c): a two-node job written with the synth
 * helpers (two ranks per node, one of them slow, NCCL collectives, CUDA
 * allocations, CPU samples, clock anchors), tars built with libarchive's
 * writer member by member (so a test can make any hostile archive), and a
 * command run with its output and diagnostics captured.  Not a test itself. */
#ifndef FLIGHTREC_TEST_ANALYZER_ARCHIVE_UTIL_H
#define FLIGHTREC_TEST_ANALYZER_ARCHIVE_UTIL_H

#include "test_analyzer_run.h"
#include "test_analyzer_synth.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define AJ_EPOCH_NS 1714564800000000000ull
#define AJ_MS 1000000ull

/* ---- the job ------------------------------------------------------------ */

static inline void aj_env(struct synth *s, uint32_t pid, int rank, int local, int world)
{
	char env[160];
	int n = snprintf(env, sizeof(env), "RANK=%d%cLOCAL_RANK=%d%cWORLD_SIZE=%d%cHOME=/home/alice",
			 rank, 0, local, 0, world, 0);
	uint32_t len = (uint32_t)n + 1;
	uint32_t size = FR_ALIGN8((uint32_t)sizeof(struct fr_rec_proc_env) + len);
	uint8_t buf[256] = { 0 };
	struct fr_rec_proc_env r = { .ts_ns = s->ts_ns, .pid = pid, .len = len };
	memcpy(buf, &r, sizeof(r));
	memcpy(buf + sizeof(r), env, len);
	synth_raw(s->meta, buf, size, FR_REC_PROC_ENV, s->ts_ns);
}

static inline void aj_nccl(struct synth *s, uint32_t pid, uint16_t func, uint64_t ts, uint64_t dur,
			   uint64_t comm, uint64_t count, int rank, int nranks)
{
	struct fr_ev_nccl ev = { .c = { .ts_ns = ts, .pid = pid, .tid = pid }, .func = func,
				 .duration_ns = dur, .comm = comm, .count = count, .peer = -1,
				 .rank = rank, .nranks = nranks, .uid_hash = 0x1234abcd5678ef01ull };
	synth_raw(s->ev, &ev, sizeof(ev), FR_EV_NCCL, ts);
}

/* node<N>.frec in dir, N = 0, 1 (hosts node-a, node-b); ranks 0-1 on node
 * 0, 2-3 on node 1; rank 3 computes 8 ms longer every step. */
static inline int aj_write_job(const char *dir, char paths[2][512])
{
	static const struct synth_sym syms[] = {
		{ 0x1000, 0x100, "main" }, { 0x2000, 0x100, "compute_step" },
		{ 0x3000, 0x100, "slow_data_loader" },
	};
	struct synth node[2];
	uint64_t origin[2] = { 5000000000ull, 9000777777ull }, last[2] = { 0, 0 };
	for (int n = 0; n < 2; n++) {
		static const char *const argv[] = { "torchrun", "--nproc", "2", "/home/alice/train.py" };
		char host[16];
		snprintf(paths[n], 512, "%.400s/node%d.frec", dir, n);
		snprintf(host, sizeof(host), "node-%c", 'a' + n);
		struct frec_file_info info = { .host = host, .argv = argv, .argc = 4,
					       .start_mono_ns = origin[n], .start_real_ns = AJ_EPOCH_NS };
		struct frec_writer_opts opts = { .codec = FR_CODEC_ZSTD, .level = 1 };
		opts.schema = fr_schema_table(&opts.n_schema);
		struct frec_error err;
		struct synth *s = &node[n];
		memset(s, 0, sizeof(*s));
		s->ts_ns = origin[n];
		if (frec_writer_open(paths[n], &info, &opts, &s->w, &err))
			return -1;
		s->ev = frec_builder_new(s->w, FR_CHUNK_EVENTS);
		s->meta = frec_builder_new(s->w, FR_CHUNK_META);
		synth_dso(s, 1, 0, "/home/alice/venv/bin/train", syms, 3);
		for (int l = 0; l < 2; l++) {
			uint32_t pid = 1000 + (uint32_t)(n * 100 + l);
			synth_process(s, pid, 1, "train", "python /home/alice/train.py --steps 20");
			synth_mapping(s, pid, 0x400000, 0x500000, 0, 1, "/home/alice/venv/bin/train");
			aj_env(s, pid, n * 2 + l, l, 4);
			uint64_t compute[] = { 0x402010, 0x401010 }, slow[] = { 0x403010, 0x401010 };
			synth_stack(s, 1 + 2 * (uint32_t)l, pid, compute, 0, 2);
			synth_stack(s, 2 + 2 * (uint32_t)l, pid, slow, 0, 2);
			aj_nccl(s, pid, FR_NCCL_COMM_INIT_RANK, origin[n] + 40 * AJ_MS, 2 * AJ_MS,
				0x55000000ull + (uint64_t)(n * 2 + l), 0, n * 2 + l, 4);
			for (int k = 0; k < 3; k++) /* 64, 128, 192 MiB, the first freed */
				synth_cuda(s, (struct fr_ev_cuda){
					.c = { .ts_ns = origin[n] + (45 + (uint64_t)k) * AJ_MS, .pid = pid },
					.func = k == 2 ? FR_CUDA_FREE : FR_CUDA_MALLOC, .stack_id = 1 + 2 * (uint32_t)l,
					.duration_ns = 1000, .ptr = 0x7f0000000000ull + (k == 2 ? 0 : (uint64_t)k << 28),
					.bytes = k == 2 ? 0 : (64ull << 20) * (uint64_t)(k + 1) });
		}
	}
	uint64_t t[4] = { 50 * AJ_MS, 50 * AJ_MS + 300000, 50 * AJ_MS + 600000, 50 * AJ_MS + 100000 };
	for (int step = 0; step < 20; step++) {
		uint64_t release = 0;
		for (int r = 0; r < 4; r++) {
			int n = r / 2;
			uint32_t pid = 1000 + (uint32_t)(n * 100 + r % 2);
			uint64_t compute = 30 * AJ_MS + (uint64_t)((step * 7 + r * 3) % 5) * 100000;
			uint64_t slow = r == 3 ? 8 * AJ_MS : 0;
			for (uint64_t x = AJ_MS; x < slow + compute; x += 5 * AJ_MS) {
				struct fr_ev_cpu_sample ev = {
					.c = { .ts_ns = origin[n] + t[r] + x, .pid = pid, .tid = pid },
					.stack_id = (x < slow ? 2 : 1) + 2 * (uint32_t)(r % 2) };
				synth_raw(node[n].ev, &ev, sizeof(ev), FR_EV_CPU_SAMPLE, ev.c.ts_ns);
			}
			t[r] += slow + compute;
			if (t[r] > release)
				release = t[r];
		}
		release += 300000;
		for (int r = 0; r < 4; r++) {
			int n = r / 2;
			uint32_t pid = 1000 + (uint32_t)(n * 100 + r % 2);
			uint64_t exit = release + 20000 * (uint64_t)r;
			aj_nccl(&node[n], pid, FR_NCCL_ALL_REDUCE, origin[n] + t[r], exit - t[r],
				0x55000000ull + (uint64_t)r, 1u << 20, -1, -1);
			t[r] = exit;
			if (origin[n] + exit > last[n])
				last[n] = origin[n] + exit;
		}
	}
	for (int n = 0; n < 2; n++) {
		struct synth *s = &node[n];
		for (uint64_t x = origin[n]; x <= last[n] + 1000000000ull; x += 1000000000ull) {
			struct fr_rec_clock c = { .mono_ns = x, .real_ns = AJ_EPOCH_NS + (x - origin[n]) };
			synth_raw(s->meta, &c, sizeof(c), FR_REC_CLOCK, x);
		}
		s->ts_ns = last[n];
		if (synth_close(s, 100, 0))
			return -1;
	}
	return 0;
}

/* ---- tars ----------------------------------------------------------------- */

struct aj_member {
	const char *name;
	int type;              /* AE_IFREG (0: the same), AE_IFLNK, AE_IFCHR, AE_IFIFO, ... */
	const void *data;      /* regular files: size bytes (NULL: zeros) */
	size_t size;
	const char *link;      /* AE_IFLNK: the target; hard: a hard link to it */
	int hard;
};

enum aj_filter { AJ_NONE, AJ_GZIP, AJ_ZSTD };

/* A pax tar of the members at path; 0 or -1. */
static inline int aj_write_tar(const char *path, enum aj_filter filter,
			       const struct aj_member *m, size_t n)
{
	struct archive *a = archive_write_new();
	if (filter == AJ_GZIP)
		archive_write_add_filter_gzip(a);
	else if (filter == AJ_ZSTD)
		archive_write_add_filter_zstd(a);
	archive_write_set_format_pax_restricted(a);
	archive_write_set_bytes_in_last_block(a, 1);
	if (archive_write_open_filename(a, path) != ARCHIVE_OK) {
		archive_write_free(a);
		return -1;
	}
	static const uint8_t zeros[65536];
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		struct archive_entry *e = archive_entry_new();
		int type = m[i].type ? m[i].type : (int)AE_IFREG;
		archive_entry_set_pathname(e, m[i].name);
		archive_entry_set_filetype(e, (unsigned)type);
		archive_entry_set_perm(e, 0644);
		archive_entry_set_mtime(e, 1714564800, 0);
		if (type == AE_IFLNK)
			archive_entry_set_symlink(e, m[i].link);
		if (m[i].hard)
			archive_entry_set_hardlink(e, m[i].link);
		if (type == AE_IFCHR)
			archive_entry_set_rdev(e, makedev(1, 3));
		size_t size = type == AE_IFREG && !m[i].hard ? m[i].size : 0;
		archive_entry_set_size(e, (la_int64_t)size);
		rc = archive_write_header(a, e) == ARCHIVE_OK ? 0 : -1;
		for (size_t off = 0; !rc && off < size;) {
			size_t k = size - off < sizeof(zeros) ? size - off : sizeof(zeros);
			const void *p = m[i].data ? (const uint8_t *)m[i].data + off : zeros;
			if (archive_write_data(a, p, k) != (la_ssize_t)k)
				rc = -1;
			off += k;
		}
		archive_entry_free(e);
	}
	if (archive_write_close(a) != ARCHIVE_OK)
		rc = -1;
	archive_write_free(a);
	return rc;
}

/* The bytes of a file (malloc'd, *len set); NULL when unreadable. */
static inline uint8_t *aj_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	*len = 0;
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* ---- commands --------------------------------------------------------------- */

static inline size_t aj_lines(const char *s)
{
	size_t n = 0;
	for (; s && *s; s++)
		n += *s == '\n';
	return n;
}

/* text with every occurrence of from replaced by to (malloc'd). */
static inline char *aj_replace(const char *text, const char *from, const char *to)
{
	size_t fl = strlen(from), tl = strlen(to), n = 0;
	for (const char *p = text; (p = strstr(p, from)); p += fl)
		n++;
	char *out = malloc(strlen(text) + n * (tl > fl ? tl - fl : 0) + 1), *w = out;
	for (const char *p = text, *q; ; p = q + fl) {
		q = strstr(p, from);
		size_t k = q ? (size_t)(q - p) : strlen(p);
		memcpy(w, p, k);
		w += k;
		if (!q)
			break;
		memcpy(w, to, tl);
		w += tl;
	}
	*w = '\0';
	return out;
}

/* Entries in dir besides . and ..; -1 when it cannot be read. */
static inline int aj_dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

/* Open descriptors of this process. */
static inline int aj_open_fds(void)
{
	return aj_dir_entries("/proc/self/fd");
}

/* A fresh directory under $FLIGHTREC_TEST_TMP (or /tmp) named after tag. */
static inline void aj_fresh_dir(const char *tag, char *buf, size_t len)
{
	char base[512];
	synth_path("", base, sizeof(base));
	snprintf(buf, len, "%.400s%.40s-XXXXXX", base, tag);
	if (!mkdtemp(buf))
		fprintf(stderr, "mkdtemp %s failed\n", buf);
}

#endif
