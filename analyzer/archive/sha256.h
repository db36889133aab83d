/* SHA-256 (FIPS 180-4), small and dependency-free: the archive's manifest
 * digests and the redactor's keyed tokens (HMAC-SHA-256, redact.c).  Not
 * constant-time and not fast: it hashes trace files once and short strings
 * for tokens, nothing else. */
#ifndef FLIGHTREC_SHA256_H
#define FLIGHTREC_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_BYTES 32
#define SHA256_BLOCK_BYTES 64

struct sha256_ctx {
	uint32_t state[8];
	uint64_t total_bytes;          /* message length so far */
	uint8_t block[SHA256_BLOCK_BYTES];
	size_t block_len;              /* bytes waiting in block */
};

void sha256_init(struct sha256_ctx *ctx);
void sha256_update(struct sha256_ctx *ctx, const void *data, size_t n);
/* Writes the digest; ctx must be initialised again before reuse. */
void sha256_final(struct sha256_ctx *ctx, uint8_t out[SHA256_DIGEST_BYTES]);
/* One call: the digest of n bytes at data. */
void sha256(const void *data, size_t n, uint8_t out[SHA256_DIGEST_BYTES]);
/* 64 lowercase hex digits and a NUL, for the manifest. */
void sha256_hex(const uint8_t digest[SHA256_DIGEST_BYTES], char out[2 * SHA256_DIGEST_BYTES + 1]);
/* HMAC-SHA-256 (RFC 2104) of n bytes at data under key_len bytes of key. */
void hmac_sha256(const void *key, size_t key_len, const void *data, size_t n,
		 uint8_t out[SHA256_DIGEST_BYTES]);

#endif
