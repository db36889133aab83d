/* What the three user-facing writers (out_sqlite.c, out_timeline.c,
 * out_report.c) share: the one place that says how a file's clock maps to
 * the common (aligned) clock, how a process's rank is found, the names of
 * CUDA / NCCL / RDMA codes, a JSON string writer that is safe inside HTML,
 * and a table of live CUDA allocations (matched to their frees by file, pid
 * and pointer) for writers that stream memory in use.
 *
 * Not for analyses: anything that deserves a result struct is a model
 * (model_*.c).  The live-allocation table here only pairs raw events. */
#ifndef FLIGHTREC_OUT_COMMON_H
#define FLIGHTREC_OUT_COMMON_H

#define OUT_PROG "flightrec-analyze" /* how every message names the program */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "events.h"

struct trace_set;
struct fr_drop_count;
struct trace_file;

/* Common clock: aligned_ns = event ts (CLOCK_MONOTONIC of its node) +
 * out_clock_offset_ns(ts, file) = trace_set_time_offset_ns (align.h): UTC
 * nanoseconds since the epoch on the reference node's realtime clock.  Final
 * from the first event a model or output sees: the decoder reads every
 * CLOCK record in its metadata pass and runs its align stage before the
 * events pass (align.h), so streaming writers never correct a time. */
int64_t out_clock_offset_ns(struct trace_set *ts, size_t file_index);

/* The launcher rank of a process (RANK from FR_REC_PROC_ENV): 1 and *rank
 * when known, 0 when not.  The one place the writers ask. */
int out_process_rank(const struct trace_file *f, uint32_t pid, int64_t *rank);

/* Names; NULL when the code is unknown. */
const char *out_copy_kind_name(uint32_t kind);
const char *out_wc_status_name(uint32_t status);

/* "1.2 MiB", "512 B" */
const char *out_bytes(uint64_t bytes, char *buf, size_t len);
/* "12.345 s", "1.2 ms", "350 us", "12 ns" */
const char *out_duration(uint64_t ns, char *buf, size_t len);
/* ISO 8601 UTC with milliseconds: "2024-05-01T12:00:00.123Z" */
const char *out_iso_time(uint64_t realtime_ns, char *buf, size_t len);

/* JSON string literal: quotes included; everything outside printable ASCII
 * and every one of < > & ' escaped as \uXXXX, so the text can sit inside an
 * HTML <script> element; invalid UTF-8 becomes U+FFFD. */
void out_json_str(FILE *f, const char *s);
/* What one unit of a loss count is: "event" (an event lost whole),
 * "stack" (an event kept without its stack), or "qp_or_context" (rdma's
 * not_attached: QPs and contexts whose early work may be missing). */
const char *out_drop_unit(const struct fr_drop_count *d);
/* The file's losses per (probe, reason) as a JSON array: probe, reason,
 * count, lost (out_drop_unit), first_s/last_s (seconds since the
 * recording's start; null when the recorder could not tell). */
void out_json_losses(FILE *f, const struct trace_file *tf);
/* Text content for HTML, SVG or XML: markup characters and everything
 * outside ASCII as character references; invalid UTF-8 and characters XML
 * forbids (controls, U+FFFE/U+FFFF) become U+FFFD so the document stays
 * well-formed. */
void out_html_text(FILE *f, const char *s);

#endif
