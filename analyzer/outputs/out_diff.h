/* The layout of `diff`: two recordings compared (trace_diff.h), as text
 * or one JSON object, for the CLI and the MCP server alike.  Not for
 * comparing anything: trace_diff.c does. */
#ifndef FLIGHTREC_OUT_DIFF_H
#define FLIGHTREC_OUT_DIFF_H

#include <stddef.h>
#include <stdio.h>

struct trace_diff;

/* Each list keeps its first top rows (the rest counted); stacks show
 * their innermost DIFF_STACK_FRAMES frames as frame_pick.h picks them. */
#define DIFF_STACK_FRAMES 6
void out_diff_text(FILE *out, const struct trace_diff *d, size_t top);
/* One line with a trailing newline; keys in `diff --help`. */
void out_diff_json(FILE *out, const struct trace_diff *d, size_t top);

#endif
