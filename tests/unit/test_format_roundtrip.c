/* Round trips through the writer and reader: every codec, every record kind,
 * many chunks; the file header, SCHEMA, INDEX and END; unknown chunk and
 * record types; a record larger than a chunk; an abandoned (crashed) file. */
#include "test_format_util.h"
#include "frec_schema.h"

#define N_RECORDS 6000
#define CHUNK_BYTES (64u << 10)

/* Reads path back and checks every record against the generator, in order,
 * and every chunk's header against its records. */
static void check_stream(const char *path, int codec, uint32_t n, int clean)
{
	struct frec_reader *r;
	struct frec_error err;
	CHECK(frec_open(path, &r, &err) == 0);
	if (!r)
		return;
	const struct fr_file_hdr *fh = frec_file_header(r);
	CHECK_EQ_U64(fh->version_major, FR_VERSION_MAJOR);
	CHECK_STR(fh->host, "node-7");
	CHECK_STR(frec_cmdline(r), "python train.py --epochs 3");
	CHECK(fh->start_mono_ns != 0 && fh->start_real_ns != 0);

	static uint8_t want[GEN_MAX_REC];
	uint32_t next = 0;
	uint64_t seq = 0, record_chunks = 0, compressed = 0, total_records = 0;
	int saw_schema = 0, saw_index = 0, saw_end = 0;
	struct frec_chunk c;
	while (frec_next_chunk(r, &c, &err) == 1) {
		CHECK_EQ_U64(c.hdr.seq, seq);
		seq++;
		if (c.hdr.codec != FR_CODEC_NONE) {
			CHECK_EQ_U64(c.hdr.codec, codec);
			compressed++;
		}
		if (c.hdr.chunk_type == FR_CHUNK_INDEX) {
			saw_index = 1;
			CHECK_EQ_U64(c.len, (uint64_t)c.hdr.record_count * sizeof(struct fr_index_entry));
			CHECK_EQ_U64(c.hdr.record_count, c.hdr.seq); /* every chunk before */
			continue;
		}
		if (c.hdr.chunk_type == FR_CHUNK_END) {
			saw_end = 1;
			continue;
		}
		CHECK(!saw_index);
		total_records += c.hdr.record_count;
		size_t cur = 0;
		const struct fr_rec_hdr *rec;
		uint32_t count = 0;
		uint64_t first = 0, last = 0;
		if (c.hdr.chunk_type == FR_CHUNK_SCHEMA) {
			CHECK_EQ_U64(c.hdr.seq, 0);
			saw_schema = 1;
			size_t nt;
			const struct frec_schema_entry *t = fr_schema_table(&nt);
			while (frec_chunk_next_record(r, &c, &cur, &rec) == 1) {
				struct fr_rec_schema s;
				CHECK(rec->type == FR_REC_SCHEMA && rec->size >= sizeof(s));
				memcpy(&s, rec, sizeof(s));
				if (count < nt) {
					CHECK_EQ_U64(s.rec_type, t[count].rec_type);
					CHECK_EQ_U64(s.fixed_size, t[count].fixed_size);
					CHECK_STR(s.name, t[count].name);
					CHECK(s.desc_len == strlen(t[count].desc) &&
					      sizeof(s) + s.desc_len <= rec->size &&
					      memcmp((const char *)rec + sizeof(s), t[count].desc,
						     s.desc_len) == 0);
				}
				count++;
			}
			CHECK_EQ_U64(count, nt);
			CHECK_EQ_U64(c.hdr.record_count, nt);
			continue;
		}
		CHECK_EQ_U64(c.hdr.chunk_type, FR_CHUNK_EVENTS);
		record_chunks++;
		CHECK(c.len <= CHUNK_BYTES);
		int rc;
		while ((rc = frec_chunk_next_record(r, &c, &cur, &rec)) == 1) {
			uint64_t ts;
			uint32_t size = tu_gen_record(next, want, &ts);
			if (rec->size != size || memcmp(rec, want, size) != 0) {
				CHECK(!"record differs");
				fprintf(stderr, "  record %u (size %u vs %u)\n", next,
					rec->size, size);
			}
			if (ts && (!first || ts < first))
				first = ts;
			if (ts > last)
				last = ts;
			next++;
			count++;
		}
		CHECK_EQ_U64(rc, 0);
		CHECK_EQ_U64(count, c.hdr.record_count);
		CHECK_EQ_U64(c.hdr.first_ts_ns, first);
		CHECK_EQ_U64(c.hdr.last_ts_ns, last);
	}
	CHECK_EQ_U64(next, n);
	CHECK(saw_schema);
	CHECK(record_chunks > 5);
	if (codec != FR_CODEC_NONE)
		CHECK(compressed > 0);
	CHECK_EQ_U64(frec_damage_count(r), 0);
	CHECK_EQ_U64(frec_seq_gaps(r), 0);
	CHECK_EQ_U64(frec_chunks_missing(r), 0);
	CHECK_EQ_U64(frec_has_end(r), clean);
	CHECK_EQ_U64(saw_index, clean);
	CHECK_EQ_U64(saw_end, clean);
	CHECK_EQ_U64(frec_chunks_read(r), seq);
	if (clean) {
		const struct fr_end *e = frec_end(r);
		CHECK(e != NULL);
		if (e) {
			CHECK_EQ_U64(e->total_chunks, seq - 2);
			CHECK_EQ_U64(e->total_records, total_records);
			CHECK_EQ_U64(e->cpu_user_ns, 11);
			CHECK_EQ_U64(e->cpu_sys_ns, 22);
			CHECK(e->end_mono_ns != 0 && e->end_real_ns != 0);
			uint32_t np;
			const struct fr_probe_stats *p = frec_end_probes(r, &np);
			CHECK_EQ_U64(np, 2); /* "cpu" + the writer's own */
			if (np == 2) {
				CHECK_STR(p[0].name, "cpu");
				CHECK_EQ_U64(p[0].events, n);
				CHECK_EQ_U64(p[0].drops, 2);
				CHECK_STR(p[1].name, "writer");
				CHECK_EQ_U64(p[1].events, total_records);
				CHECK_EQ_U64(p[1].drops, 0);
				CHECK_EQ_U64(e->total_drops, 2);
			}
		}
	} else {
		CHECK(frec_end(r) == NULL);
	}
	frec_close(r);
}

static void test_codecs(void)
{
	const int codecs[] = { FR_CODEC_NONE, FR_CODEC_ZSTD, FR_CODEC_ZLIB };
	for (int i = 0; i < 3; i++) {
		char name[32];
		snprintf(name, sizeof(name), "rt-%s.frec", frec_codec_name((uint8_t)codecs[i]));
		const char *path = tu_path(name);
		CHECK(tu_write_trace(path, codecs[i], N_RECORDS, CHUNK_BYTES, 1) == 0);
		check_stream(path, codecs[i], N_RECORDS, 1);
	}
}

static void test_abandon(void)
{
	const char *path = tu_path("abandoned.frec");
	CHECK(tu_write_trace(path, FR_CODEC_ZSTD, 3000, CHUNK_BYTES, 0) == 0);
	check_stream(path, FR_CODEC_ZSTD, 3000, 0);
}

/* Several builders, an unknown chunk type, a record bigger than a chunk,
 * explicit clock anchors and probe stats that already name "writer". */
static void test_mixed_builders(void)
{
	const char *path = tu_path("mixed.frec");
	struct frec_writer_opts o;
	frec_writer_opts_default(&o);
	o.schema = fr_schema_table(&o.n_schema);
	o.chunk_bytes = 4096; /* the minimum */
	struct frec_file_info info = { .host = NULL, .start_mono_ns = 123,
				       .start_real_ns = 456 };
	struct frec_writer *w;
	struct frec_error err;
	CHECK(frec_writer_open(path, &info, &o, &w, &err) == 0);
	if (!w)
		return;
	CHECK(frec_builder_new(w, FR_CHUNK_INDEX) == NULL);
	CHECK(frec_builder_new(w, FR_CHUNK_END) == NULL);
	struct frec_builder *ev = frec_builder_new(w, FR_CHUNK_EVENTS);
	struct frec_builder *meta = frec_builder_new(w, FR_CHUNK_META);
	struct frec_builder *odd = frec_builder_new(w, 0x0e); /* unknown type */
	CHECK(frec_builder_reserve(ev, 12) == NULL);
	CHECK(frec_builder_reserve(ev, 4) == NULL);
	CHECK(frec_builder_reserve(ev, 0) == NULL);

	/* big record: 5 x chunk_bytes, through reserve/commit */
	const uint32_t big = 5 * 4096 + 8;
	uint8_t *p = frec_builder_reserve(ev, big);
	CHECK(p != NULL);
	if (p) {
		struct fr_rec_hdr h = { big, UNKNOWN_REC_TYPE, 0 };
		memcpy(p, &h, sizeof(h));
		for (uint32_t i = 8; i < big; i++)
			p[i] = (uint8_t)(i * 7);
		frec_builder_commit(ev, 77);
	}
	for (uint32_t i = 0; i < 100; i++) {
		struct fr_rec_clock c = { { 24, FR_REC_CLOCK, 0 }, 1000 + i, 2000 + i };
		CHECK(frec_builder_append(meta, &c, sizeof(c), c.mono_ns) == 0);
		struct fr_rec_hdr u[3] = { { 24, 0x6666, 0 } };
		CHECK(frec_builder_append(odd, u, sizeof(u), 0) == 0);
	}
	frec_builder_flush(meta);
	frec_builder_flush(meta); /* nothing to seal: no empty chunk */
	frec_builder_free(ev);
	frec_builder_free(meta);
	frec_builder_free(odd);
	struct fr_probe_stats ps[2] = { { .name = "writer", .events = 1, .drops = 5 },
					{ .name = "proc", .events = 9, .drops = 1 } };
	struct fr_end end = { .end_mono_ns = 999, .end_real_ns = 1999 };
	CHECK(frec_writer_close(w, &end, ps, 2, &err) == 0);

	const struct tu_summary *s = tu_scan(path);
	CHECK_EQ_U64(s->open_rc, 0);
	CHECK_EQ_U64(s->damage, 0);
	CHECK_EQ_U64(s->record_errors, 0);
	CHECK_EQ_U64(s->records, 1 + 100 + 100);
	CHECK(s->has_end);
	CHECK_EQ_U64(s->n_probes, 2); /* caller's "writer" entry kept, none added */
	CHECK_EQ_U64(s->end.total_drops, 6);
	CHECK_EQ_U64(s->end.end_mono_ns, 999);
	CHECK_EQ_U64(s->end.end_real_ns, 1999);
	int big_seen = 0, odd_chunks = 0, meta_chunks = 0;
	for (size_t i = 0; i < s->n; i++) {
		CHECK_EQ_U64(s->c[i].seq, i);
		CHECK_EQ_U64(s->c[i].records_iterated,
			     s->c[i].type >= FR_CHUNK_INDEX ? 0 : s->c[i].count);
		if (s->c[i].type == FR_CHUNK_EVENTS) {
			big_seen++;
			CHECK_EQ_U64(s->c[i].count, 1);
			CHECK_EQ_U64(s->c[i].first_ts, 77);
			CHECK_EQ_U64(s->c[i].last_ts, 77);
		}
		if (s->c[i].type == 0x0e) {
			odd_chunks++;
			CHECK_EQ_U64(s->c[i].first_ts, 0);
		}
		if (s->c[i].type == FR_CHUNK_META) {
			meta_chunks++;
			CHECK_EQ_U64(s->c[i].first_ts, 1000);
			CHECK_EQ_U64(s->c[i].last_ts, 1099);
		}
	}
	CHECK_EQ_U64(big_seen, 1);
	CHECK(odd_chunks >= 1);
	CHECK_EQ_U64(meta_chunks, 1);
	CHECK_STR(frec_chunk_type_name(0x0e), "unknown");

	/* the big record comes back byte-identical */
	struct frec_reader *r;
	CHECK(frec_open(path, &r, &err) == 0);
	const struct fr_file_hdr *fh = frec_file_header(r);
	CHECK_EQ_U64(fh->start_mono_ns, 123);
	CHECK_EQ_U64(fh->start_real_ns, 456);
	CHECK(fh->host[0] != 0); /* uname's node name */
	CHECK_STR(frec_cmdline(r), "");
	struct frec_chunk c;
	while (frec_next_chunk(r, &c, &err) == 1) {
		if (c.hdr.chunk_type != FR_CHUNK_EVENTS)
			continue;
		size_t cur = 0;
		const struct fr_rec_hdr *rec;
		CHECK(frec_chunk_next_record(r, &c, &cur, &rec) == 1);
		CHECK_EQ_U64(rec->size, big);
		int same = 1;
		for (uint32_t i = 8; i < big; i++)
			same &= ((const uint8_t *)rec)[i] == (uint8_t)(i * 7);
		CHECK(same);
	}
	frec_close(r);
}

int main(void)
{
	test_codecs();
	test_abandon();
	test_mixed_builders();
	return check_finish();
}
