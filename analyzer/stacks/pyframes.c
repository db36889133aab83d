/* Python code objects and line numbers for dwarf-mode stacks; see
 * pyframes.h.  The two line-table walkers follow CPython's own
 * (Objects/codeobject.c: 3.10 advance() over (sdelta, ldelta) pairs; 3.11+
 * advance() over the location table) and are checked against
 * code.co_lines()/co_positions() of real interpreters by
 * tests/unit/test_analyzer_pyframes.c.  Not for naming native frames. */
#include "pyframes.h"
#include "hmap.h"

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

/* ---- the code table ----------------------------------------------------- */

struct py_table {
	struct py_code *codes;
	size_t n, cap;
	struct hmap latest; /* (pid, code) -> index of the latest record */
};

struct py_table *py_table_new(void)
{
	struct py_table *t = calloc(1, sizeof(*t));
	if (t)
		hmap_init(&t->latest);
	return t;
}

void py_table_free(struct py_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++) {
		free(t->codes[i].qualname);
		free(t->codes[i].filename);
		free(t->codes[i].linetable);
	}
	free(t->codes);
	hmap_free(&t->latest);
	free(t);
}

size_t py_table_count(const struct py_table *t)
{
	return t ? t->n : 0;
}

static char *printable_copy(const char *s, size_t len)
{
	char *out = malloc(len + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		out[i] = ch < 0x20 || ch == 0x7f || ch == ';' ? '?' : (char)ch;
	}
	out[len] = '\0';
	return out;
}

int py_table_add(struct py_table *t, uint32_t pid, uint64_t code, uint64_t seq,
		 uint16_t py_version, uint32_t firstlineno, const char *qualname,
		 size_t qualname_len, const char *filename, size_t filename_len,
		 const uint8_t *linetable, size_t linetable_len)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct py_code *grown = realloc(t->codes, cap * sizeof(*grown));
		if (!grown)
			return -1;
		t->codes = grown;
		t->cap = cap;
	}
	struct py_code c = {
		.pid = pid, .py_version = py_version, .code = code, .seq = seq,
		.firstlineno = firstlineno, .older = -1,
		.qualname = printable_copy(qualname, qualname_len),
		.filename = printable_copy(filename, filename_len),
		.linetable = malloc(linetable_len ? linetable_len : 1),
		.linetable_len = (uint32_t)linetable_len,
	};
	int created;
	uint64_t *slot = c.qualname && c.filename && c.linetable && linetable_len <= UINT32_MAX
		? hmap_slot(&t->latest, pid, code, &created) : NULL;
	if (!slot) {
		free(c.qualname);
		free(c.filename);
		free(c.linetable);
		return -1;
	}
	if (linetable_len)
		memcpy(c.linetable, linetable, linetable_len);
	if (!created)
		c.older = (int64_t)*slot;
	*slot = t->n;
	t->codes[t->n++] = c;
	return 0;
}

static const struct py_code *find_among(const struct py_table *t, uint64_t latest,
					 uint64_t seq, int32_t fingerprint)
{
	const struct py_code *after = NULL;
	for (int64_t k = (int64_t)latest; k >= 0 && (size_t)k < t->n; k = t->codes[k].older) {
		const struct py_code *c = &t->codes[k];
		if (fingerprint < 0 || (c->firstlineno & 0xffff) == (uint32_t)fingerprint) {
			if (c->seq <= seq)
				return c;
			after = c;
		}
		if (c->older >= k)
			break; /* never loops: older records have smaller indexes */
	}
	return after;
}

const struct py_code *py_table_find(const struct py_table *t, uint32_t pid, uint64_t code,
				    uint64_t seq, int32_t fingerprint)
{
	uint64_t i;
	if (!t || !hmap_get(&t->latest, pid, code, &i) || i >= t->n)
		return NULL;
	const struct py_code *c = fingerprint >= 0 ? find_among(t, i, seq, fingerprint) : NULL;
	return c ? c : find_among(t, i, seq, -1);
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
