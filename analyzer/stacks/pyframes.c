/* Python code objects and line numbers for dwarf-mode stacks; see
 * pyframes.h.  The two line-table walkers follow CPython's own
 * (Objects/codeobject.c: 3.10 advance() over (sdelta, ldelta) pairs; 3.11+
 * advance() over the location table) and are checked against
 * code.co_lines()/co_positions() of real interpreters by
 * tests/unit/test_analyzer_pyframes.c.  The code objects themselves are
 * decode/py_codes.c's.  Not for naming native frames. */
#include "pyframes.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- line tables -------------------------------------------------------- */

/* 3.10: each (sdelta, ldelta) byte pair is the address range [end, end +
 * sdelta) bytes with line += ldelta, or no line when ldelta is -128 (the
 * running line then does not change). */
static int32_t line_310(uint32_t firstlineno, const uint8_t *lt, size_t len, uint32_t addr)
{
	int64_t line = firstlineno;
	uint64_t start, end = 0;
	for (size_t i = 0; i + 1 < len; i += 2) {
		int8_t ldelta = (int8_t)lt[i + 1];
		start = end;
		end = start + lt[i];
		int no_line = ldelta == -128;
		if (!no_line)
			line += ldelta;
		if (addr >= start && addr < end)
			return no_line || line <= 0 || line > INT32_MAX ? 0 : (int32_t)line;
	}
	return 0;
}

/* 3.11+ varints: 6 bits per byte, bit 6 = more, low bits first. */
static int read_varint(const uint8_t *lt, size_t len, size_t *at, uint32_t *out)
{
	uint32_t val = 0;
	for (unsigned shift = 0; *at < len && shift < 32; shift += 6) {
		uint8_t b = lt[(*at)++];
		val |= (uint32_t)(b & 63) << shift;
		if (!(b & 64)) {
			*out = val;
			return 0;
		}
	}
	return -1;
}

static int read_svarint(const uint8_t *lt, size_t len, size_t *at, int32_t *out)
{
	uint32_t u;
	if (read_varint(lt, len, at, &u))
		return -1;
	*out = (u & 1) ? -(int32_t)(u >> 1) : (int32_t)(u >> 1);
	return 0;
}

/* 3.11+ location table: entries start with a byte with bit 7 set; code =
 * (b >> 3) & 15, length = (b & 7) + 1 code units (2 bytes each).  Codes
 * 0-9: short form, same line; 10-12: line += code - 10; 13: no columns,
 * svarint line delta; 14: long form, svarint line delta then end line
 * delta, column and end column varints; 15: no location. */
static int32_t line_311(uint32_t firstlineno, const uint8_t *lt, size_t len, uint32_t addr)
{
	int64_t line = firstlineno;
	uint64_t end = 0;
	size_t at = 0;
	while (at < len) {
		uint8_t b = lt[at];
		if (!(b & 0x80))
			return 0; /* not at an entry: a damaged table */
		int code = (b >> 3) & 15;
		uint64_t start = end;
		end = start + ((uint64_t)(b & 7) + 1) * 2;
		at++;
		int32_t delta = 0;
		if (code == 13 || code == 14) {
			if (read_svarint(lt, len, &at, &delta))
				return 0;
		} else if (code >= 10 && code <= 12) {
			delta = code - 10;
		}
		line += delta;
		/* skip the rest of the entry (columns): up to the next entry byte */
		while (at < len && !(lt[at] & 0x80))
			at++;
		if (addr >= start && addr < end)
			return code == 15 || line <= 0 || line > INT32_MAX ? 0 : (int32_t)line;
	}
	return 0;
}

int32_t py_line_at(uint16_t py_version, uint32_t firstlineno, const uint8_t *linetable,
		   size_t linetable_len, uint32_t instr_off)
{
	/* A frame that has not executed its first instruction: prev_instr is
	 * one code unit before co_code_adaptive (CPython: addrq < 0 gives
	 * co_firstlineno). */
	if (instr_off >= 0x80000000u)
		return firstlineno <= INT32_MAX ? (int32_t)firstlineno : 0;
	if (!linetable)
		return 0;
	if (py_version < 311)
		return line_310(firstlineno, linetable, linetable_len, instr_off);
	return line_311(firstlineno, linetable, linetable_len, instr_off);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash && slash[1] ? slash + 1 : path;
}

char *py_frame_name(const struct py_code *c, uint32_t instr_off, char *buf, size_t len)
{
	if (!c) {
		snprintf(buf, len, "[unknown python]");
		return buf;
	}
	int32_t line = py_line_at(c->py_version, c->firstlineno, c->linetable, c->linetable_len,
				  instr_off);
	const char *name = c->qualname[0] ? c->qualname : "[unnamed]";
	const char *file = c->filename[0] ? base_name(c->filename) : "?";
	if (line > 0)
		snprintf(buf, len, "%.300s (%.200s:%d)", name, file, (int)line);
	else
		snprintf(buf, len, "%.300s (%.200s)", name, file);
	return buf;
}
