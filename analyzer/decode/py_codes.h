/* The Python code objects of one trace file (FR_REC_PYCODE: qualified
 * name, file name, first line, line table per (pid, code address)), kept
 * by the metadata pass and read by the stacks stage (pyframes.h) to name
 * frames.  Not for decoding records (ts_meta.c checks their lengths and
 * calls py_table_add).  Everything stored comes from a stranger's file:
 * names are copied printable. */
#ifndef FLIGHTREC_PY_CODES_H
#define FLIGHTREC_PY_CODES_H

#include <stddef.h>
#include <stdint.h>

struct py_code {
	uint32_t pid;
	uint16_t py_version;
	uint64_t code;        /* PyCodeObject address in pid */
	uint64_t seq;         /* record order in the file */
	uint32_t firstlineno;
	char *qualname;       /* printable, never NULL */
	char *filename;       /* printable, never NULL */
	uint8_t *linetable;
	uint32_t linetable_len;
	int64_t older;        /* index of the previous record of (pid, code), -1 */
};

struct py_table;

struct py_table *py_table_new(void);
void py_table_free(struct py_table *t);

/* Keeps one FR_REC_PYCODE (lengths already checked by the caller; bytes are
 * copied).  A code address may be reused after the object is freed, so
 * every record is kept; see py_table_find.  -1 when memory runs out. */
int py_table_add(struct py_table *t, uint32_t pid, uint64_t code, uint64_t seq,
		 uint16_t py_version, uint32_t firstlineno, const char *qualname,
		 size_t qualname_len, const char *filename, size_t filename_len,
		 const uint8_t *linetable, size_t linetable_len);

/* The record of (pid, code) that describes a frame of a stack recorded at
 * file order `seq`.  fingerprint (the frame's co_firstlineno & 0xffff, -1
 * when unknown) picks among the records of a reused address; among the
 * candidates, the latest one written at or before seq wins, else (the
 * recorder names a code object after it first sees it) the earliest one
 * after.  NULL when the trace has none. */
const struct py_code *py_table_find(const struct py_table *t, uint32_t pid, uint64_t code,
				    uint64_t seq, int32_t fingerprint);

size_t py_table_count(const struct py_table *t);

#endif
