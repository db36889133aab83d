/* The tar of a trace archive, written with libarchive: pax/ustar (ustar
 * headers, pax extensions only for what ustar cannot hold) compressed with
 * zstd.  Members are added in order from memory (the manifest) or from a
 * file descriptor (the traces), each with mode 0644, owner 0:0 and no user
 * or group name, so nothing about the sender leaks through the headers.
 * Not for the manifest's content (manifest.c) nor for reading archives
 * (decode/ts_archive.c). */
#ifndef FLIGHTREC_BUNDLE_WRITE_H
#define FLIGHTREC_BUNDLE_WRITE_H

#include <stddef.h>
#include <stdint.h>
#include "frec_error.h"
#include "sha256.h"

struct bundle;

/* Creates path, which must not exist (never through a link).  0, or -1
 * with err naming path. */
int bundle_open(const char *path, struct bundle **out, struct frec_error *err);
/* Appends a member holding len bytes of data. */
int bundle_add_bytes(struct bundle *b, const char *name, const void *data, size_t len,
		     struct frec_error *err);
/* Appends a member holding the first size bytes of fd (read with pread from
 * offset 0), and the SHA-256 of what it wrote into digest.  A file shorter
 * than size is an error naming src (what messages call the file). */
int bundle_add_fd(struct bundle *b, const char *name, int fd, uint64_t size, const char *src,
		  uint8_t digest[SHA256_DIGEST_BYTES], struct frec_error *err);
/* Ends the stream and closes the file: 0 only when every byte reached it.
 * b is freed either way; on failure the caller removes the file. */
int bundle_close(struct bundle *b, struct frec_error *err);

#endif
