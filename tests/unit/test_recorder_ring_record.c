/* The recorder's ring records into file records (recorder/drain/ring_record.c):
 * records as the BPF programs send them when programs nest on one CPU — a
 * CPU sample taken inside a cuda uprobe reaches the ring before the cuda
 * event it interrupted — from two threads whose ids are 256 apart, in both
 * stack modes, plus damaged records.  Written to a real trace and read back:
 * every event names the stack that was sent with it, and every record that
 * could not become an event is counted with its probe and reason.  A drain
 * that is behind writes raw stacks whole without asking the sparse planner,
 * and counts them. */
#include "check.h"
#include "test_format_util.h"

#include "frec_reader.h"
#include "fr_family.h"
#include "frec_writer.h"
#include "drain/ring_record.h"
#include "symbols/dso_table.h"
#include "symbols/ustack_sparse.h"

#define MAX_EVENTS 64

static uint8_t ring_buf[FR_RING_EV_MAX + FR_RAW_STACK_MAX + sizeof(struct fr_ring_ustack) + 4096 +
			16];

/* A dwarf-mode ring record: the event's fixed part, then its stack trailer:
 * the header, two kernel ips, one Python frame, the stack bytes.  The
 * stack's identity is regs[7] (rsp) = marker; its bytes repeat the
 * marker's low byte and the Python frame's code is 0x7000 + marker. */
static size_t dwarf_record(uint16_t type, uint32_t fixed, uint32_t pid, uint32_t tid,
			   uint64_t ts, uint64_t marker, uint32_t stack_len)
{
	memset(ring_buf, 0, sizeof(ring_buf));
	uint32_t trailer = (uint32_t)sizeof(struct fr_ring_ustack) + 2 * 8 + 16 + stack_len;
	struct fr_ev_common c = {
		.h = { .size = fixed + trailer, .type = type, .flags = FR_RECF_USTACK },
		.ts_ns = ts, .pid = pid, .tid = tid,
	};
	memcpy(ring_buf, &c, sizeof(c));
	struct fr_ring_ustack h = {
		.h = { .size = trailer, .type = FR_RING_USTACK },
		.pid = pid, .tid = tid, .stack_len = stack_len, .n_kernel = 2, .n_py = 1,
	};
	h.regs[7] = marker;
	h.regs[16] = 0x401000 + marker;
	uint8_t *t = ring_buf + fixed;
	memcpy(t, &h, sizeof(h));
	uint64_t kips[2] = { 0xffffffff81000000ull + marker, 0xffffffff81000100ull };
	memcpy(t + sizeof(h), kips, sizeof(kips));
	struct fr_py_frame py = { .code = 0x7000 + marker, .fingerprint = 1 };
	memcpy(t + sizeof(h) + sizeof(kips), &py, sizeof(py));
	memset(t + sizeof(h) + sizeof(kips) + sizeof(py), (int)(marker & 0xff), stack_len);
	return fixed + trailer;
}

/* A frame-pointer ring record: the fixed part, then fr_raw_stack and its
 * nk kernel ips (0xffffffff81000000 + i) and nu user ips (leaf_ip, then
 * 0x400500 + i), nothing more. */
static size_t fp_record(uint16_t type, uint32_t fixed, uint32_t pid, uint32_t tid, uint64_t ts,
			uint64_t leaf_ip, uint16_t nk, uint16_t nu)
{
	memset(ring_buf, 0, sizeof(ring_buf));
	uint32_t size = fixed + (uint32_t)sizeof(struct fr_raw_stack) + 8u * (nk + nu);
	struct fr_ev_common c = {
		.h = { .size = size, .type = type, .flags = FR_RECF_RAW_STACK },
		.ts_ns = ts, .pid = pid, .tid = tid,
	};
	memcpy(ring_buf, &c, sizeof(c));
	struct fr_raw_stack st = { .n_user = nu, .n_kernel = nk };
	memcpy(ring_buf + fixed, &st, sizeof(st));
	uint8_t *ips = ring_buf + fixed + sizeof(st);
	for (uint16_t i = 0; i < nk + nu; i++) {
		uint64_t ip = i < nk ? 0xffffffff81000000ull + i :
			      i == nk ? leaf_ip : 0x400500u + (i - nk);
		memcpy(ips + 8u * i, &ip, 8);
	}
	return size;
}

struct seen_event {
	uint16_t type;
	uint32_t tid, stack_id;
	uint64_t ts;
};

struct seen_ustack {
	uint32_t id, tid;
	uint64_t rsp;
	uint32_t stack_len;
	int bytes_ok;
};

static struct seen_event events[MAX_EVENTS];
static struct seen_ustack ustacks[MAX_EVENTS];
static int n_events, n_ustacks, n_fp_stacks, fp_sample_seen;

static void read_back(const char *path, struct fr_drop_count *drops, uint32_t *n_drops)
{
	struct frec_reader *r;
	struct frec_error err;
	struct frec_chunk c;
	n_events = n_ustacks = n_fp_stacks = 0;
	CHECK(frec_open(path, &r, &err) == 0);
	while (frec_next_chunk(r, &c, &err) == 1) {
		size_t cur = 0;
		const struct fr_rec_hdr *rec;
		while (frec_chunk_next_record(r, &c, &cur, &rec) == 1) {
			if (rec->type == FR_REC_USTACK && n_ustacks < MAX_EVENTS) {
				struct fr_rec_ustack u;
				memcpy(&u, rec, sizeof(u));
				struct seen_ustack *s = &ustacks[n_ustacks++];
				s->id = u.stack_id;
				s->tid = u.tid;
				s->rsp = u.regs[7];
				s->stack_len = u.stack_len;
				const uint8_t *bytes = (const uint8_t *)rec + sizeof(u) + 8u * u.n_kernel +
						       16u * u.n_py;
				s->bytes_ok = 1;
				for (uint32_t i = 0; i < u.stack_len; i++)
					if (bytes[i] != (uint8_t)(u.regs[7] & 0xff))
						s->bytes_ok = 0;
			} else if (rec->type == FR_REC_STACK) {
				struct fr_rec_stack st;
				memcpy(&st, rec, sizeof(st));
				if (st.n_kernel == 3 && st.n_user == 4) {
					/* the sample's: kernel ips, then user ips */
					uint64_t ips[7];
					memcpy(ips, (const uint8_t *)rec + sizeof(st), sizeof(ips));
					CHECK_EQ_U64(ips[0], 0xffffffff81000000ull);
					CHECK_EQ_U64(ips[2], 0xffffffff81000002ull);
					CHECK_EQ_U64(ips[3], 0x401777);
					CHECK_EQ_U64(ips[6], 0x400503);
					fp_sample_seen++;
				}
				n_fp_stacks++;
			} else if ((rec->type == FR_EV_CUDA || rec->type == FR_EV_CPU_SAMPLE ||
				    rec->type == FR_EV_SYSCALL) && n_events < MAX_EVENTS) {
				struct fr_ev_common e;
				uint32_t id;
				memcpy(&e, rec, sizeof(e));
				memcpy(&id, (const uint8_t *)rec + FR_EV_STACK_ID_OFFSET, sizeof(id));
				CHECK_EQ_U64(rec->flags, 0); /* ring-only flags never reach a file */
				events[n_events++] = (struct seen_event){ rec->type, e.tid, id, e.ts_ns };
			}
		}
	}
	uint32_t n = 0;
	const struct fr_drop_count *d = frec_end_drops(r, &n);
	*n_drops = n;
	if (d)
		memcpy(drops, d, n * sizeof(*d));
	frec_close(r);
}

static const struct seen_ustack *ustack_by_id(uint32_t id)
{
	for (int i = 0; i < n_ustacks; i++)
		if (ustacks[i].id == id)
			return &ustacks[i];
	return NULL;
}

static const struct seen_event *event_at(uint64_t ts)
{
	for (int i = 0; i < n_events; i++)
		if (events[i].ts == ts)
			return &events[i];
	return NULL;
}

static int py_codes, py_codes_right;
static void count_py(void *ctx, uint32_t pid, uint64_t code, uint16_t fp)
{
	(void)ctx, (void)pid;
	py_codes++;
	/* every record's frame, read from right after its kernel ips */
	py_codes_right += code >= 0x7000 && code <= 0x70ff && fp == 1;
}

static bool behind_now;
static int behind_asked;

static bool is_behind(void *ctx)
{
	(void)ctx;
	behind_asked++;
	return behind_now;
}

/* The planner steps aside while the drain is behind: the copy is written
 * whole, the planner never sees it, and the copy is counted; caught up, the
 * planner is asked again (it has no mappings here, so it keeps the copy
 * whole itself, counted as its own).  A frame-pointer stack never asks. */
static void test_behind(void)
{
	const char *path = tu_path("behind.frec");
	struct frec_writer_opts o;
	struct frec_writer *w;
	struct frec_error err;
	struct dso_table dsos;
	frec_writer_opts_default(&o);
	o.schema = fr_schema_table(&o.n_schema);
	CHECK(frec_writer_open(path, NULL, &o, &w, &err) == 0);
	dso_table_init(&dsos);
	static struct ring_sink sink;
	sink.builder = frec_builder_new(w, FR_CHUNK_EVENTS);
	sink.stacks = stack_table_new();
	sink.sparse = ustack_sparse_new(&dsos);
	sink.behind = is_behind;
	CHECK(sink.sparse != NULL);
	const uint32_t cuda = sizeof(struct fr_ev_cuda);
	size_t n;

	behind_now = true;
	n = dwarf_record(FR_EV_CUDA, cuda, 77, 1000, 1000, 0xe1, 4096);
	CHECK(ring_sink_record(&sink, ring_buf, n) != NULL);
	n = dwarf_record(FR_EV_CUDA, cuda, 77, 1000, 2000, 0xe2, 2048);
	CHECK(ring_sink_record(&sink, ring_buf, n) != NULL);
	struct ustack_sparse_stats st = ustack_sparse_stats(sink.sparse);
	CHECK_EQ_U64(st.sparse + st.whole, 0);
	CHECK_EQ_U64(st.bytes_in, 0);
	CHECK_EQ_U64(atomic_load(&sink.whole_behind), 2);
	n = fp_record(FR_EV_CUDA, cuda, 77, 1000, 2500, 0x401234, 0, 2);
	CHECK(ring_sink_record(&sink, ring_buf, n) != NULL);
	CHECK_EQ_U64(behind_asked, 2);

	behind_now = false;
	n = dwarf_record(FR_EV_CUDA, cuda, 77, 1000, 3000, 0xe3, 1024);
	CHECK(ring_sink_record(&sink, ring_buf, n) != NULL);
	st = ustack_sparse_stats(sink.sparse);
	CHECK_EQ_U64(st.whole, 1);
	CHECK_EQ_U64(st.bytes_in, 1024);
	CHECK_EQ_U64(atomic_load(&sink.whole_behind), 2);
	CHECK_EQ_U64(sink.ustacks, 3);

	frec_builder_free(sink.builder);
	CHECK(frec_writer_close(w, NULL, NULL, 0, &err) == 0);
	stack_table_free(sink.stacks);
	ustack_sparse_free(sink.sparse);
	dso_table_destroy(&dsos);

	struct fr_drop_count got[8];
	uint32_t n_got = 0;
	read_back(path, got, &n_got);
	CHECK_EQ_U64(n_events, 4);
	CHECK_EQ_U64(n_ustacks, 3);
	static const struct { uint64_t ts; uint64_t rsp; uint32_t len; } want[] = {
		{ 1000, 0xe1, 4096 }, { 2000, 0xe2, 2048 }, { 3000, 0xe3, 1024 },
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct seen_event *e = event_at(want[i].ts);
		const struct seen_ustack *u = e ? ustack_by_id(e->stack_id) : NULL;
		CHECK(u != NULL);
		if (!u)
			continue;
		CHECK_EQ_U64(u->rsp, want[i].rsp);
		CHECK_EQ_U64(u->stack_len, want[i].len); /* whole */
		CHECK(u->bytes_ok);
	}
}

int main(void)
{
	const char *path = tu_path("ring.frec");
	struct frec_writer_opts o;
	struct frec_writer *w;
	struct frec_error err;
	frec_writer_opts_default(&o);
	o.schema = fr_schema_table(&o.n_schema);
	CHECK(frec_writer_open(path, NULL, &o, &w, &err) == 0);

	static struct ring_sink sink; /* zeroed: its counters start at 0 */
	sink.builder = frec_builder_new(w, FR_CHUNK_EVENTS);
	sink.stacks = stack_table_new();
	sink.py_code = count_py;
	const uint32_t cuda = sizeof(struct fr_ev_cuda), cpu = sizeof(struct fr_ev_cpu_sample);
	const uint32_t sys = sizeof(struct fr_ev_syscall);
	const uint32_t A = 1000, B = 1256; /* equal modulo 256 */
	size_t n;

	/* Thread A is inside cudaMalloc's return probe when the timer fires: the
	 * sample (stack 0xa2) completes first and reaches the ring first. */
	n = dwarf_record(FR_EV_CPU_SAMPLE, cpu, 77, A, 2000, 0xa2, 512);
	CHECK(ring_sink_record(&sink, ring_buf, n) != NULL);
	n = dwarf_record(FR_EV_CUDA, cuda, 77, A, 1000, 0xa1, 4096);
	CHECK(ring_sink_record(&sink, ring_buf, n) != NULL);
	/* Thread B, 256 ids away, the same on the other CPU */
	n = dwarf_record(FR_EV_CPU_SAMPLE, cpu, 77, B, 4000, 0xb2, 256);
	CHECK(ring_sink_record(&sink, ring_buf, n) != NULL);
	n = dwarf_record(FR_EV_CUDA, cuda, 77, B, 3000, 0xb1, 1024);
	CHECK(ring_sink_record(&sink, ring_buf, n) != NULL);
	/* an event with an empty stack copy (the stack's page was unreadable) */
	n = dwarf_record(FR_EV_SYSCALL, sys, 77, A, 5000, 0xa3, 0);
	CHECK(ring_sink_record(&sink, ring_buf, n) != NULL);
	/* --stack fp records, one stack seen twice */
	n = fp_record(FR_EV_CUDA, cuda, 77, B, 6000, 0x401234, 0, 2);
	CHECK(ring_sink_record(&sink, ring_buf, n) != NULL);
	n = fp_record(FR_EV_CUDA, cuda, 77, A, 7000, 0x401234, 0, 2);
	CHECK(ring_sink_record(&sink, ring_buf, n) != NULL);

	/* damaged records: counted, nothing written, later records unharmed */
	n = dwarf_record(FR_EV_CUDA, cuda, 77, A, 8000, 0xc1, 4096);
	CHECK(ring_sink_record(&sink, ring_buf, n - 4097) == NULL); /* trailer cut short */
	n = dwarf_record(FR_EV_CUDA, cuda, 77, A, 8001, 0xc2, 64);
	struct fr_ring_ustack h;
	memcpy(&h, ring_buf + cuda, sizeof(h));
	h.tid = B; /* a stack of another thread */
	memcpy(ring_buf + cuda, &h, sizeof(h));
	CHECK(ring_sink_record(&sink, ring_buf, n) == NULL);
	n = dwarf_record(FR_EV_CPU_SAMPLE, cpu, 77, A, 8002, 0xc3, 64);
	memcpy(&h, ring_buf + cpu, sizeof(h));
	h.h.type = FR_EV_CUDA; /* not a stack trailer */
	memcpy(ring_buf + cpu, &h, sizeof(h));
	CHECK(ring_sink_record(&sink, ring_buf, n) == NULL);
	n = fp_record(FR_EV_CUDA, cuda, 77, A, 8003, 0x401234, 0, 2);
	CHECK(ring_sink_record(&sink, ring_buf, n - 8) == NULL); /* fp stack cut short */
	/* more frames than the programs ever send */
	n = fp_record(FR_EV_CPU_SAMPLE, cpu, 77, A, 8004, 0x401234, 0, FR_MAX_USER_FRAMES + 1);
	CHECK(ring_sink_record(&sink, ring_buf, n) == NULL);
	n = fp_record(FR_EV_CPU_SAMPLE, cpu, 77, A, 8005, 0x401234, FR_MAX_KERNEL_FRAMES + 1, 1);
	CHECK(ring_sink_record(&sink, ring_buf, n) == NULL);
	/* a sample's kernel and user parts, each as long as it is */
	n = fp_record(FR_EV_CPU_SAMPLE, cpu, 77, B, 8500, 0x401777, 3, 4);
	CHECK(ring_sink_record(&sink, ring_buf, n) != NULL);
	n = dwarf_record(FR_EV_CUDA, cuda, 77, B, 9000, 0xb3, 2048);
	CHECK(ring_sink_record(&sink, ring_buf, n) != NULL);

	/* sizes and families come from the descriptors; types no family
	 * writes are counted as the process tracker's damage, and so is a stack
	 * sent with an event that has no field to name it */
	for (uint16_t t = 0; t < 0x200; t++) {
		const struct fr_family_record *rec = fr_family_record(t);
		CHECK_EQ_U64(ring_fixed_size(t), rec ? rec->size : 0);
		CHECK_EQ_U64(ring_probe_of(t), rec ? fr_family_of_record(t)->id : FR_PROBE_PROC);
	}
	struct fr_ev_proc fork_ev = { .c = { .h = { .size = sizeof(fork_ev), .type = FR_EV_PROC_FORK },
					     .ts_ns = 9500, .pid = 77, .tid = 77 } };
	CHECK(ring_sink_record(&sink, &fork_ev, sizeof(fork_ev)) != NULL);
	fork_ev.c.h.type = 0x55;
	CHECK(ring_sink_record(&sink, &fork_ev, sizeof(fork_ev)) == NULL);
	fork_ev.c.h.type = 0x1234;
	CHECK(ring_sink_record(&sink, &fork_ev, sizeof(fork_ev)) == NULL);
	n = dwarf_record(FR_EV_RDMA_POST, sizeof(struct fr_ev_rdma_post), 77, A, 9600, 0xd1, 64);
	CHECK(ring_sink_record(&sink, ring_buf, n) == NULL);
	CHECK_EQ_U64(atomic_load(&sink.events[FR_PROBE_PROC]), 1);
	CHECK_EQ_U64(atomic_load(&sink.lost[FR_PROBE_PROC][FR_DROP_MALFORMED].count), 2);
	CHECK_EQ_U64(atomic_load(&sink.lost[FR_PROBE_RDMA][FR_DROP_MALFORMED].count), 1);

	CHECK_EQ_U64(atomic_load(&sink.events[FR_PROBE_CUDA]), 5);
	CHECK_EQ_U64(atomic_load(&sink.events[FR_PROBE_CPU]), 3);
	CHECK_EQ_U64(atomic_load(&sink.events[FR_PROBE_SYSCALLS]), 1);
	CHECK_EQ_U64(atomic_load(&sink.lost[FR_PROBE_CUDA][FR_DROP_MALFORMED].count), 3);
	CHECK_EQ_U64(atomic_load(&sink.lost[FR_PROBE_CPU][FR_DROP_MALFORMED].count), 3);
	CHECK(atomic_load(&sink.lost[FR_PROBE_CUDA][FR_DROP_MALFORMED].first_ns) > 0);
	CHECK_EQ_U64(sink.ustacks, 6);
	CHECK_EQ_U64(py_codes, 6);
	CHECK_EQ_U64(py_codes_right, 6);

	/* the recorder hands its loss counters to the writer for END */
	struct fr_drop_count out[2] = {
		{ .probe = "cuda", .reason = FR_DROP_MALFORMED,
		  .count = atomic_load(&sink.lost[FR_PROBE_CUDA][FR_DROP_MALFORMED].count),
		  .first_ns = 11, .last_ns = 22 },
		{ .probe = "cpu", .reason = FR_DROP_STACK_BUSY, .count = 5 },
	};
	frec_builder_free(sink.builder);
	CHECK(frec_writer_set_drops(w, out, 2) == 0);
	struct fr_probe_stats ps = { .name = "cuda", .events = 5, .drops = 3 };
	CHECK(frec_writer_close(w, NULL, &ps, 1, &err) == 0);
	stack_table_free(sink.stacks);

	struct fr_drop_count got[8];
	uint32_t n_got = 0;
	read_back(path, got, &n_got);
	CHECK_EQ_U64(n_events, 9);
	CHECK_EQ_U64(n_ustacks, 6);
	CHECK_EQ_U64(n_fp_stacks, 2); /* one FR_REC_STACK for the stack seen twice */

	/* each event names the stack sent with it: its own thread, its own copy */
	static const struct { uint64_t ts; uint32_t tid; uint64_t rsp; uint32_t len; } want[] = {
		{ 2000, A, 0xa2, 512 }, { 1000, A, 0xa1, 4096 }, { 4000, B, 0xb2, 256 },
		{ 3000, B, 0xb1, 1024 }, { 5000, A, 0xa3, 0 }, { 9000, B, 0xb3, 2048 },
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct seen_event *e = event_at(want[i].ts);
		CHECK(e != NULL);
		if (!e)
			continue;
		CHECK(e->stack_id & 0x80000000u);
		const struct seen_ustack *u = ustack_by_id(e->stack_id);
		CHECK(u != NULL);
		if (!u)
			continue;
		CHECK_EQ_U64(u->tid, want[i].tid);
		CHECK_EQ_U64(u->rsp, want[i].rsp);
		CHECK_EQ_U64(u->stack_len, want[i].len);
		CHECK(u->bytes_ok);
	}
	const struct seen_event *f1 = event_at(6000), *f2 = event_at(7000);
	CHECK(f1 && f2 && f1->stack_id == f2->stack_id && f1->stack_id != 0 &&
	      !(f1->stack_id & 0x80000000u));
	CHECK(event_at(8000) == NULL && event_at(8001) == NULL && event_at(8002) == NULL &&
	      event_at(8003) == NULL && event_at(8004) == NULL && event_at(8005) == NULL);
	CHECK_EQ_U64(fp_sample_seen, 1);
	CHECK(event_at(8500) && event_at(8500)->stack_id != 0);

	CHECK_EQ_U64(n_got, 2);
	CHECK_STR(got[0].probe, "cuda");
	CHECK_EQ_U64(got[0].reason, FR_DROP_MALFORMED);
	CHECK_EQ_U64(got[0].count, 3);
	CHECK_EQ_U64(got[0].first_ns, 11);
	CHECK_EQ_U64(got[0].last_ns, 22);
	CHECK_EQ_U64(got[1].reason, FR_DROP_STACK_BUSY);
	CHECK(!FR_DROP_LOSES_EVENT(got[1].reason));
	CHECK_STR(fr_drop_reason_name(got[1].reason), "stack_busy");
	test_behind();
	return check_finish();
}
