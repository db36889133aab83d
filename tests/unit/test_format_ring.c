/* The flight-recorder ring of the writer: the oldest EVENTS chunks leave
 * first, exactly what no longer fits; what they carried that later events
 * need (metadata records, a stack whose event opens the next chunk) stays;
 * the caller sees every evicted record once; and a snapshot is an intact
 * trace holding the metadata, the carried state, the window's events in
 * order and the snapshot record. */
#include "test_format_util.h"

#include <fcntl.h>
#include <pthread.h>

#define CHUNK 4096u
#define REC 512u
#define EV_TYPE 0x77 /* an event type (below 0x100) of no family */

struct seen {
	uint32_t events, ustacks, first_id, last_id;
};

/* The evicted() callback: counts what left the ring, in order. */
static void on_evict(void *ctx, const uint8_t *raw, size_t len)
{
	struct seen *s = ctx;
	for (size_t off = 0; off + 8 <= len;) {
		struct fr_rec_hdr h;
		memcpy(&h, raw + off, sizeof(h));
		if (h.size < 8 || off + h.size > len)
			break;
		if (h.type == EV_TYPE) {
			uint32_t id;
			memcpy(&id, raw + off + 8, 4);
			if (!s->events)
				s->first_id = id;
			s->last_id = id;
			s->events++;
		} else if (h.type == FR_REC_USTACK) {
			s->ustacks++;
		}
		off += h.size;
	}
}

static void put(struct frec_builder *b, uint16_t type, uint32_t id, uint32_t size)
{
	uint8_t rec[REC];
	memset(rec, 0, sizeof(rec));
	struct fr_rec_hdr h = { size, type, 0 };
	memcpy(rec, &h, sizeof(h));
	memcpy(rec + 8, &id, 4);
	CHECK(frec_builder_append(b, rec, size, type < 0x100 ? 1000 + id : 0) == 0);
}

/* The carry callback: two records of the caller's, ahead of the window. */
static int carry(void *ctx, struct frec_carried *out)
{
	static uint8_t recs[2 * 64];
	(void)ctx;
	memset(recs, 0, sizeof(recs));
	for (uint32_t i = 0; i < 2; i++) {
		struct fr_rec_hdr h = { 64, EV_TYPE, 0 };
		uint32_t id = 900000 + i;
		memcpy(recs + 64 * i, &h, sizeof(h));
		memcpy(recs + 64 * i + 8, &id, 4);
	}
	*out = (struct frec_carried){ .raw = recs, .len = sizeof(recs), .count = 2,
				      .allocs = 2, .alloc_bytes = 4096, .first_ts_ns = 500 };
	return 0;
}

struct back {
	uint32_t meta_marks, stacks_in_meta, ustack_before_first, carried_first;
	uint32_t n_events, first_id, last_id, ordered;
	uint32_t snapshots;
	struct fr_rec_snapshot snap;
	char detail[64];
	int has_end, damage;
	uint64_t missing, gaps;
};

static void read_back(const char *path, struct back *b)
{
	memset(b, 0, sizeof(*b));
	b->ordered = 1;
	struct frec_reader *r;
	struct frec_error err;
	CHECK(frec_open(path, &r, &err) == 0);
	if (!r)
		return;
	struct frec_chunk c;
	int prev_ustack = 0, seen_window = 0;
	while (frec_next_chunk(r, &c, &err) == 1) {
		size_t cur = 0;
		const struct fr_rec_hdr *rec;
		while (frec_chunk_next_record(r, &c, &cur, &rec) == 1) {
			uint32_t id;
			memcpy(&id, (const uint8_t *)rec + 8, 4);
			if (rec->type == EV_TYPE && id >= 900000) {
				b->carried_first += !seen_window;
			} else if (rec->type == EV_TYPE) {
				if (!b->n_events) {
					b->first_id = id;
					b->ustack_before_first = prev_ustack;
				} else if (id != b->last_id + 1) {
					b->ordered = 0;
				}
				b->last_id = id;
				b->n_events++;
				seen_window = 1;
			} else if (rec->type == 0x7fff && c.hdr.chunk_type == FR_CHUNK_META) {
				b->meta_marks++;
			} else if (rec->type == FR_REC_STACK && c.hdr.chunk_type == FR_CHUNK_META) {
				b->stacks_in_meta++;
			} else if (rec->type == FR_REC_SNAPSHOT) {
				b->snapshots++;
				memcpy(&b->snap, rec, sizeof(b->snap));
				size_t dl = b->snap.detail_len < sizeof(b->detail) - 1 ?
					    b->snap.detail_len : sizeof(b->detail) - 1;
				memcpy(b->detail, (const uint8_t *)rec + sizeof(b->snap), dl);
				b->detail[dl] = 0;
			}
			prev_ustack = rec->type == FR_REC_USTACK;
		}
	}
	b->has_end = frec_has_end(r);
	b->damage = (int)frec_damage_count(r);
	b->missing = frec_chunks_missing(r);
	b->gaps = frec_seq_gaps(r);
	frec_close(r);
}

static int snapshot(struct frec_writer *w, const char *path, uint32_t number,
		    struct frec_snapshot_result *res)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	CHECK(fd >= 0);
	struct frec_file_info info = { .host = "ringhost", .start_mono_ns = 100,
				       .start_real_ns = 1000000100 };
	struct frec_snapshot s = { .fd = fd, .name = path, .info = &info,
				   .carry = carry, .detail = "test trigger" };
	s.rec.trigger = FR_TRIGGER_SIGNAL;
	s.rec.trigger_ns = 123456;
	s.rec.number = number;
	struct frec_error err;
	int rc = frec_writer_snapshot(w, &s, res, &err);
	if (rc)
		{ char eb[600]; fprintf(stderr, "snapshot: %s\n", frec_error_str(&err, eb, sizeof(eb))); }
	return rc;
}

static void test_ring_window(void)
{
	struct frec_writer_opts o;
	frec_writer_opts_default(&o);
	o.schema = fr_schema_table(&o.n_schema);
	o.codec = FR_CODEC_NONE; /* stored bytes = raw bytes: the window is exact */
	o.chunk_bytes = CHUNK;
	struct seen seen = { 0 };
	struct frec_ring_opts ro = { .bytes = 3 * CHUNK, .evicted = on_evict, .ctx = &seen };
	struct frec_writer *w;
	struct frec_error err;
	CHECK(frec_writer_open_ring(&o, &ro, &w, &err) == 0);
	if (!w)
		return;
	struct frec_builder *meta = frec_builder_new(w, FR_CHUNK_META);
	struct frec_builder *ev = frec_builder_new(w, FR_CHUNK_EVENTS);
	put(meta, 0x7fff, 1, 64);
	put(meta, 0x7fff, 2, 64);
	frec_builder_flush(meta);
	/* chunk 0: a stack record among events, as the drain writes them */
	uint32_t id = 0;
	put(ev, FR_REC_STACK, 77, 64);
	for (int i = 0; i < 6; i++)
		put(ev, EV_TYPE, id++, REC);
	/* 64 + 6*512 = 3136: a 512-byte USTACK still fits (3648), its event
	 * does not after a filler (4160 > 4096): it opens chunk 1 */
	put(ev, EV_TYPE, id++, 448);
	put(ev, FR_REC_USTACK, 0, REC);
	/* chunks 1..9: 8 events each */
	for (int i = 0; i < 8 * 9; i++)
		put(ev, EV_TYPE, id++, REC);
	frec_builder_flush(ev);

	struct frec_snapshot_result res;
	const char *p1 = tu_path("ring-1.frec");
	CHECK(snapshot(w, p1, 1, &res) == 0);
	struct frec_ring_stats rs;
	frec_writer_ring_stats(w, &rs);
	CHECK_EQ_U64(rs.event_chunks, 3);
	CHECK_EQ_U64(rs.event_bytes, 3 * CHUNK);
	CHECK_EQ_U64(rs.chunks_evicted, 7);
	CHECK_EQ_U64(res.event_chunks, 3);
	/* chunks 0..6 left: 7 + 6*8 = 55 events, the USTACK of chunk 0 among them */
	CHECK_EQ_U64(seen.events, 55);
	CHECK_EQ_U64(seen.first_id, 0);
	CHECK_EQ_U64(seen.last_id, 54);
	CHECK_EQ_U64(rs.records_evicted, 55);

	struct back b;
	read_back(p1, &b);
	CHECK(b.has_end);
	CHECK_EQ_U64(b.damage, 0);
	CHECK_EQ_U64(b.missing, 0);
	CHECK_EQ_U64(b.gaps, 0);
	CHECK_EQ_U64(b.meta_marks, 2);
	CHECK_EQ_U64(b.stacks_in_meta, 1); /* kept from evicted chunk 0 */
	CHECK_EQ_U64(b.carried_first, 2);
	CHECK_EQ_U64(b.n_events, 24);
	CHECK_EQ_U64(b.first_id, 55);
	CHECK_EQ_U64(b.last_id, 78);
	CHECK(b.ordered);
	CHECK_EQ_U64(b.ustack_before_first, 0); /* chunk 0's USTACK went with it */
	CHECK_EQ_U64(b.snapshots, 1);
	CHECK_EQ_U64(b.snap.number, 1);
	CHECK_EQ_U64(b.snap.trigger, FR_TRIGGER_SIGNAL);
	CHECK_EQ_U64(b.snap.trigger_ns, 123456);
	CHECK_EQ_U64(b.snap.evicted_records, 55);
	CHECK_EQ_U64(b.snap.carried_allocs, 2);
	CHECK_EQ_U64(b.snap.carried_bytes, 4096);
	CHECK_EQ_U64(b.snap.window_first_ns, 1000 + 55);
	CHECK_EQ_U64(b.snap.window_last_ns, 1000 + 78);
	CHECK_STR(b.detail, "test trigger");

	/* recording goes on: a second snapshot holds the newer window */
	for (int i = 0; i < 8; i++)
		put(ev, EV_TYPE, id++, REC);
	frec_builder_flush(ev);
	const char *p2 = tu_path("ring-2.frec");
	CHECK(snapshot(w, p2, 2, &res) == 0);
	read_back(p2, &b);
	CHECK(b.has_end);
	CHECK_EQ_U64(b.first_id, 63);
	CHECK_EQ_U64(b.last_id, 86);
	CHECK_EQ_U64(b.snap.number, 2);
	frec_builder_free(meta);
	frec_builder_free(ev);
	CHECK(frec_writer_close(w, NULL, NULL, 0, &err) == 0);
}

/* A USTACK that ends an evicted chunk belongs to the event opening the
 * oldest chunk held: the snapshot writes it just before that event. */
static void test_held_ustack(void)
{
	struct frec_writer_opts o;
	frec_writer_opts_default(&o);
	o.codec = FR_CODEC_ZSTD;
	o.chunk_bytes = CHUNK;
	struct seen seen = { 0 };
	struct frec_ring_opts ro = { .bytes = 1, .evicted = on_evict, .ctx = &seen };
	struct frec_writer *w;
	struct frec_error err;
	CHECK(frec_writer_open_ring(&o, &ro, &w, &err) == 0);
	if (!w)
		return;
	struct frec_builder *ev = frec_builder_new(w, FR_CHUNK_EVENTS);
	uint32_t id = 0;
	for (int i = 0; i < 7; i++)
		put(ev, EV_TYPE, id++, REC);
	put(ev, FR_REC_USTACK, 0, REC); /* chunk 0 is full */
	put(ev, EV_TYPE, id++, REC);    /* opens chunk 1: the stack's event */
	frec_builder_flush(ev);
	struct frec_snapshot_result res;
	const char *p = tu_path("held-1.frec");
	CHECK(snapshot(w, p, 1, &res) == 0);
	struct back b;
	read_back(p, &b);
	CHECK(b.has_end);
	CHECK_EQ_U64(seen.events, 7);
	CHECK_EQ_U64(b.n_events, 1);
	CHECK_EQ_U64(b.first_id, 7);
	CHECK_EQ_U64(b.ustack_before_first, 1);
	frec_builder_free(ev);
	CHECK(frec_writer_close(w, NULL, NULL, 0, &err) == 0);
}

/* A snapshot of a file writer is refused, and closes the fd it was given. */
static void test_not_a_ring(void)
{
	struct frec_writer *w;
	struct frec_error err;
	CHECK(frec_writer_open(tu_path("plain.frec"), NULL, NULL, &w, &err) == 0);
	struct frec_snapshot_result res;
	int fd = open(tu_path("plain-1.frec"), O_WRONLY | O_CREAT | O_EXCL, 0644);
	struct frec_snapshot s = { .fd = fd, .name = "plain-1.frec" };
	CHECK(frec_writer_snapshot(w, &s, &res, &err) == -1);
	CHECK(fcntl(fd, F_GETFD) == -1);
	CHECK(frec_writer_close(w, NULL, NULL, 0, &err) == 0);
}

int main(void)
{
	test_ring_window();
	test_held_ustack();
	test_not_a_ring();
	return check_finish();
}
