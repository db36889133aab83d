/* Recovery from damaged traces: flipped bits in payloads and headers,
 * truncation at and between every chunk boundary, inserted garbage, a lost
 * chunk, malformed records under a valid CRC, broken compressed payloads,
 * and file headers the reader must refuse.  Every intact chunk must come
 * back and every damaged region must be reported exactly once. */
#include "test_format_util.h"
#include "frec_crc32c.h"

static struct tu_summary ref; /* the undamaged file */
static uint8_t *orig;
static size_t orig_len;

static const char *damaged_path(void)
{
	return tu_path("damaged.frec");
}

/* Scans buf written to disk. */
static const struct tu_summary *scan_buf(const uint8_t *buf, size_t len)
{
	tu_write_file(damaged_path(), buf, len);
	return tu_scan(damaged_path());
}

/* s returned exactly the reference chunks except skip (by seq; -1: none). */
static int same_chunks_except(const struct tu_summary *s, int64_t skip)
{
	size_t j = 0;
	for (size_t i = 0; i < ref.n; i++) {
		if ((int64_t)ref.c[i].seq == skip)
			continue;
		if (j >= s->n || s->c[j].seq != ref.c[i].seq ||
		    s->c[j].records_iterated != ref.c[i].records_iterated)
			return 0;
		j++;
	}
	return j == s->n;
}

static int what_has(const struct tu_summary *s, const char *needle)
{
	if (!strstr(s->first_damage.what, needle)) {
		fprintf(stderr, "  damage says \"%s\", expected \"%s\"\n",
			s->first_damage.what, needle);
		return 0;
	}
	return 1;
}

static void test_bit_flips(void)
{
	uint8_t *buf = malloc(orig_len);
	for (size_t k = 0; k < ref.n; k++) {
		const struct tu_chunk *c = &ref.c[k];
		/* payload bit */
		memcpy(buf, orig, orig_len);
		buf[c->offset + 64 + (c->span - 64) / 2] ^= 0x04;
		const struct tu_summary *s = scan_buf(buf, orig_len);
		CHECK(same_chunks_except(s, (int64_t)c->seq));
		CHECK_EQ_U64(s->damage, 1);
		CHECK_EQ_U64(s->first_damage.offset, c->offset);
		CHECK_EQ_U64(s->first_damage.length, c->span);
		CHECK(what_has(s, "payload CRC mismatch"));
		CHECK_EQ_U64(s->gaps, k + 1 < ref.n ? 1 : 0);
		CHECK_EQ_U64(s->has_end, c->type != FR_CHUNK_END);
		/* the INDEX (if it survived) notices the lost chunk */
		if (c->type != FR_CHUNK_INDEX && c->type != FR_CHUNK_END)
			CHECK_EQ_U64(s->missing, 1);

		/* header bits: a length field, then the magic */
		static const size_t hdr_bytes[] = { 20, 0, 59, 61 };
		for (size_t b = 0; b < 4; b++) {
			memcpy(buf, orig, orig_len);
			buf[c->offset + hdr_bytes[b]] ^= 0x01;
			s = scan_buf(buf, orig_len);
			CHECK(same_chunks_except(s, (int64_t)c->seq));
			CHECK_EQ_U64(s->damage, 1);
			CHECK_EQ_U64(s->first_damage.offset, c->offset);
			CHECK_EQ_U64(s->first_damage.length, c->span);
			CHECK(what_has(s, hdr_bytes[b] == 0 ? "bad magic"
						    : "chunk header CRC mismatch"));
		}
	}
	free(buf);
}

static void test_truncation(void)
{
	for (size_t k = 0; k <= ref.n; k++) {
		uint64_t boundary = k < ref.n ? ref.c[k].offset : orig_len;
		/* at a boundary: a clean prefix, nothing damaged */
		const struct tu_summary *s = scan_buf(orig, boundary);
		CHECK_EQ_U64(s->n, k);
		CHECK_EQ_U64(s->damage, 0);
		CHECK_EQ_U64(s->has_end, k == ref.n);
		for (size_t i = 0; i < s->n && i < k; i++)
			CHECK_EQ_U64(s->c[i].seq, ref.c[i].seq);
		if (k == ref.n)
			break;
		/* inside chunk k: in its header, and in its payload */
		const uint64_t cuts[] = { boundary + 10, boundary + 64,
					  boundary + ref.c[k].span / 2,
					  boundary + ref.c[k].span - 1 };
		for (size_t j = 0; j < 4; j++) {
			if (cuts[j] <= boundary || cuts[j] >= boundary + ref.c[k].span)
				continue;
			s = scan_buf(orig, cuts[j]);
			CHECK_EQ_U64(s->n, k);
			CHECK_EQ_U64(s->damage, 1);
			CHECK_EQ_U64(s->first_damage.offset, boundary);
			CHECK_EQ_U64(s->first_damage.length, cuts[j] - boundary);
			CHECK(what_has(s, "truncated"));
			CHECK(!s->has_end);
			uint64_t recs = 0;
			for (size_t i = 0; i < k; i++)
				recs += ref.c[i].type == FR_CHUNK_SCHEMA ? 0
					: ref.c[i].records_iterated;
			CHECK_EQ_U64(s->records, recs);
		}
	}
}

static void test_garbage(void)
{
	static const size_t sizes[] = { 37, 8, 4096 };
	uint8_t *buf = malloc(orig_len + 4096);
	for (size_t k = 1; k < ref.n; k += 3) {
		for (size_t g = 0; g < 3; g++) {
			size_t at = ref.c[k].offset, n = sizes[g];
			memcpy(buf, orig, at);
			for (size_t i = 0; i < n; i++)
				buf[at + i] = (uint8_t)tu_hash(i + k);
			if (n >= 8)
				memcpy(buf + at + n / 2 - 4, "FRCKFRCK", 8); /* fake magic */
			memcpy(buf + at + n, orig + at, orig_len - at);
			const struct tu_summary *s = scan_buf(buf, orig_len + n);
			CHECK(same_chunks_except(s, -1));
			CHECK_EQ_U64(s->damage, 1);
			CHECK_EQ_U64(s->first_damage.offset, at);
			CHECK_EQ_U64(s->first_damage.length, n);
			CHECK_EQ_U64(s->gaps, 0);
			CHECK(s->has_end);
			/* the INDEX offsets of every later chunk are now wrong */
			CHECK_EQ_U64(s->missing, k < ref.n - 2 ? ref.n - 2 - k : 0);
		}
	}
	free(buf);
}

static void test_lost_chunk(void)
{
	size_t k = 3;
	uint8_t *buf = malloc(orig_len);
	uint64_t at = ref.c[k].offset, span = ref.c[k].span;
	memcpy(buf, orig, at);
	memcpy(buf + at, orig + at + span, orig_len - at - span);
	const struct tu_summary *s = scan_buf(buf, orig_len - span);
	CHECK(same_chunks_except(s, (int64_t)k));
	CHECK_EQ_U64(s->gaps, 1);
	CHECK_EQ_U64(s->damage, 1); /* a silent loss is reported */
	CHECK_EQ_U64(s->first_damage.length, 0);
	CHECK(what_has(s, "sequence gap"));
	free(buf);
}

/* Rewrites the chunk at off with a new header (and payload) and fixes both
 * CRCs, as a buggy or hostile writer would. */
static void reseal(uint8_t *buf, uint64_t off, const struct fr_chunk_hdr *h_in)
{
	struct fr_chunk_hdr h = *h_in;
	h.payload_crc32c = frec_crc32c(0, buf + off + 64, h.stored_len);
	h.header_crc32c = frec_crc32c(0, &h, 60);
	memcpy(buf + off, &h, sizeof(h));
}

static void test_valid_crc_bad_content(void)
{
	/* A trace with codec none: patch records under a recomputed CRC. */
	const char *p = tu_path("none.frec");
	CHECK(tu_write_trace(p, FR_CODEC_NONE, 2000, 4096, 1) == 0);
	size_t len;
	uint8_t *buf = tu_read_file(p, &len);
	struct tu_summary good = *tu_scan(p);
	const struct tu_chunk *c = &good.c[2];
	CHECK_EQ_U64(c->codec, FR_CODEC_NONE);
	struct fr_chunk_hdr h;
	memcpy(&h, buf + c->offset, sizeof(h));

	/* second record's size made odd */
	uint8_t *copy = malloc(len);
	memcpy(copy, buf, len);
	uint32_t first_size;
	memcpy(&first_size, copy + c->offset + 64, 4);
	uint32_t bad = 13;
	memcpy(copy + c->offset + 64 + first_size, &bad, 4);
	reseal(copy, c->offset, &h);
	const struct tu_summary *s = scan_buf(copy, len);
	CHECK_EQ_U64(s->n, good.n);
	CHECK_EQ_U64(s->record_errors, 1);
	CHECK_EQ_U64(s->c[2].records_iterated, 1);
	CHECK_EQ_U64(s->damage, 1);
	CHECK(what_has(s, "malformed record"));

	/* a record size that runs past the payload */
	memcpy(copy, buf, len);
	bad = 1u << 30;
	memcpy(copy + c->offset + 64, &bad, 4);
	reseal(copy, c->offset, &h);
	s = scan_buf(copy, len);
	CHECK_EQ_U64(s->record_errors, 1);
	CHECK_EQ_U64(s->c[2].records_iterated, 0);

	/* record_count disagreeing with the records */
	memcpy(copy, buf, len);
	struct fr_chunk_hdr h2 = h;
	h2.record_count++;
	reseal(copy, c->offset, &h2);
	s = scan_buf(copy, len);
	CHECK_EQ_U64(s->record_errors, 1);
	CHECK(what_has(s, "header says"));

	/* an unknown codec: skipped by its trusted length */
	memcpy(copy, buf, len);
	h2 = h;
	h2.codec = 7;
	reseal(copy, c->offset, &h2);
	s = scan_buf(copy, len);
	CHECK_EQ_U64(s->n, good.n - 1);
	CHECK(what_has(s, "unknown codec 7"));

	/* stored_len != raw_len with codec none */
	memcpy(copy, buf, len);
	h2 = h;
	h2.raw_len += 8;
	reseal(copy, c->offset, &h2);
	s = scan_buf(copy, len);
	CHECK_EQ_U64(s->n, good.n - 1);
	CHECK_EQ_U64(s->damage, 1);
	CHECK_EQ_U64(s->first_damage.length, c->span);

	/* END claiming more probes than it holds */
	const struct tu_chunk *e = &good.c[good.n - 1];
	CHECK_EQ_U64(e->type, FR_CHUNK_END);
	memcpy(copy, buf, len);
	struct fr_chunk_hdr he;
	memcpy(&he, copy + e->offset, sizeof(he));
	uint32_t np = 1000;
	memcpy(copy + e->offset + 64 + offsetof(struct fr_end, n_probes), &np, 4);
	reseal(copy, e->offset, &he);
	s = scan_buf(copy, len);
	CHECK(!s->has_end);
	CHECK(what_has(s, "END n_probes"));

	/* INDEX whose size does not match its count */
	const struct tu_chunk *ix = &good.c[good.n - 2];
	CHECK_EQ_U64(ix->type, FR_CHUNK_INDEX);
	memcpy(copy, buf, len);
	memcpy(&he, copy + ix->offset, sizeof(he));
	he.record_count--;
	reseal(copy, ix->offset, &he);
	s = scan_buf(copy, len);
	CHECK(s->has_end);
	CHECK(what_has(s, "INDEX payload"));
	free(copy);
	free(buf);
}

/* Compressed payloads that are wrong under a correct CRC. */
static void test_bad_compressed(void)
{
	const int codecs[] = { FR_CODEC_ZSTD, FR_CODEC_ZLIB };
	const char *names[] = { "zstd: ", "zlib: " };
	for (int ci = 0; ci < 2; ci++) {
		const char *p = tu_path("comp.frec");
		CHECK(tu_write_trace(p, codecs[ci], 3000, 65536, 1) == 0);
		size_t len;
		uint8_t *buf = tu_read_file(p, &len);
		struct tu_summary good = *tu_scan(p);
		const struct tu_chunk *c = &good.c[1];
		CHECK_EQ_U64(c->codec, codecs[ci]);
		struct fr_chunk_hdr h;
		memcpy(&h, buf + c->offset, sizeof(h));
		uint8_t *copy = malloc(len);

		/* a broken stream header */
		memcpy(copy, buf, len);
		for (uint32_t i = 0; i < 4; i++)
			copy[c->offset + 64 + i] ^= 0x5a;
		reseal(copy, c->offset, &h);
		const struct tu_summary *s = scan_buf(copy, len);
		CHECK_EQ_U64(s->n, good.n - 1);
		CHECK_EQ_U64(s->damage, 1);
		CHECK(what_has(s, names[ci]));

		/* garbage inside the stream: zstd frames carry no checksum of
		 * their own (the payload CRC is the check), so the damage may
		 * only show in the records; either way it is reported */
		memcpy(copy, buf, len);
		for (uint32_t i = h.stored_len / 3; i < h.stored_len / 3 + 64; i++)
			copy[c->offset + 64 + i] ^= 0x5a;
		reseal(copy, c->offset, &h);
		s = scan_buf(copy, len);
		CHECK(s->damage >= 1);
		CHECK(s->n == good.n - 1 || s->record_errors == 1);

		/* raw_len smaller and larger than the stream's output */
		for (int d = -1; d <= 1; d += 2) {
			memcpy(copy, buf, len);
			struct fr_chunk_hdr h2 = h;
			h2.raw_len = (uint32_t)((int64_t)h.raw_len + d * 8);
			reseal(copy, c->offset, &h2);
			s = scan_buf(copy, len);
			CHECK_EQ_U64(s->n, good.n - 1);
			CHECK(what_has(s, names[ci]));
		}
		/* stream cut short (stored_len shrunk, padding realigned) */
		memcpy(copy, buf, len);
		struct fr_chunk_hdr h3 = h;
		h3.stored_len = h.stored_len / 2;
		reseal(copy, c->offset, &h3);
		s = scan_buf(copy, len);
		CHECK_EQ_U64(s->n, good.n - 1);
		CHECK(s->damage >= 1);
		CHECK(what_has(s, names[ci]));
		free(copy);
		free(buf);
	}
}

static void test_file_header(void)
{
	uint8_t *buf = malloc(orig_len);
	struct frec_reader *r;
	struct frec_error err;
	const char *p = damaged_path();

	tu_write_file(p, orig, 100);
	CHECK(frec_open(p, &r, &err) < 0 && r == NULL);
	CHECK(strstr(err.what, "not a flightrec trace") != NULL);
	CHECK_STR(err.where, p);

	memcpy(buf, orig, orig_len);
	buf[0] = 'X';
	tu_write_file(p, buf, orig_len);
	CHECK(frec_open(p, &r, &err) < 0);
	CHECK(strstr(err.what, "bad magic") != NULL);

	memcpy(buf, orig, orig_len);
	buf[8] = 2; /* version_major 2 */
	buf[10] = 0; /* version_minor 0 */
	buf[11] = 0;
	tu_write_file(p, buf, orig_len);
	CHECK(frec_open(p, &r, &err) < 0);
	CHECK(strstr(err.what, "version 2.0") != NULL);

	memcpy(buf, orig, orig_len);
	buf[50] ^= 1; /* in host */
	tu_write_file(p, buf, orig_len);
	CHECK(frec_open(p, &r, &err) < 0);
	CHECK(strstr(err.what, "file header CRC mismatch") != NULL);

	memcpy(buf, orig, orig_len);
	uint32_t huge = 1u << 30;
	memcpy(buf + 36, &huge, 4); /* cmdline_len */
	tu_write_file(p, buf, orig_len);
	CHECK(frec_open(p, &r, &err) < 0);
	CHECK(strstr(err.what, "cmdline_len") != NULL);

	char b[700];
	frec_error_str(&err, b, sizeof(b));
	CHECK(strncmp(b, p, strlen(p)) == 0);

	CHECK(frec_open(tu_path("does-not-exist"), &r, &err) < 0);
	CHECK_EQ_U64(err.code, ENOENT);

	/* just the header: a valid, empty, incomplete trace */
	const struct tu_summary *s = scan_buf(orig, ref.c[0].offset);
	CHECK_EQ_U64(s->open_rc, 0);
	CHECK_EQ_U64(s->n, 0);
	CHECK(!s->has_end);
	free(buf);
}

int main(void)
{
	const char *p = tu_path("ref.frec");
	/* 1 KiB-ish records in 4 KiB chunks: a dozen-odd chunks */
	CHECK(tu_write_trace(p, FR_CODEC_ZSTD, 1500, 16384, 1) == 0);
	orig = tu_read_file(p, &orig_len);
	ref = *tu_scan(p);
	CHECK(ref.n >= 12 && ref.n < 200);
	CHECK_EQ_U64(ref.damage, 0);
	CHECK(ref.has_end);
	test_bit_flips();
	test_truncation();
	test_garbage();
	test_lost_chunk();
	test_valid_crc_bad_content();
	test_bad_compressed();
	test_file_header();
	free(orig);
	return check_finish();
}
