/* Shared helpers of the format unit tests (test_format_*.c): a scratch
 * directory, a deterministic record generator whose records can be
 * regenerated to compare byte for byte, whole-file helpers for damaging
 * copies of a trace, and a reader pass that summarises what came back. */
#ifndef TEST_FORMAT_UTIL_H
#define TEST_FORMAT_UTIL_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "frec_reader.h"
#include "fr_family.h"
#include "frec_writer.h"

#define UNKNOWN_REC_TYPE 0x7777
#define GEN_MAX_REC 4096

static char tu_dir[512];

/* A fresh directory under $FLIGHTREC_TEST_TMP (or /tmp). */
static inline const char *tu_tmpdir(void)
{
	if (tu_dir[0])
		return tu_dir;
	const char *base = getenv("FLIGHTREC_TEST_TMP");
	if (!base || !*base)
		base = "/tmp";
	mkdir(base, 0755); /* ctest's tmp dir may not exist yet */
	snprintf(tu_dir, sizeof(tu_dir), "%s/frec-test-XXXXXX", base);
	if (!mkdtemp(tu_dir)) {
		fprintf(stderr, "mkdtemp %s: %s\n", tu_dir, strerror(errno));
		exit(2);
	}
	return tu_dir;
}

static inline const char *tu_path(const char *name)
{
	static char paths[8][600];
	static int next;
	char *p = paths[next++ % 8];
	snprintf(p, sizeof(paths[0]), "%s/%s", tu_tmpdir(), name);
	return p;
}

static inline uint64_t tu_hash(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

/* Record i of the test stream: a mix of every kind of record, fixed and
 * variable sized, with and without a timestamp, and of an unknown type.
 * Returns its size; *ts gets the timestamp to commit (0 for none). */
static inline uint32_t tu_gen_record(uint32_t i, uint8_t *buf, uint64_t *ts)
{
	uint64_t h = tu_hash(i + 1);
	uint64_t t = 1000000 + (uint64_t)i * 1000 + h % 997;
	uint32_t size = 0;
	memset(buf, 0, GEN_MAX_REC);
	switch (h % 8) {
	case 0: {
		struct fr_ev_cpu_sample e = { .c = { .ts_ns = t, .pid = 100 + i % 7,
			.tid = 1000 + i % 13 }, .cpu = i % 2, .stack_id = i % 50 };
		size = sizeof(e);
		e.c.h = (struct fr_rec_hdr){ size, FR_EV_CPU_SAMPLE, 0 };
		memcpy(buf, &e, size);
		break;
	}
	case 1: {
		struct fr_ev_syscall e = { .c = { .ts_ns = t, .pid = 100, .tid = 101 },
			.nr = i % 300, .ret = -(int64_t)(i % 5), .duration_ns = h % 100000,
			.fd = 3, .count = 4096, .sc_flags = 3 };
		size = sizeof(e);
		e.c.h = (struct fr_rec_hdr){ size, FR_EV_SYSCALL, 0 };
		memcpy(buf, &e, size);
		break;
	}
	case 2: {
		struct fr_ev_proc e = { .c = { .ts_ns = t, .pid = 200 + i, .tid = 200 + i },
			.ppid = 1, .exit_code = 0 };
		snprintf(e.comm, sizeof(e.comm), "proc%u", i);
		size = sizeof(e);
		e.c.h = (struct fr_rec_hdr){ size, (uint16_t)(FR_EV_PROC_FORK + i % 3), 0 };
		memcpy(buf, &e, size);
		break;
	}
	case 3: {
		uint32_t len = (uint32_t)(h >> 8) % 200;
		struct fr_rec_process p = { .ts_ns = t, .start_time_ns = t - 5,
			.pid = 300 + i, .ppid = 1, .cmdline_len = len };
		snprintf(p.comm, sizeof(p.comm), "python%u", i % 10);
		size = (uint32_t)FR_ALIGN8(sizeof(p) + len);
		p.h = (struct fr_rec_hdr){ size, FR_REC_PROCESS, 0 };
		memcpy(buf, &p, sizeof(p));
		for (uint32_t j = 0; j < len; j++)
			buf[sizeof(p) + j] = (j % 9 == 8) ? 0 : (uint8_t)('a' + (i + j) % 26);
		break;
	}
	case 4: {
		uint16_t n = (uint16_t)((h >> 8) % 48);
		struct fr_rec_stack s = { .stack_id = i + 1, .pid = 100,
			.n_kernel = (uint16_t)(n / 3), .n_user = (uint16_t)(n - n / 3) };
		size = (uint32_t)(sizeof(s) + 8u * n);
		s.h = (struct fr_rec_hdr){ size, FR_REC_STACK, 0 };
		memcpy(buf, &s, sizeof(s));
		for (uint16_t j = 0; j < n; j++) {
			uint64_t ip = 0x400000 + tu_hash(i * 64 + j) % 0x100000;
			memcpy(buf + sizeof(s) + 8u * j, &ip, 8);
		}
		t = 0; /* metadata without a time */
		break;
	}
	case 5: {
		/* a type no reader knows: must be skipped, not fatal */
		size = 8 + 8 * (uint32_t)((h >> 8) % 300);
		struct fr_rec_hdr rh = { size, UNKNOWN_REC_TYPE, 0 };
		memcpy(buf, &rh, sizeof(rh));
		for (uint32_t j = 8; j < size; j++)
			buf[j] = (uint8_t)(tu_hash(i * 4096 + j) & 0x0f);
		t = 0;
		break;
	}
	case 6: {
		struct fr_rec_clock c = { .mono_ns = t, .real_ns = t + 1700000000000000000ull };
		size = sizeof(c);
		c.h = (struct fr_rec_hdr){ size, FR_REC_CLOCK, 0 };
		memcpy(buf, &c, size);
		break;
	}
	default: {
		uint16_t len = (uint16_t)((h >> 8) % 120);
		struct fr_rec_mapping m = { .ts_ns = t, .pid = 100, .dso_id = i % 9,
			.start = 0x400000, .end = 0x500000, .pgoff = 0x1000,
			.build_id_len = 20, .path_len = len };
		size = (uint32_t)FR_ALIGN8(sizeof(m) + len);
		m.h = (struct fr_rec_hdr){ size, FR_REC_MAPPING, 0 };
		memcpy(buf, &m, sizeof(m));
		for (uint16_t j = 0; j < len; j++)
			buf[sizeof(m) + j] = (uint8_t)('/' + j % 40);
		break;
	}
	}
	*ts = t;
	return size;
}

/* Writes records 0..n-1 through one EVENTS builder.  close_clean: 1 writes
 * INDEX and END, 0 abandons (a crash). */
static inline int tu_write_trace(const char *path, int codec, uint32_t n,
			  size_t chunk_bytes, int close_clean)
{
	struct frec_writer_opts o;
	frec_writer_opts_default(&o);
	o.schema = fr_schema_table(&o.n_schema);
	o.codec = codec;
	o.chunk_bytes = chunk_bytes;
	struct frec_writer *w;
	struct frec_error err;
	const char *argv[] = { "python", "train.py", "--epochs", "3" };
	struct frec_file_info info = { .host = "node-7", .argv = argv, .argc = 4 };
	if (frec_writer_open(path, &info, &o, &w, &err) < 0) {
		char b[600];
		fprintf(stderr, "writer_open: %s\n", frec_error_str(&err, b, sizeof(b)));
		return -1;
	}
	struct frec_builder *b = frec_builder_new(w, FR_CHUNK_EVENTS);
	static uint8_t buf[GEN_MAX_REC];
	for (uint32_t i = 0; i < n; i++) {
		uint64_t ts;
		uint32_t size = tu_gen_record(i, buf, &ts);
		if (frec_builder_append(b, buf, size, ts) < 0)
			return -1;
	}
	frec_builder_free(b);
	if (!close_clean) {
		frec_writer_abandon(w);
		return 0;
	}
	struct fr_probe_stats ps = { .name = "cpu", .events = n, .drops = 2 };
	struct fr_end end = { .cpu_user_ns = 11, .cpu_sys_ns = 22 };
	return frec_writer_close(w, &end, &ps, 1, &err);
}

static inline uint8_t *tu_read_file(const char *path, size_t *len)
{
	*len = 0;
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
	if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return b;
}

static inline void tu_write_file(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f || (len && fwrite(buf, 1, len, f) != len)) {
		fprintf(stderr, "cannot write %s\n", path);
		exit(2);
	}
	fclose(f);
}

#define TU_MAX_CHUNKS 4096

struct tu_chunk {
	uint64_t offset, span, seq, first_ts, last_ts;
	uint16_t type;
	uint8_t codec;
	uint32_t count, records_iterated;
};

/* What one reader pass over a file returned. */
struct tu_summary {
	int open_rc;
	struct frec_error err;
	size_t n;
	struct tu_chunk c[TU_MAX_CHUNKS];
	uint64_t records;  /* in record chunks other than SCHEMA */
	size_t damage;
	struct frec_damage first_damage;
	int has_end, record_errors;
	uint64_t missing, gaps;
	uint32_t n_probes;
	struct fr_probe_stats probes[8];
	struct fr_end end;
};

static struct tu_summary tu_sum;

static inline const struct tu_summary *tu_scan(const char *path)
{
	struct tu_summary *s = &tu_sum;
	memset(s, 0, sizeof(*s));
	struct frec_reader *r;
	s->open_rc = frec_open(path, &r, &s->err);
	if (s->open_rc < 0)
		return s;
	struct frec_chunk c;
	while (frec_next_chunk(r, &c, &s->err) == 1) {
		struct tu_chunk *t = &s->c[s->n < TU_MAX_CHUNKS ? s->n++ : s->n - 1];
		t->offset = c.offset;
		t->span = 64 + FR_ALIGN8((uint64_t)c.hdr.stored_len);
		t->seq = c.hdr.seq;
		t->type = c.hdr.chunk_type;
		t->codec = c.hdr.codec;
		t->count = c.hdr.record_count;
		t->first_ts = c.hdr.first_ts_ns;
		t->last_ts = c.hdr.last_ts_ns;
		size_t cur = 0;
		const struct fr_rec_hdr *rec;
		int rc;
		while ((rc = frec_chunk_next_record(r, &c, &cur, &rec)) == 1) {
			t->records_iterated++;
			if (c.hdr.chunk_type != FR_CHUNK_SCHEMA)
				s->records++;
		}
		if (rc < 0)
			s->record_errors++;
	}
	s->damage = frec_damage_count(r);
	if (s->damage)
		s->first_damage = *frec_damage_at(r, 0);
	s->has_end = frec_has_end(r);
	if (s->has_end) {
		s->end = *frec_end(r);
		const struct fr_probe_stats *p = frec_end_probes(r, &s->n_probes);
		for (uint32_t i = 0; i < s->n_probes && i < 8; i++)
			s->probes[i] = p[i];
	}
	s->missing = frec_chunks_missing(r);
	s->gaps = frec_seq_gaps(r);
	frec_close(r);
	return s;
}

#endif
