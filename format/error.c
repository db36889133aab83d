/* Filling and formatting struct frec_error: library code reports failures
 * through it and never prints; main() decides what the user sees. */
#include "frec_error.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void frec_error_set(struct frec_error *err, const char *where, int64_t offset,
		    int code, const char *fmt, ...)
{
	if (!err)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->what, sizeof(err->what), fmt, ap);
	va_end(ap);
	snprintf(err->where, sizeof(err->where), "%s", where ? where : "");
	err->offset = offset;
	err->code = code;
}

const char *frec_write_error_name(int code)
{
	switch (code) {
	case ENOSPC: return "disk full";
	case EDQUOT: return "disk quota exceeded";
	case EIO: return "I/O error";
	case EFBIG: return "file too large";
	default: return strerror(code);
	}
}

const char *frec_error_str(const struct frec_error *err, char *buf, size_t len)
{
	if (!buf || !len)
		return "";
	if (!err) {
		snprintf(buf, len, "no error");
		return buf;
	}
	const char *sep = err->where[0] ? ": " : "";
	if (err->offset >= 0)
		snprintf(buf, len, "%s%soffset %" PRId64 ": %s", err->where, sep,
			 err->offset, err->what);
	else
		snprintf(buf, len, "%s%s%s", err->where, sep, err->what);
	return buf;
}
