/* The analyzer's unwinding of one trace file's raw stacks: a uw_process
 * (unwind/unwind.h) per pid of the file, made on first use from the file's
 * mappings that have an unwind image.  The recorder has no trace file to
 * read, so this part is not in the unwind library. */
#ifndef FLIGHTREC_UNWIND_TRACE_H
#define FLIGHTREC_UNWIND_TRACE_H

#include "unwind.h"

struct trace_file;
struct uw_trace;

struct uw_trace *uw_trace_new(const struct trace_file *f, struct uw_store *s);
void uw_trace_free(struct uw_trace *t);

/* Unwinds raw stack i of the store (see uw_unwind).  Processes are set up
 * on first use from the file's mappings of that pid that have an image. */
size_t uw_trace_unwind(struct uw_trace *t, size_t raw_index, struct uw_frame *out,
		       size_t max, enum uw_end *end);

/* Unwinds a stack that is not in the store (the decode pass resolves each
 * FR_REC_USTACK as it reads it and keeps no copy): r gives pid, tid, regs
 * and stack_len, stack the copied bytes (may be NULL). */
size_t uw_trace_unwind_raw(struct uw_trace *t, const struct uw_raw *r, const uint8_t *stack,
			   struct uw_frame *out, size_t max, enum uw_end *end);

#endif
