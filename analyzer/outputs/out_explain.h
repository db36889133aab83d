/* The layout of `explain`: one function's story (func_story.h) as text
 * or as one JSON object, written once for the CLI and the MCP server.
 * Not for finding anything: func_story.c does. */
#ifndef FLIGHTREC_OUT_EXPLAIN_H
#define FLIGHTREC_OUT_EXPLAIN_H

#include <stdio.h>

struct func_story;
struct findings_result;

/* Lists (callers, callees, CUDA calls, system calls, processes, frames)
 * keep their first top rows; the rest are counted. */
void out_explain_text(FILE *out, const struct func_story *s, const struct findings_result *fx,
		      size_t top);
/* The object on one line, with a trailing newline.  Keys: function, found,
 * samples, self, self_share, total, total_share, module, offset, source,
 * line, frames, callers, callees ([{name, samples, share}], share of every
 * sample), cuda {calls, total_ns, errors, functions:[{name, calls,
 * total_ns, errors}]}, syscalls (the same), gpu_memory {allocated_bytes,
 * allocated_total_bytes, inuse_at_peak_bytes, inuse_at_peak_total_bytes}
 * or null, findings [{number (as `findings` numbers them), kind, cost_ms, cost_ms_per_step, share}],
 * processes [{file, pid, rank, comm, samples, cuda_calls, cuda_ns,
 * syscalls}], left_out {list: rows not shown}, and candidates when not
 * found. */
void out_explain_json(FILE *out, const struct func_story *s, const struct findings_result *fx,
		      size_t top);

#endif
