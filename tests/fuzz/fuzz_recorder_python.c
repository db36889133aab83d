/* libFuzzer target: the recorder's CPython readers (recorder/inspect/python_parse.c)
 * on bytes a traced process controls.  Each input is used whole, every way
 * the recorder uses what it reads:
 *   - as the interpreter's file: ELF facts (_PyRuntime, Py_Version, the
 *     PT_LOAD of two mapping offsets), then Py_Version and 3.13's
 *     _Py_DebugOffsets read at the file offsets the facts give, as
 *     python.c reads them;
 *   - as memory: a code object's fields and a str object's header and
 *     text, for every version's layout, and a file name's version.
 * The checks catch what would reach the trace or the BPF walker wrong: an
 * offset no CPython has, text that is not UTF-8 or overruns its buffer, a
 * str longer than the recorder reads. */
#include "inspect/python_parse.h"

#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_recorder_python: %s\n", what);
	abort();
}

/* Strict UTF-8: no overlong form, surrogate or code point past U+10FFFF. */
static int valid_utf8(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned c = s[i], need;
		uint32_t cp;
		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			need = 1, cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			need = 2, cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			need = 3, cp = c & 0x07;
		} else {
			return 0;
		}
		if (i + need >= n)
			return 0; /* cut short */
		for (unsigned k = 1; k <= need; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		static const uint32_t min[4] = {0, 0x80, 0x800, 0x10000};
		if (cp < min[need] || cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000))
			return 0;
		i += need + 1;
	}
	return 1;
}

static void check_offsets(const struct py_offsets *o)
{
	const uint32_t v[] = {o->interp_head, o->threads_head, o->ts_next, o->ts_frame,
			      o->ts_thread_id, o->fr_previous, o->fr_code, o->fr_instr,
			      o->fr_entry, o->code_adaptive, o->code_firstlineno};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (v[i] >= PY_OFFSET_MAX)
			fail("an offset no CPython has reached the walker's table");
}

static void as_file(const uint8_t *data, size_t size)
{
	/* libelf may write to what elf_memory gets: a copy, sized exactly */
	char *copy = malloc(size ? size : 1);
	if (!copy)
		return;
	memcpy(copy, data, size);
	Elf *e = elf_memory(copy, size);
	static const uint64_t pgoffs[] = {0, 0x1000};
	for (size_t k = 0; e && k < sizeof(pgoffs) / sizeof(pgoffs[0]); k++) {
		struct py_elf_facts f;
		if (py_elf_facts_read(e, pgoffs[k], &f))
			break;
		if (f.py_version_off && f.py_version_off <= size && size - f.py_version_off >= 4) {
			unsigned v = py_version_from_hex(data + f.py_version_off, 4, 312);
			if (v != 312 && (v < 300 || v > 300 + 255))
				fail("Py_Version gave a version that is not 3.x");
		}
		if (f.runtime_off && f.runtime_off <= size &&
		    size - f.runtime_off >= PY_DEBUG_OFFSETS_LEN) {
			struct py_offsets o = {0};
			if (py_debug_offsets_parse(data + f.runtime_off, PY_DEBUG_OFFSETS_LEN, &o) == 0)
				check_offsets(&o);
		}
	}
	if (e)
		elf_end(e);
	free(copy);
}

static void as_memory(const uint8_t *data, size_t size)
{
	static const unsigned versions[] = {310, 311, 312, 313};
	static char text[4096];
	struct py_offsets o = {0};

	if (py_debug_offsets_parse(data, size, &o) == 0)
		check_offsets(&o);
	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		const struct py_code_offsets *co = py_code_offsets(versions[v]);
		struct py_code_fields cf;
		struct py_str_layout l;
		(void)py_code_fields_parse(data, size, co, &cf);
		if (py_str_layout_parse(data, size, co, &l))
			continue;
		if (!l.length || l.length > PY_STR_MAX_CHARS ||
		    (l.width != 1 && l.width != 2 && l.width != 4))
			fail("a str layout the recorder does not read was accepted");
		/* the text as python.c reads it: length * width bytes at data_off
		 * (here: what the input has there), into the resolver's buffer */
		size_t at = l.data_off < size ? (size_t)l.data_off : size;
		size_t want = l.length * l.width, have = size - at < want ? size - at : want;
		uint8_t *raw = malloc(have ? have : 1);
		if (!raw)
			return;
		memcpy(raw, data + at, have);
		size_t cap = (size_t)(data[0] % 8 == 0 ? 3 : sizeof(text));
		size_t n = py_str_to_utf8(raw, have, l.width, text, cap);
		free(raw);
		if (n > cap)
			fail("str text overran its buffer");
		if (!valid_utf8((const unsigned char *)text, n))
			fail("str text is not UTF-8");
	}
	/* a file name: the input up to its first NUL */
	char *name = malloc(size + 1);
	if (!name)
		return;
	memcpy(name, data, size);
	name[size] = 0;
	unsigned version = py_version_from_name(name);
	if (version && (version < 300 || version >= 400))
		fail("a name gave a version that is not 3.x");
	free(name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	if (!init) {
		elf_version(EV_CURRENT);
		init = 1;
	}
	if (!size)
		return 0;
	as_file(data, size);
	as_memory(data, size);
	return 0;
}
