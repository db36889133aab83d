/* Python frames of dwarf-mode stacks: the code objects of one trace file
 * (FR_REC_PYCODE: qualified name, file name, first line, line table per
 * (pid, code address)) and the line of an instruction offset, so a frame
 * walked in BPF (code, instr_off) reads "qualname (file.py:line)".
 *
 * Not for merging Python frames into native stacks (stack_merge.c) nor for
 * decoding records (trace_set.c checks their lengths and calls
 * py_table_add).  Everything stored here comes from a stranger's file: line
 * tables are walked with every byte bounds-checked, and a table that ends
 * early gives "no line", never a read past its end. */
#ifndef FLIGHTREC_PYFRAMES_H
#define FLIGHTREC_PYFRAMES_H

#include <stddef.h>
#include <stdint.h>

/* The line executing at instr_off (bytes from co_code_adaptive, as the BPF
 * walker reports it; 3.10: f_lasti * 2), or 0 when the table says "no
 * line" or does not cover the offset.  py_version picks the table format:
 * < 311 the 3.10 (sdelta, ldelta) pairs, else the 3.11+ location table.
 * An offset before the first instruction (a frame that has not started:
 * instr_off "negative" as u32) gives firstlineno, as CPython does. */
int32_t py_line_at(uint16_t py_version, uint32_t firstlineno, const uint8_t *linetable,
		   size_t linetable_len, uint32_t instr_off);

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

/* The frame name into buf: "qualname (file.py:line)", "qualname (file.py)"
 * when there is no line, "[unknown python]" when the trace does not name the code object.
 * file.py is the file name's last path component.  Returns buf. */
char *py_frame_name(const struct py_code *c, uint32_t instr_off, char *buf, size_t len);

#endif
