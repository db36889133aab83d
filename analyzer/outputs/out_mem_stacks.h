/* A GPU memory model's stack (model_mem.h, mem_stack_frames) printed: as
 * one line of text for the tables of `memory` and `cuda` and the report,
 * or as a JSON array for their --json.  Not for naming the frames: the
 * model does that, so a stack reads the same in the flame graph and here. */
#ifndef FLIGHTREC_OUT_MEM_STACKS_H
#define FLIGHTREC_OUT_MEM_STACKS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct trace_set;

/* The innermost max_frames frames, leaf first, joined by " <- " (with
 * " <- ..." when cut), for one-line text output. */
const char *mem_stack_line(struct trace_set *ts, uint32_t file, uint32_t stack_id,
			   size_t max_frames, char *buf, size_t len);
/* The frames as a JSON array of strings, root first. */
void mem_stack_json(struct trace_set *ts, uint32_t file, uint32_t stack_id, FILE *out);

#endif
