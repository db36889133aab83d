/* Python frames of dwarf-mode stacks: the line of an instruction offset
 * in a code object of the trace (decode/py_codes.h), so a frame walked in
 * BPF (code, instr_off) reads "qualname (file.py:line)".
 *
 * Not for merging Python frames into native stacks (stack_merge.c) nor for
 * keeping the code objects (py_codes.c).  Line tables come from a
 * stranger's file: they are walked with every byte bounds-checked, and a
 * table that ends early gives "no line", never a read past its end. */
#ifndef FLIGHTREC_PYFRAMES_H
#define FLIGHTREC_PYFRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "py_codes.h"

/* The line executing at instr_off (bytes from co_code_adaptive, as the BPF
 * walker reports it; 3.10: f_lasti * 2), or 0 when the table says "no
 * line" or does not cover the offset.  py_version picks the table format:
 * < 311 the 3.10 (sdelta, ldelta) pairs, else the 3.11+ location table.
 * An offset before the first instruction (a frame that has not started:
 * instr_off "negative" as u32) gives firstlineno, as CPython does. */
int32_t py_line_at(uint16_t py_version, uint32_t firstlineno, const uint8_t *linetable,
		   size_t linetable_len, uint32_t instr_off);

/* The frame name into buf: "qualname (file.py:line)", "qualname (file.py)"
 * when there is no line, "[unknown python]" when the trace does not name the code object.
 * file.py is the file name's last path component.  Returns buf. */
char *py_frame_name(const struct py_code *c, uint32_t instr_off, char *buf, size_t len);

#endif
