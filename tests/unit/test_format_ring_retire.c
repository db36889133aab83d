/* The ring's metadata over a job's life (frec_writer_ring_retire): once an
 * exited process's exit event has left the ring, its process, mapping and
 * code-object and cgroup records leave what is kept, and the next snapshot, while a
 * live process's records, a reused pid's new process and the files' records
 * stay; clock anchors older than the window go but the latest.  Under
 * churn (churn_bound): with more exited processes waiting than max_exited,
 * the oldest events leave sooner, so at most max_exited wait and the latest
 * half of them keep their metadata; a ring without the bound keeps them all.
 * Counts are exact: the test builds every chunk itself. */
#include "test_format_util.h"

#include <fcntl.h>

#define CHUNK 4096u

static uint64_t ts_base = 1000;

static void put_process(struct frec_builder *b, uint32_t pid, uint64_t ts)
{
	struct fr_rec_process p = { .h = { sizeof(p), FR_REC_PROCESS, 0 }, .ts_ns = ts, .pid = pid };
	CHECK(frec_builder_append(b, &p, sizeof(p), ts) == 0);
}

static void put_mapping(struct frec_builder *b, uint32_t pid, uint64_t ts)
{
	struct fr_rec_mapping m = { .h = { sizeof(m), FR_REC_MAPPING, 0 }, .ts_ns = ts, .pid = pid,
				    .dso_id = 1, .start = 0x1000, .end = 0x2000 };
	CHECK(frec_builder_append(b, &m, sizeof(m), ts) == 0);
}

static void put_cgroup(struct frec_builder *b, uint32_t pid, uint64_t ts)
{
	uint8_t rec[sizeof(struct fr_rec_proc_cgroup) + 8] = { 0 };
	struct fr_rec_proc_cgroup c = { .h = { sizeof(rec), FR_REC_PROC_CGROUP, 0 }, .ts_ns = ts,
					.pid = pid, .len = 6 };
	memcpy(rec, &c, sizeof(c));
	memcpy(rec + sizeof(c), "/job_1", 6);
	CHECK(frec_builder_append(b, rec, sizeof(rec), ts) == 0);
}

static void put_pycode(struct frec_builder *b, uint32_t pid)
{
	struct fr_rec_pycode c = { .h = { sizeof(c), FR_REC_PYCODE, 0 }, .code = 0xabc, .pid = pid };
	CHECK(frec_builder_append(b, &c, sizeof(c), 0) == 0);
}

static void put_clock(struct frec_builder *b, uint64_t ts)
{
	struct fr_rec_clock c = { .h = { sizeof(c), FR_REC_CLOCK, 0 }, .mono_ns = ts, .real_ns = ts };
	CHECK(frec_builder_append(b, &c, sizeof(c), ts) == 0);
}

static void put_exit(struct frec_builder *b, uint32_t pid, uint64_t ts)
{
	struct fr_ev_proc e = { .c = { .h = { sizeof(e), FR_EV_PROC_EXIT, 0 }, .ts_ns = ts,
				       .pid = pid, .tid = pid } };
	CHECK(frec_builder_append(b, &e, sizeof(e), ts) == 0);
}

/* A filler event: 512 bytes, so chunks fill at a known pace. */
static void put_filler(struct frec_builder *b, uint64_t ts)
{
	uint8_t rec[512];
	memset(rec, 0, sizeof(rec));
	struct fr_ev_common c = { .h = { sizeof(rec), FR_EV_STEP, 0 }, .ts_ns = ts, .pid = 1 };
	memcpy(rec, &c, sizeof(c));
	CHECK(frec_builder_append(b, rec, sizeof(rec), ts) == 0);
}

struct counts {
	uint32_t process[4], mapping[4], pycode[4], cgroup[4], clocks, dso;
};

static void count_in(const char *path, struct counts *n)
{
	memset(n, 0, sizeof(*n));
	struct frec_reader *r;
	struct frec_error err;
	CHECK(frec_open(path, &r, &err) == 0);
	if (!r)
		return;
	struct frec_chunk c;
	while (frec_next_chunk(r, &c, &err) == 1) {
		size_t cur = 0;
		const struct fr_rec_hdr *rec;
		while (frec_chunk_next_record(r, &c, &cur, &rec) == 1) {
			const uint8_t *p = (const uint8_t *)rec;
			if (rec->type == FR_REC_PROCESS) {
				const struct fr_rec_process *x = (const void *)p;
				n->process[x->pid & 3]++;
			} else if (rec->type == FR_REC_MAPPING) {
				const struct fr_rec_mapping *x = (const void *)p;
				n->mapping[x->pid & 3]++;
			} else if (rec->type == FR_REC_PYCODE) {
				const struct fr_rec_pycode *x = (const void *)p;
				n->pycode[x->pid & 3]++;
			} else if (rec->type == FR_REC_PROC_CGROUP) {
				const struct fr_rec_proc_cgroup *x = (const void *)p;
				n->cgroup[x->pid & 3]++;
			} else if (rec->type == FR_REC_CLOCK) {
				n->clocks++;
			} else if (rec->type == 0x7ffe) {
				n->dso++;
			}
		}
	}
	frec_close(r);
}

static void snap(struct frec_writer *w, const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	CHECK(fd >= 0);
	struct frec_file_info info = { .host = "h", .start_mono_ns = 100, .start_real_ns = 100 };
	struct frec_snapshot s = { .fd = fd, .name = path, .info = &info, .detail = "t" };
	s.rec.trigger = FR_TRIGGER_SIGNAL;
	struct frec_snapshot_result res;
	struct frec_error err;
	CHECK(frec_writer_snapshot(w, &s, &res, &err) == 0);
}

/* n processes start, each with its process and mapping records, and exit
 * (one small events chunk each), retired as the tracking thread would;
 * what waits and what a snapshot holds, with max_exited. */
static void churn_bound(size_t max_exited, uint32_t n, struct frec_ring_stats *rs,
			struct counts *held, const char *snap_name)
{
	struct frec_writer_opts o;
	frec_writer_opts_default(&o);
	o.schema = fr_schema_table(&o.n_schema);
	o.codec = FR_CODEC_NONE;
	o.chunk_bytes = CHUNK;
	/* the events never fill the ring: only the bound moves its window */
	struct frec_ring_opts ro = { .bytes = 1u << 24, .max_exited = max_exited };
	struct frec_writer *w;
	struct frec_error err;
	CHECK(frec_writer_open_ring(&o, &ro, &w, &err) == 0);
	if (!w)
		return;
	struct frec_builder *meta = frec_builder_new(w, FR_CHUNK_META);
	struct frec_builder *ev = frec_builder_new(w, FR_CHUNK_EVENTS);
	uint64_t t = ts_base;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t pid = 100 + 4 * i; /* pid & 3 == 0: counted together */
		put_process(meta, pid, t);
		put_mapping(meta, pid, t);
		frec_builder_flush(meta);
		put_exit(ev, pid, t + 1);
		frec_builder_flush(ev);
		struct frec_retired gone = { pid, t + 1 };
		CHECK(frec_writer_ring_retire(w, &gone, 1) == 0);
		t += 10;
	}
	/* one more events chunk: the writer sees the last retirement before it */
	put_filler(ev, t);
	frec_builder_flush(ev);
	snap(w, tu_path(snap_name)); /* queued behind all of it */
	frec_writer_ring_stats(w, rs);
	count_in(tu_path(snap_name), held);
	frec_builder_free(meta);
	frec_builder_free(ev);
	CHECK(frec_writer_close(w, NULL, NULL, 0, &err) == 0);
}

int main(void)
{
	struct frec_ring_stats cs;
	struct counts ch;
	churn_bound(8, 40, &cs, &ch, "churn-bound.frec");
	/* at most 8 wait; the chunks up to the oldest half's exits left early */
	CHECK(cs.retire_waiting <= 8);
	CHECK(cs.chunks_evicted_exited > 0);
	CHECK_EQ_U64(cs.chunks_evicted, cs.chunks_evicted_exited);
	CHECK_EQ_U64(cs.pids_retired + cs.retire_waiting, 40);
	/* every process still waiting keeps its records, and at least the
	 * latest half of the bound does */
	CHECK_EQ_U64(ch.process[0], cs.retire_waiting);
	CHECK_EQ_U64(ch.mapping[0], cs.retire_waiting);
	CHECK(cs.retire_waiting >= 4);
	/* the control: the default bound (1,024) lets all 40 wait */
	churn_bound(0, 40, &cs, &ch, "churn-unbound.frec");
	CHECK_EQ_U64(cs.retire_waiting, 40);
	CHECK_EQ_U64(cs.chunks_evicted, 0);
	CHECK_EQ_U64(ch.process[0], 40);

	struct frec_writer_opts o;
	frec_writer_opts_default(&o);
	o.schema = fr_schema_table(&o.n_schema);
	o.codec = FR_CODEC_NONE;
	o.chunk_bytes = CHUNK;
	struct frec_ring_opts ro = { .bytes = 2 * CHUNK };
	struct frec_writer *w;
	struct frec_error err;
	CHECK(frec_writer_open_ring(&o, &ro, &w, &err) == 0);
	if (!w)
		return check_finish();
	struct frec_builder *meta = frec_builder_new(w, FR_CHUNK_META);
	struct frec_builder *ev = frec_builder_new(w, FR_CHUNK_EVENTS);
	/* pid 1 lives on; pid 2 exits and comes back as another process;
	 * pid 3 exits for good.  A file's record (type 0x7ffe) has no pid. */
	uint64_t t = ts_base;
	struct fr_rec_hdr file = { 16, 0x7ffe, 0 };
	uint8_t file_rec[16] = { 0 };
	memcpy(file_rec, &file, sizeof(file));
	CHECK(frec_builder_append(meta, file_rec, sizeof(file_rec), 0) == 0);
	for (uint32_t pid = 1; pid <= 3; pid++) {
		put_process(meta, pid, t);
		put_mapping(meta, pid, t);
		put_pycode(meta, pid);
		put_cgroup(meta, pid, t);
	}
	put_clock(meta, t);
	frec_builder_flush(meta);
	put_exit(ev, 2, t + 10);
	put_exit(ev, 3, t + 11);
	frec_builder_flush(ev);
	/* a zombie's process record, read after its exit, before the retirement */
	put_process(meta, 3, t + 20);
	frec_builder_flush(meta);
	struct frec_retired gone[] = { { 2, t + 10 }, { 3, t + 11 } };
	CHECK(frec_writer_ring_retire(w, gone, 2) == 0);
	/* pid 2 again: a new process, after the retirement */
	put_process(meta, 2, t + 30);
	put_pycode(meta, 2);
	put_clock(meta, t + 30);
	frec_builder_flush(meta);

	/* the exits are still in the ring: nothing goes yet */
	snap(w, tu_path("retire-1.frec"));
	struct counts n;
	count_in(tu_path("retire-1.frec"), &n);
	CHECK_EQ_U64(n.process[1], 1);
	CHECK_EQ_U64(n.process[2], 2);
	CHECK_EQ_U64(n.process[3], 2);
	CHECK_EQ_U64(n.pycode[3], 1);
	CHECK_EQ_U64(n.cgroup[1] + n.cgroup[2] + n.cgroup[3], 3);
	struct frec_ring_stats rs;
	frec_writer_ring_stats(w, &rs);
	CHECK_EQ_U64(rs.retire_waiting, 2);
	CHECK_EQ_U64(rs.meta_processes, 5);

	/* enough later events that the chunk holding the exits leaves */
	for (int i = 0; i < 40; i++)
		put_filler(ev, t + 100 + (uint64_t)i);
	frec_builder_flush(ev);
	put_clock(meta, t + 200);
	frec_builder_flush(meta);
	snap(w, tu_path("retire-2.frec"));
	count_in(tu_path("retire-2.frec"), &n);
	CHECK_EQ_U64(n.process[1], 1);
	CHECK_EQ_U64(n.mapping[1], 1);
	CHECK_EQ_U64(n.pycode[1], 1);
	CHECK_EQ_U64(n.process[2], 1); /* the new process of pid 2 */
	CHECK_EQ_U64(n.mapping[2], 0);
	CHECK_EQ_U64(n.pycode[2], 1);  /* the new one's, after the retirement */
	CHECK_EQ_U64(n.process[3], 0); /* the zombie's record too */
	CHECK_EQ_U64(n.mapping[3], 0);
	CHECK_EQ_U64(n.pycode[3], 0);
	CHECK_EQ_U64(n.cgroup[1], 1); /* the live process keeps its cgroup */
	CHECK_EQ_U64(n.cgroup[2], 0);
	CHECK_EQ_U64(n.cgroup[3], 0);
	CHECK_EQ_U64(n.dso, 1);
	/* the clock anchors before the window: only the latest stays */
	CHECK_EQ_U64(n.clocks, 2);
	frec_writer_ring_stats(w, &rs);
	CHECK_EQ_U64(rs.retire_waiting, 0);
	CHECK_EQ_U64(rs.pids_retired, 2);
	CHECK_EQ_U64(rs.meta_processes, 2);
	CHECK_EQ_U64(rs.records_retired, 10); /* 9 of pids 2 and 3, a clock */
	frec_builder_free(meta);
	frec_builder_free(ev);
	CHECK(frec_writer_close(w, NULL, NULL, 0, &err) == 0);
	return check_finish();
}
