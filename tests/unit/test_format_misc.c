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

static void test_names(void)
{
	CHECK_STR(frec_chunk_type_name(FR_CHUNK_EVENTS), "events");
	CHECK_STR(frec_chunk_type_name(FR_CHUNK_END), "end");
	CHECK_STR(frec_codec_name(FR_CODEC_ZLIB), "zlib");
	CHECK_STR(frec_codec_name(200), "unknown");
}

int main(void)
{
	test_crc();
	test_error();
	test_names();
	return check_finish();
}
