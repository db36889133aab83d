/* libFuzzer target for the Python line tables and code-object table
 * (analyzer/stacks/pyframes.c): what a FR_REC_PYCODE record carries,
 * without the trace around it (fuzz_records reaches the same code through
 * records, much more slowly).  Input (little endian): u16 py_version, u32
 * firstlineno, u32 instr_off, u8 qualname_len, u8 filename_len, the two
 * names, then the line table.  The table is walked at the given offset and
 * at every code unit it can cover, in the input's format and in the other
 * one (3.10 pairs, 3.11+ location entries); the names go through
 * py_table_add (twice under one code address, the reuse case) and
 * py_frame_name.  Checks: no line is negative, names are NUL-terminated in
 * their buffer and printable. */
#include "pyframes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile int64_t sink;

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_pyframes: %s\n", what);
		abort();
	}
}

static void check_name(const char *buf, size_t len)
{
	size_t n = strnlen(buf, len);
	check(n < len, "frame name not terminated in its buffer");
	for (size_t i = 0; i < n; i++)
		check((unsigned char)buf[i] >= 0x20 && buf[i] != 0x7f, "control character in a name");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 12)
		return 0;
	uint16_t version;
	uint32_t first, off;
	memcpy(&version, data, 2);
	memcpy(&first, data + 2, 4);
	memcpy(&off, data + 6, 4);
	size_t ql = data[10], fl = data[11], at = 12;
	if (ql > size - at)
		ql = size - at;
	const char *qual = (const char *)data + at;
	at += ql;
	if (fl > size - at)
		fl = size - at;
	const char *file = (const char *)data + at;
	at += fl;
	/* the table in a buffer of its own size, so ASan sees a read past it */
	size_t lt_len = size - at;
	uint8_t *lt = malloc(lt_len ? lt_len : 1);
	if (!lt)
		return 0;
	memcpy(lt, data + at, lt_len);

	int64_t sum = py_line_at(version, first, lt, lt_len, off);
	check(sum >= 0, "negative line");
	uint16_t other = version < 311 ? 311 : 310;
	/* every code unit a table this long can describe (3.11+: up to 16 bytes
	 * per entry byte), and a little past; bounded so big inputs stay fast */
	size_t span = lt_len * 16 + 8;
	size_t step = span / 256 > 2 ? (span / 256) & ~(size_t)1 : 2;
	for (size_t a = 0; a <= span; a += step) {
		int64_t l1 = py_line_at(version, first, lt, lt_len, (uint32_t)a);
		int64_t l2 = py_line_at(other, first, lt, lt_len, (uint32_t)a);
		check(l1 >= 0 && l2 >= 0, "negative line");
		sum += l1 + l2;
	}
	sum += py_line_at(version, first, NULL, 0, off);
	sum += py_line_at(version, first, lt, lt_len, 0xfffffffeu);

	struct py_table *t = py_table_new();
	if (t) {
		/* two code objects at one address (freed and reused): the later
		 * record names frames recorded after it */
		py_table_add(t, 7, 0x1000, 10, version, first, qual, ql, file, fl, lt, lt_len);
		py_table_add(t, 7, 0x1000, 20, other, first ^ 1, file, fl, qual, ql, lt,
			     lt_len / 2);
		char buf[600], tiny[12];
		static const uint64_t seqs[] = { 0, 10, 15, 20, 30 };
		for (size_t i = 0; i < 5; i++) {
			const struct py_code *c = py_table_find(t, 7, 0x1000, seqs[i],
								(int32_t)(first & 0xffff));
			check(c != NULL, "code not found");
			check_name(py_frame_name(c, off, buf, sizeof(buf)), sizeof(buf));
			check_name(py_frame_name(c, off, tiny, sizeof(tiny)), sizeof(tiny));
			sum += (int64_t)strlen(buf);
		}
		check(py_table_find(t, 8, 0x1000, 10, -1) == NULL, "another pid's code found");
		check_name(py_frame_name(NULL, off, buf, sizeof(buf)), sizeof(buf));
		py_table_free(t);
	}
	free(lt);
	sink = sum;
	return 0;
}
