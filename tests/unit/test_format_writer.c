/* Writer behaviour that a round trip does not show: a full queue drops and
 * counts chunks instead of blocking the appending thread, sequence numbers
 * stay contiguous across drops, and errors are reported, not printed. */
#include "test_format_util.h"

#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#define CHUNK 4096u
#define REC 512u

/* Returns the number of failed appends (no CHECK here: check.h's counters
 * are not thread-safe and appender threads call this). */
static int append_chunks(struct frec_builder *b, uint32_t chunks, uint32_t *next)
{
	int failed = 0;
	uint8_t rec[REC];
	memset(rec, 0xab, sizeof(rec));
	for (uint32_t i = 0; i < chunks * (CHUNK / REC); i++) {
		struct fr_rec_hdr h = { REC, UNKNOWN_REC_TYPE, 0 };
		memcpy(rec, &h, sizeof(h));
		uint32_t id = (*next)++;
		memcpy(rec + 8, &id, 4);
		failed += frec_builder_append(b, rec, REC, 1000 + id) != 0;
	}
	return failed;
}

/* The writer thread is held, so the queue can only grow: exactly the chunks
 * that fit are kept, the rest dropped, and the appender never waits. */
static void test_overflow_held(void)
{
	const char *path = tu_path("overflow.frec");
	struct frec_writer_opts o;
	frec_writer_opts_default(&o);
	o.schema = fr_schema_table(&o.n_schema);
	o.codec = FR_CODEC_ZLIB;
	o.chunk_bytes = CHUNK;
	o.max_queue_bytes = 3 * CHUNK + 100;
	struct frec_writer *w;
	struct frec_error err;
	CHECK(frec_writer_open(path, NULL, &o, &w, &err) == 0);
	if (!w)
		return;
	frec_writer_hold(w, 1);
	struct frec_builder *b = frec_builder_new(w, FR_CHUNK_EVENTS);
	uint32_t next = 0;
	CHECK(append_chunks(b, 10, &next) == 0); /* a blocking push would deadlock */

	struct frec_writer_stats st;
	frec_writer_stats(w, &st);
	CHECK_EQ_U64(st.chunks_written, 1); /* the SCHEMA chunk */
	CHECK_EQ_U64(st.chunks_dropped, 7);
	CHECK_EQ_U64(st.records_dropped, 7 * (CHUNK / REC));
	CHECK_EQ_U64(st.queue_bytes_peak, 3 * CHUNK);

	frec_writer_hold(w, 0);
	CHECK(append_chunks(b, 1, &next) == 0); /* kept or dropped: a real race */
	frec_builder_free(b);
	CHECK(frec_writer_close(w, NULL, NULL, 0, &err) == 0);

	const struct tu_summary *s = tu_scan(path);
	CHECK_EQ_U64(s->damage, 0);
	CHECK_EQ_U64(s->gaps, 0); /* dropped chunks never got a seq */
	for (size_t i = 0; i < s->n; i++)
		CHECK_EQ_U64(s->c[i].seq, i);
	CHECK(s->has_end);
	CHECK_EQ_U64(s->n_probes, 1);
	CHECK_STR(s->probes[0].name, "writer");
	/* written + dropped == everything appended, schema records aside */
	CHECK_EQ_U64(s->records + s->probes[0].drops, next);
	CHECK_EQ_U64(s->end.total_drops, s->probes[0].drops);
	CHECK(s->probes[0].drops >= 7 * (CHUNK / REC));
	CHECK(s->records >= 3 * (CHUNK / REC));
}

struct appender {
	struct frec_writer *w;
	uint32_t appended;
	int failed;
};

static void *append_thread(void *arg)
{
	struct appender *a = arg;
	struct frec_builder *b = frec_builder_new(a->w, FR_CHUNK_EVENTS);
	a->failed = append_chunks(b, 400, &a->appended);
	frec_builder_free(b);
	return NULL;
}

/* A queue of one chunk and slow compression, two appending threads racing
 * the writer: whatever is dropped, the counts add up and the file is whole. */
static void test_overflow_racing(void)
{
	const char *path = tu_path("race.frec");
	struct frec_writer_opts o;
	frec_writer_opts_default(&o);
	o.codec = FR_CODEC_ZSTD;
	o.level = 19;
	o.chunk_bytes = CHUNK;
	o.max_queue_bytes = 1;
	struct frec_writer *w;
	struct frec_error err;
	CHECK(frec_writer_open(path, NULL, &o, &w, &err) == 0);
	if (!w)
		return;
	struct appender a[2] = { { w, 0, 0 }, { w, 0, 0 } };
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, append_thread, &a[i]);
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		CHECK_EQ_U64(a[i].failed, 0);
	}
	struct frec_writer_stats st;
	frec_writer_stats(w, &st);
	CHECK(st.chunks_dropped > 0);
	CHECK(st.queue_bytes_peak <= CHUNK);
	CHECK(frec_writer_close(w, NULL, NULL, 0, &err) == 0);

	const struct tu_summary *s = tu_scan(path);
	CHECK_EQ_U64(s->damage, 0);
	CHECK_EQ_U64(s->gaps, 0);
	CHECK_EQ_U64(s->records + s->probes[0].drops, a[0].appended + a[1].appended);
	CHECK_EQ_U64(s->probes[0].drops, st.records_dropped);
}

static void test_errors(void)
{
	struct frec_writer *w = (void *)1;
	struct frec_error err;
	memset(&err, 0, sizeof(err));
	const char *bad = "/nonexistent-dir/x.frec";
	CHECK(frec_writer_open(bad, NULL, NULL, &w, &err) < 0);
	CHECK(w == NULL);
	CHECK_STR(err.where, bad);
	CHECK_EQ_U64(err.code, ENOENT);

	struct frec_writer_opts o;
	frec_writer_opts_default(&o);
	o.codec = 9;
	CHECK(frec_writer_open(tu_path("x.frec"), NULL, &o, &w, &err) < 0);
	CHECK(strstr(err.what, "codec") != NULL);

	/* a zero-filled opts means codec none with default sizes */
	struct frec_writer_opts zero = { 0 };
	zero.schema = fr_schema_table(&zero.n_schema);
	CHECK(frec_writer_open(tu_path("zero.frec"), NULL, &zero, &w, &err) == 0);
	struct frec_builder *b = frec_builder_new(w, FR_CHUNK_META);
	uint32_t next = 0;
	CHECK(append_chunks(b, 2, &next) == 0);
	frec_builder_free(b);
	CHECK(frec_writer_close(w, NULL, NULL, 0, &err) == 0);
	const struct tu_summary *s = tu_scan(tu_path("zero.frec"));
	CHECK_EQ_U64(s->records, next);
	for (size_t i = 0; i < s->n; i++)
		CHECK_EQ_U64(s->c[i].codec, FR_CODEC_NONE);
	CHECK_EQ_U64(s->n, 4); /* schema, one 4 MiB-capable chunk, index, end */
}

/* A file that cannot grow any more (here RLIMIT_FSIZE: EFBIG; a full disk
 * gives ENOSPC the same way): the chunk that failed is cut away, writing
 * stops, and close seals the file with an END that says why, so a reader
 * finds every chunk before, no damage, and the stop.  In a child: the limit
 * and SIGXFSZ must not reach the other tests. */
static void test_stop_when_the_file_cannot_grow(void)
{
	const char *path = tu_path("stopped.frec");
	pid_t pid = fork();
	if (pid == 0) {
		struct frec_writer_opts o;
		struct frec_writer *w;
		struct frec_error err;
		struct stat st;
		frec_writer_opts_default(&o);
		o.codec = FR_CODEC_NONE;
		o.chunk_bytes = CHUNK;
		if (frec_writer_open(path, NULL, &o, &w, &err) || stat(path, &st))
			_exit(10);
		/* room for the header, 3 whole chunks and half of the 4th */
		uint64_t chunk = 64 + CHUNK;
		signal(SIGXFSZ, SIG_IGN);
		struct rlimit lim = { (rlim_t)st.st_size + 3 * chunk + chunk / 2,
				      (rlim_t)st.st_size + 3 * chunk + chunk / 2 };
		if (setrlimit(RLIMIT_FSIZE, &lim))
			_exit(11);
		struct frec_builder *b = frec_builder_new(w, FR_CHUNK_EVENTS);
		uint32_t next = 0;
		append_chunks(b, 8, &next);
		frec_builder_free(b);
		frec_writer_drain(w);
		struct frec_writer_stats ws;
		frec_writer_stats(w, &ws);
		/* written: the schema chunk and 3 events chunks */
		if (ws.stop_error != EFBIG || ws.chunks_written != 4 || ws.chunks_dropped != 5) {
			fprintf(stderr, "stop_error %d, %llu chunks written, %llu dropped\n",
				ws.stop_error, (unsigned long long)ws.chunks_written,
				(unsigned long long)ws.chunks_dropped);
			_exit(12);
		}
		struct fr_probe_stats ps = { .name = "cpu", .events = next };
		_exit(frec_writer_close(w, NULL, &ps, 1, &err) ? 13 : 0);
	}
	int status = -1;
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fprintf(stderr, "stopped-file child: status %d\n", status);

	const struct tu_summary *sum = tu_scan(path);
	CHECK_EQ_U64(sum->open_rc, 0);
	CHECK_EQ_U64(sum->damage, 0);
	CHECK(sum->has_end);
	CHECK_EQ_U64(sum->records, 3 * (CHUNK / REC));
	CHECK_EQ_U64(sum->end.total_chunks, 4); /* the schema chunk and 3 events chunks */
	CHECK_EQ_U64(sum->end.index_offset, 0); /* no INDEX: readers scan */
	struct frec_reader *r;
	struct frec_error err;
	struct frec_chunk c;
	CHECK(frec_open(path, &r, &err) == 0);
	while (frec_next_chunk(r, &c, &err) == 1)
		;
	int e = 0;
	uint64_t at = 0;
	CHECK(frec_end_stopped(r, &e, &at) == 1);
	CHECK_EQ_U64(e, EFBIG);
	CHECK(at > 0);
	uint32_t n = 0;
	frec_end_drops(r, &n);
	CHECK_EQ_U64(n, 1); /* the writer's own: 5 chunks' records lost */
	const struct fr_drop_count *d = frec_end_drops(r, &n);
	CHECK(d && d[0].reason == FR_DROP_CHUNK_LOST && d[0].count == 5 * (CHUNK / REC));
	frec_close(r);
}

/* A full disk (a small tmpfs, in a mount namespace of its own: needs root,
 * as CI runs) with metadata still tried after writing stopped: no chunk may
 * take the room the END needs, whatever its size.  Every step is checked in
 * the child, since the tmpfs goes with its namespace; the exit code says
 * which failed. */
static int full_disk_child(void)
{
	char dir[] = "/tmp/frec-full-XXXXXX";
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    !mkdtemp(dir) || mount("tmpfs", dir, "tmpfs", 0, "size=320k"))
		return 20;
	char path[64];
	snprintf(path, sizeof(path), "%s/full.frec", dir);
	struct frec_writer_opts o;
	struct frec_writer *w;
	struct frec_error err;
	frec_writer_opts_default(&o);
	o.codec = FR_CODEC_NONE;
	o.chunk_bytes = 64u << 10;
	if (frec_writer_open(path, NULL, &o, &w, &err))
		return 21;
	/* 8 events chunks of 64 KiB: the disk fills at the 4th; then, queued
	 * behind them, metadata of every size up to the END's room */
	struct frec_builder *b = frec_builder_new(w, FR_CHUNK_EVENTS);
	uint8_t rec[REC] = { 0 };
	struct fr_rec_hdr h = { .size = REC, .type = FR_EV_STEP };
	memcpy(rec, &h, sizeof(h));
	for (uint32_t i = 0; i < 8 * (o.chunk_bytes / REC); i++)
		if (frec_builder_append(b, rec, REC, 1000 + (uint64_t)i))
			return 22;
	frec_builder_flush(b);
	frec_builder_free(b);
	struct frec_builder *m = frec_builder_new(w, FR_CHUNK_META);
	struct fr_rec_clock c = { .h = { .size = sizeof(c), .type = FR_REC_CLOCK } };
	static const uint32_t sizes[] = { 60u << 10, 40u << 10, 20u << 10, 8u << 10, 2u << 10, 256 };
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		for (uint32_t at = 0; at + sizeof(c) <= sizes[k]; at += sizeof(c))
			if (frec_builder_append(m, &c, sizeof(c), 1))
				return 22;
		frec_builder_flush(m);
	}
	for (int k = 0; k < 400; k++) { /* tiny ones, down to the last bytes free */
		if (frec_builder_append(m, &c, sizeof(c), 1))
			return 22;
		frec_builder_flush(m);
	}
	frec_builder_free(m);
	frec_writer_drain(w);
	struct frec_writer_stats ws;
	frec_writer_stats(w, &ws);
	if (ws.stop_error != ENOSPC || ws.chunks_written < 3) {
		fprintf(stderr, "stop_error %d, %llu chunks written, %llu dropped\n", ws.stop_error,
			(unsigned long long)ws.chunks_written, (unsigned long long)ws.chunks_dropped);
		return 23;
	}
	struct fr_probe_stats ps = { .name = "step", .events = 4096 };
	if (frec_writer_close(w, NULL, &ps, 1, &err))
		return 27;
	const struct tu_summary *sum = tu_scan(path);
	if (sum->open_rc || sum->damage || !sum->has_end)
		return 24;
	struct frec_reader *r;
	struct frec_chunk ch;
	int e = 0;
	uint64_t at = 0;
	if (frec_open(path, &r, &err))
		return 25;
	while (frec_next_chunk(r, &ch, &err) == 1)
		;
	int stopped = frec_end_stopped(r, &e, &at);
	frec_close(r);
	return stopped == 1 && e == ENOSPC ? 0 : 26;
}

static void test_full_disk_keeps_the_end_room(void)
{
	if (geteuid() != 0) {
		printf("full disk: not root, no tmpfs to fill (CI runs this as root)\n");
		return;
	}
	pid_t pid = fork();
	if (pid == 0)
		_exit(full_disk_child());
	int status = -1;
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fprintf(stderr, "full-disk child: status %d (exit %d)\n", status,
			WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void)
{
	test_overflow_held();
	test_overflow_racing();
	test_stop_when_the_file_cannot_grow();
	test_full_disk_keeps_the_end_room();
	test_errors();
	return check_finish();
}
