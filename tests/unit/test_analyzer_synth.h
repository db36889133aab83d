/* Synthetic traces for the analyzer tests: small helpers over the writer API
 * that append one well-formed record each (and a raw escape hatch for
 * hostile ones).  Not a test itself (no test_*.c name). */
#ifndef FLIGHTREC_TEST_ANALYZER_SYNTH_H
#define FLIGHTREC_TEST_ANALYZER_SYNTH_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "frec_writer.h"
#include "fr_family.h"

struct synth {
	struct frec_writer *w;
	struct frec_builder *ev;   /* EVENTS chunks */
	struct frec_builder *meta; /* META chunks */
	uint64_t ts_ns;
};

struct synth_sym {
	uint64_t offset;
	uint32_t size;
	const char *name;
};

/* A path for a test file under $FLIGHTREC_TEST_TMP (or /tmp). */
static inline const char *synth_path(const char *name, char *buf, size_t len)
{
	const char *dir = getenv("FLIGHTREC_TEST_TMP");
	if (!dir || !dir[0])
		dir = "/tmp";
	mkdir(dir, 0755);
	snprintf(buf, len, "%s/%s", dir, name);
	return buf;
}

static inline int synth_open(struct synth *s, const char *path)
{
	static const char *const argv[] = { "python", "train.py", "--epochs", "1" };
	struct frec_file_info info = {
		.host = "node-a", .argv = argv, .argc = 4,
		.start_mono_ns = 1000000000ull, .start_real_ns = 1714564800123000000ull,
	};
	struct frec_writer_opts opts = { .codec = FR_CODEC_ZSTD, .level = 1 };
	opts.schema = fr_schema_table(&opts.n_schema);
	struct frec_error err;
	memset(s, 0, sizeof(*s));
	s->ts_ns = 1000000000ull;
	if (frec_writer_open(path, &info, &opts, &s->w, &err)) {
		fprintf(stderr, "synth_open %s: %s\n", path, err.what);
		return -1;
	}
	s->ev = frec_builder_new(s->w, FR_CHUNK_EVENTS);
	s->meta = frec_builder_new(s->w, FR_CHUNK_META);
	return s->ev && s->meta ? 0 : -1;
}

/* Appends size bytes of rec (its header's size and type filled here). */
static inline void synth_raw(struct frec_builder *b, void *rec, uint32_t size, uint16_t type,
			     uint64_t ts_ns)
{
	struct fr_rec_hdr h = { .size = size, .type = type, .flags = 0 };
	memcpy(rec, &h, sizeof(h));
	if (frec_builder_append(b, rec, size, ts_ns))
		fprintf(stderr, "synth: append failed\n");
}

static inline void synth_process(struct synth *s, uint32_t pid, uint32_t ppid, const char *comm,
				 const char *cmdline /* args separated by spaces */)
{
	size_t len = strlen(cmdline) + 1;
	uint32_t size = FR_ALIGN8((uint32_t)(sizeof(struct fr_rec_process) + len));
	uint8_t *buf = calloc(1, size);
	struct fr_rec_process r = { .ts_ns = s->ts_ns, .pid = pid, .ppid = ppid,
				    .cmdline_len = (uint32_t)len };
	memcpy(r.comm, comm, strlen(comm) < sizeof(r.comm) ? strlen(comm) : sizeof(r.comm));
	memcpy(buf, &r, sizeof(r));
	memcpy(buf + sizeof(r), cmdline, len);
	for (size_t i = 0; i < len; i++)
		if (buf[sizeof(r) + i] == ' ')
			buf[sizeof(r) + i] = '\0';
	synth_raw(s->meta, buf, size, FR_REC_PROCESS, s->ts_ns);
	free(buf);
}

static inline void synth_thread(struct synth *s, uint32_t pid, uint32_t tid, const char *comm)
{
	struct fr_rec_thread r = { .ts_ns = s->ts_ns, .pid = pid, .tid = tid };
	memcpy(r.comm, comm, strlen(comm) < sizeof(r.comm) ? strlen(comm) : sizeof(r.comm));
	synth_raw(s->meta, &r, sizeof(r), FR_REC_THREAD, s->ts_ns);
}

static inline void synth_mapping(struct synth *s, uint32_t pid, uint64_t start, uint64_t end,
				 uint64_t pgoff, uint32_t dso_id, const char *path)
{
	size_t len = strlen(path);
	uint32_t size = FR_ALIGN8((uint32_t)(sizeof(struct fr_rec_mapping) + len));
	uint8_t *buf = calloc(1, size);
	struct fr_rec_mapping r = { .ts_ns = s->ts_ns, .pid = pid, .dso_id = dso_id,
				    .start = start, .end = end, .pgoff = pgoff,
				    .path_len = (uint16_t)len };
	memcpy(buf, &r, sizeof(r));
	memcpy(buf + sizeof(r), path, len);
	synth_raw(s->meta, buf, size, FR_REC_MAPPING, s->ts_ns);
	free(buf);
}

static inline void synth_dso(struct synth *s, uint32_t dso_id, uint8_t kind, const char *path,
			     const struct synth_sym *syms, uint32_t nsyms)
{
	size_t path_len = strlen(path);
	uint32_t strtab_len = 0;
	for (uint32_t i = 0; i < nsyms; i++)
		strtab_len += (uint32_t)strlen(syms[i].name) + 1;
	uint32_t size = (uint32_t)(sizeof(struct fr_rec_dso) + FR_ALIGN8(path_len) +
				   nsyms * sizeof(struct fr_dso_sym));
	size = FR_ALIGN8(size + strtab_len);
	uint8_t *buf = calloc(1, size);
	struct fr_rec_dso r = { .dso_id = dso_id, .nsyms = nsyms, .strtab_len = strtab_len,
				.path_len = (uint16_t)path_len, .kind = kind };
	memcpy(buf, &r, sizeof(r));
	uint8_t *p = buf + sizeof(r);
	memcpy(p, path, path_len);
	p += FR_ALIGN8(path_len);
	char *strtab = (char *)p + nsyms * sizeof(struct fr_dso_sym);
	uint32_t name_off = 0;
	for (uint32_t i = 0; i < nsyms; i++) {
		struct fr_dso_sym sym = { syms[i].offset, syms[i].size, name_off };
		memcpy(p + i * sizeof(sym), &sym, sizeof(sym));
		memcpy(strtab + name_off, syms[i].name, strlen(syms[i].name) + 1);
		name_off += (uint32_t)strlen(syms[i].name) + 1;
	}
	synth_raw(s->meta, buf, size, FR_REC_DSO, 0);
	free(buf);
}

/* ips: n_kernel kernel frames leaf first, then n_user user frames leaf first. */
static inline void synth_stack(struct synth *s, uint32_t stack_id, uint32_t pid,
			       const uint64_t *ips, uint16_t n_kernel, uint16_t n_user)
{
	uint32_t size = (uint32_t)(sizeof(struct fr_rec_stack) + 8u * (n_kernel + n_user));
	uint8_t *buf = calloc(1, size);
	struct fr_rec_stack r = { .stack_id = stack_id, .pid = pid, .n_kernel = n_kernel,
				  .n_user = n_user };
	memcpy(buf, &r, sizeof(r));
	memcpy(buf + sizeof(r), ips, 8u * (n_kernel + n_user));
	synth_raw(s->ev, buf, size, FR_REC_STACK, 0);
	free(buf);
}

static inline void synth_samples(struct synth *s, uint32_t pid, uint32_t tid, uint32_t stack_id,
				 unsigned count)
{
	for (unsigned i = 0; i < count; i++) {
		s->ts_ns += 10000000ull;
		struct fr_ev_cpu_sample ev = { .c = { .ts_ns = s->ts_ns, .pid = pid, .tid = tid },
					       .cpu = i % 4, .stack_id = stack_id };
		synth_raw(s->ev, &ev, sizeof(ev), FR_EV_CPU_SAMPLE, s->ts_ns);
	}
}

static inline void synth_syscall(struct synth *s, uint32_t pid, uint32_t nr, int64_t ret,
				 uint64_t duration_ns)
{
	s->ts_ns += 1000;
	struct fr_ev_syscall ev = { .c = { .ts_ns = s->ts_ns, .pid = pid, .tid = pid },
				    .nr = nr, .ret = ret, .duration_ns = duration_ns };
	synth_raw(s->ev, &ev, sizeof(ev), FR_EV_SYSCALL, s->ts_ns);
}

static inline void synth_stats(struct synth *s, uint64_t cpu_events, uint64_t cpu_drops)
{
	uint8_t buf[sizeof(struct fr_rec_stats) + sizeof(struct fr_probe_stats)] = { 0 };
	struct fr_rec_stats r = { .ts_ns = s->ts_ns, .cpu_user_ns = 5000000, .cpu_sys_ns = 2000000,
				  .n_probes = 1 };
	struct fr_probe_stats p = { .events = cpu_events, .drops = cpu_drops };
	strcpy(p.name, "cpu");
	memcpy(buf, &r, sizeof(r));
	memcpy(buf + sizeof(r), &p, sizeof(p));
	synth_raw(s->meta, buf, sizeof(buf), FR_REC_STATS, s->ts_ns);
}

/* Clean close: INDEX and END with one probe's counters. */
static inline int synth_close(struct synth *s, uint64_t cpu_events, uint64_t cpu_drops)
{
	frec_builder_free(s->ev);
	frec_builder_free(s->meta);
	struct fr_end end = { .end_mono_ns = s->ts_ns + 1000000ull,
			      .end_real_ns = 1714564800123000000ull + (s->ts_ns - 1000000000ull),
			      .cpu_user_ns = 30000000, .cpu_sys_ns = 10000000 };
	struct fr_probe_stats p = { .events = cpu_events, .drops = cpu_drops };
	strcpy(p.name, "cpu");
	struct frec_error err;
	if (frec_writer_close(s->w, &end, &p, 1, &err)) {
		fprintf(stderr, "synth_close: %s\n", err.what);
		return -1;
	}
	return 0;
}

/* Killed recorder: no INDEX, no END. */
static inline void synth_abandon(struct synth *s)
{
	frec_builder_free(s->ev);
	frec_builder_free(s->meta);
	frec_writer_abandon(s->w);
}

/* One CUDA call as the caller fills it (c.ts_ns is the entry time; tid
 * defaults to pid).  s->ts_ns follows the latest return time so
 * synth_close ends after it. */
static inline void synth_cuda(struct synth *s, struct fr_ev_cuda ev)
{
	if (!ev.c.tid)
		ev.c.tid = ev.c.pid;
	uint64_t end = ev.c.ts_ns + ev.duration_ns;
	if (end >= ev.c.ts_ns && end < (1ull << 62) && end > s->ts_ns) /* hostile times: leave it */
		s->ts_ns = end;
	synth_raw(s->ev, &ev, sizeof(ev), FR_EV_CUDA, ev.c.ts_ns);
}

#endif
