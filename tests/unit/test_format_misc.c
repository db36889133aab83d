/* Small pieces of the format library: CRC-32C against published vectors and
 * between its two implementations, the error struct, and the schema table
 * against the sizes of bpf/events.h. */
#include "check.h"
#include "frec_crc32c.h"
#include "frec_error.h"
#include "frec_reader.h"
#include "frec_schema.h"

static void test_crc(void)
{
	CHECK_EQ_U64(frec_crc32c(0, "123456789", 9), 0xE3069283u);
	CHECK_EQ_U64(frec_crc32c_sw(0, "123456789", 9), 0xE3069283u);
	CHECK_EQ_U64(frec_crc32c(0, "", 0), 0);
	uint8_t b[32];
	memset(b, 0, sizeof(b)); /* RFC 3720 B.4 vectors */
	CHECK_EQ_U64(frec_crc32c(0, b, 32), 0x8A9136AAu);
	memset(b, 0xff, sizeof(b));
	CHECK_EQ_U64(frec_crc32c(0, b, 32), 0x62A8AB43u);
	for (int i = 0; i < 32; i++)
		b[i] = (uint8_t)i;
	CHECK_EQ_U64(frec_crc32c(0, b, 32), 0x46DD794Eu);
	CHECK_EQ_U64(frec_crc32c_sw(0, b, 32), 0x46DD794Eu);

	/* chaining, and every alignment/length on both paths */
	static uint8_t big[3000];
	uint64_t x = 88172645463325252ull;
	for (size_t i = 0; i < sizeof(big); i++) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		big[i] = (uint8_t)x;
	}
	int same = 1;
	for (size_t off = 0; off < 9; off++)
		for (size_t len = 0; len < 300; len += 7) {
			uint32_t a = frec_crc32c(0, big + off, len);
			same &= a == frec_crc32c_sw(0, big + off, len);
			size_t half = len / 3;
			same &= a == frec_crc32c(frec_crc32c(0, big + off, half),
						 big + off + half, len - half);
		}
	CHECK(same);
	CHECK_EQ_U64(frec_crc32c(0, big, sizeof(big)), frec_crc32c_sw(0, big, sizeof(big)));
}

static void test_error(void)
{
	struct frec_error e;
	char buf[600];
	frec_error_set(&e, "run.frec", 4096, 5, "payload CRC mismatch (chunk seq %d)", 12);
	CHECK_STR(frec_error_str(&e, buf, sizeof(buf)),
		  "run.frec: offset 4096: payload CRC mismatch (chunk seq 12)");
	frec_error_set(&e, NULL, -1, 0, "no offset");
	CHECK_STR(frec_error_str(&e, buf, sizeof(buf)), "no offset");
	frec_error_set(&e, "f", -1, 0, "x");
	CHECK_STR(frec_error_str(&e, buf, sizeof(buf)), "f: x");
	frec_error_set(NULL, "f", 0, 0, "ignored"); /* must not crash */
	char tiny[4];
	CHECK_STR(frec_error_str(&e, tiny, sizeof(tiny)), "f: ");
}

/* Size in bytes of one schema field type, 0 for var, -1 when unknown. */
static long type_size(const char *t, size_t n)
{
	static const struct { const char *name; long size; } base[] = {
		{ "u8", 1 }, { "u16", 2 }, { "u32", 4 }, { "u64", 8 },
		{ "s32", 4 }, { "s64", 8 }, { "var", 0 },
	};
	for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
		if (strlen(base[i].name) == n && strncmp(t, base[i].name, n) == 0)
			return base[i].size;
	const char *br = memchr(t, '[', n);
	if (br && t[n - 1] == ']') {
		long elem = (br - t == 4 && strncmp(t, "char", 4) == 0) ? 1
			    : type_size(t, (size_t)(br - t));
		long count = strtol(br + 1, NULL, 10);
		return elem > 0 && count > 0 ? elem * count : -1;
	}
	return -1;
}

static void test_schema(void)
{
	size_t n;
	const struct frec_schema_entry *t = frec_schema_table(&n);
	static const uint16_t every_type[] = {
		FR_EV_CPU_SAMPLE, FR_EV_SYSCALL, FR_EV_PROC_FORK, FR_EV_PROC_EXEC,
		FR_EV_PROC_EXIT, FR_EV_CUDA, FR_EV_NCCL, FR_EV_RDMA_CTRL,
		FR_EV_RDMA_POST, FR_EV_RDMA_CQE, FR_EV_STEP,
		FR_REC_PROCESS, FR_REC_MAPPING, FR_REC_STACK, FR_REC_DSO,
		FR_REC_CLOCK, FR_REC_STATS, FR_REC_SCHEMA, FR_REC_THREAD,
		FR_REC_PROC_ENV, FR_REC_ATTACH, FR_REC_RDMA_COUNTERS,
		FR_REC_USTACK, FR_REC_UNWIND, FR_REC_PYCODE, FR_REC_PYTHON,
	};
	CHECK_EQ_U64(n, sizeof(every_type) / sizeof(every_type[0]));
	for (size_t i = 0; i < sizeof(every_type) / sizeof(every_type[0]); i++)
		CHECK(frec_schema_find(every_type[i]) != NULL);
	CHECK(frec_schema_find(0x7777) == NULL);
	for (size_t i = 0; i < n; i++) {
		CHECK(strlen(t[i].name) < 24);
		CHECK(t[i].fixed_size % 8 == 0);
		if (i)
			CHECK(t[i].rec_type > t[i - 1].rec_type);
		/* the fields cover the fixed part exactly, var part last */
		long sum = 8;
		int bad = 0, var_seen = 0;
		const char *p = t[i].desc;
		while (*p) {
			const char *colon = strchr(p, ':');
			const char *end = strchr(p, ',');
			if (!end)
				end = p + strlen(p);
			if (!colon || colon > end || var_seen) {
				bad = 1;
				break;
			}
			long sz = type_size(colon + 1, (size_t)(end - colon - 1));
			if (sz < 0)
				bad = 1;
			if (sz == 0)
				var_seen = 1;
			sum += sz > 0 ? sz : 0;
			p = *end ? end + 1 : end;
		}
		if (bad || sum != (long)t[i].fixed_size)
			fprintf(stderr, "  schema %s: fields sum to %ld, fixed_size %u\n",
				t[i].name, sum, t[i].fixed_size);
		CHECK(!bad && sum == (long)t[i].fixed_size);
	}
	CHECK_STR(frec_chunk_type_name(FR_CHUNK_EVENTS), "events");
	CHECK_STR(frec_chunk_type_name(FR_CHUNK_END), "end");
	CHECK_STR(frec_codec_name(FR_CODEC_ZLIB), "zlib");
	CHECK_STR(frec_codec_name(200), "unknown");
}

int main(void)
{
	test_crc();
	test_error();
	test_schema();
	return check_finish();
}
