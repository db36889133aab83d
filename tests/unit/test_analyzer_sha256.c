/* analyzer/archive/sha256.c against the FIPS 180-2 appendix B vectors
 * ("abc", the 448-bit message, a million 'a'), fed whole and in uneven
 * pieces, and HMAC-SHA-256 against RFC 4231 test cases 1, 2 and 6. */
#include "check.h"
#include "sha256.h"

static void check_digest(const uint8_t digest[SHA256_DIGEST_BYTES], const char *want_hex)
{
	char hex[2 * SHA256_DIGEST_BYTES + 1];
	sha256_hex(digest, hex);
	CHECK_STR(hex, want_hex);
}

static void check_vector(const char *msg, const char *want_hex)
{
	uint8_t digest[SHA256_DIGEST_BYTES];
	size_t n = strlen(msg);
	sha256(msg, n, digest);
	check_digest(digest, want_hex);
	/* the same message in pieces of 1, 2, 3, ... bytes */
	struct sha256_ctx ctx;
	sha256_init(&ctx);
	for (size_t off = 0, step = 1; off < n; off += step, step++)
		sha256_update(&ctx, msg + off, step < n - off ? step : n - off);
	sha256_final(&ctx, digest);
	check_digest(digest, want_hex);
}

static void test_fips_vectors(void)
{
	check_vector("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	check_vector("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		     "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	check_vector("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	/* 55, 56 and 64 bytes: the padding's edge cases */
	char buf[65];
	memset(buf, 'a', 64);
	buf[55] = '\0';
	check_vector(buf, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
	buf[55] = 'a';
	buf[56] = '\0';
	check_vector(buf, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
	buf[56] = 'a';
	buf[64] = '\0';
	check_vector(buf, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

static void test_million_a(void)
{
	static char chunk[1000];
	memset(chunk, 'a', sizeof(chunk));
	struct sha256_ctx ctx;
	sha256_init(&ctx);
	for (int i = 0; i < 1000; i++)
		sha256_update(&ctx, chunk, sizeof(chunk));
	uint8_t digest[SHA256_DIGEST_BYTES];
	sha256_final(&ctx, digest);
	check_digest(digest, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void test_hmac(void)
{
	uint8_t mac[SHA256_DIGEST_BYTES];
	uint8_t key[131];
	memset(key, 0x0b, 20);
	hmac_sha256(key, 20, "Hi There", 8, mac);
	check_digest(mac, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
	hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, mac);
	check_digest(mac, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	/* a key longer than the block is hashed first */
	memset(key, 0xaa, sizeof(key));
	const char *msg = "Test Using Larger Than Block-Size Key - Hash Key First";
	hmac_sha256(key, sizeof(key), msg, strlen(msg), mac);
	check_digest(mac, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

int main(void)
{
	test_fips_vectors();
	test_million_a();
	test_hmac();
	return check_finish();
}
