/* The small error struct library code fills; only main() prints and exits. */
#ifndef FLIGHTREC_ERROR_H
#define FLIGHTREC_ERROR_H

#include <stddef.h>
#include <stdint.h>

struct frec_error {
	char what[256];   /* one line, no trailing newline, names the fix if any */
	char where[256];  /* file name (or pid/symbol) */
	int64_t offset;   /* file offset, -1 when not applicable */
	int code;         /* errno-style, 0 when none */
};

void frec_error_set(struct frec_error *err, const char *where, int64_t offset,
		    int code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* What a failed write means for a recording: "disk full" (ENOSPC), "disk
 * quota exceeded", "I/O error", "file too large"; strerror otherwise. */
const char *frec_write_error_name(int code);

/* "FILE: offset N: WHAT" (or "FILE: WHAT") into buf. */
const char *frec_error_str(const struct frec_error *err, char *buf, size_t len);

#endif
