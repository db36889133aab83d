/* What the recorder reads about a CPython interpreter from a traced
 * process, as bytes: the interpreter file's name, ELF symbols, Py_Version
 * and (3.13+) _Py_DebugOffsets, and from its memory the code objects and
 * str objects that name Python frames.  The job writes all of it, so every
 * function here checks each length and offset before it reads, and what
 * it cannot trust it refuses (no Python frames) rather than guesses.  No
 * I/O: python.c reads the file and the memory; tests/fuzz/
 * fuzz_recorder_python.c feeds these functions arbitrary bytes. */
#ifndef FLIGHTREC_PYTHON_PARSE_H
#define FLIGHTREC_PYTHON_PARSE_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

#include "python_abi.h"

/* "python3.11", "libpython3.11.so.1.0" -> 311; "python3" -> 300 (read the
 * version from the binary); 0 when the name is not an interpreter's. */
unsigned py_version_from_name(const char *path);

struct py_elf_facts {
	uint64_t runtime_vaddr;   /* _PyRuntime, 0 when absent */
	uint64_t py_version_off;  /* file offset of Py_Version, 0 when absent */
	uint64_t runtime_off;     /* file offset of _PyRuntime's initial bytes, 0: none */
	uint64_t exec_seg_vaddr;  /* vaddr of file offset pgoff in its PT_LOAD */
	int found_seg;            /* a PT_LOAD holds file offset pgoff */
};

/* Reads the facts of the interpreter file e (mapped at file offset pgoff);
 * 0, or -1 when e is not ELF. */
int py_elf_facts_read(Elf *e, uint64_t pgoff, struct py_elf_facts *f);

/* The version Py_Version's 4 bytes say (3.x -> 300 + x), else by_name. */
unsigned py_version_from_hex(const uint8_t *bytes, size_t len, unsigned by_name);

/* 3.13+: _Py_DebugOffsets at the start of _PyRuntime's initial bytes. */
#define PY_DEBUG_OFFSETS_LEN 352
/* An offset beyond this is no CPython struct's: the table is refused. */
#define PY_OFFSET_MAX 65536u
/* Fills the walker's offsets of o from buf; 0, or -1 when buf is short, not
 * "xdebugpy", or holds an offset no CPython has (o then unchanged). */
int py_debug_offsets_parse(const uint8_t *buf, size_t len, struct py_offsets *o);

/* Code-object fields the resolver reads, per version. */
struct py_code_offsets {
	uint32_t firstlineno, filename, name, qualname, linetable;
	uint32_t ascii_data;   /* data of a compact ASCII str */
	uint32_t compact_data; /* data of a compact non-ASCII str */
};
/* How many bytes of a code object py_code_fields_parse reads. */
#define PY_CODE_READ_LEN 160
const struct py_code_offsets *py_code_offsets(unsigned version);

struct py_code_fields {
	uint32_t firstlineno;
	uint64_t filename, qualname, linetable; /* object addresses, 0: none */
};
/* 0, or -1 when obj[0..len) does not hold every field co names. */
int py_code_fields_parse(const uint8_t *obj, size_t len, const struct py_code_offsets *co,
			 struct py_code_fields *out);

/* A str object's header (PyASCIIObject) and what it says of its text. */
#define PY_STR_HEADER_LEN 40
#define PY_STR_MAX_CHARS 4096  /* longer: not an identifier or a path */
struct py_str_layout {
	uint64_t data_off;  /* where the characters are, from the object */
	size_t length;      /* characters, 1..PY_STR_MAX_CHARS */
	unsigned width;     /* bytes per character: 1, 2 or 4 */
};
/* 0, or -1 when hdr[0..len) is not a compact str flightrec reads. */
int py_str_layout_parse(const uint8_t *hdr, size_t len, const struct py_code_offsets *co,
			struct py_str_layout *out);
/* Characters raw[0..raw_len) of width bytes each as UTF-8 into out[0..cap):
 * whole characters only, a code point that is none (a surrogate, past
 * U+10FFFF) as U+FFFD.  The bytes written. */
size_t py_str_to_utf8(const uint8_t *raw, size_t raw_len, unsigned width, char *out,
		      size_t cap);

/* A bytes object's ob_size (the line table's length): its 8 bytes at 16. */
#define PY_BYTES_SIZE_OFF 16
#define PY_BYTES_DATA_OFF 32

#endif
