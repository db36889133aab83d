/* What `stragglers --json` (cmd_stragglers.c) and the report's stragglers
 * section (out_report_stragglers.c) both write of model_stragglers'
 * result, written once: a measure that may be unknown, and the verdict's
 * causes (the frames and system calls that set the straggler apart).  The
 * objects around them keep each consumer's keys: the CLI's shape is fixed
 * by its users' scripts, the report's by web/report.js.  Not for finding
 * stragglers (model_stragglers.c). */
#ifndef FLIGHTREC_OUT_STRAGGLERS_JSON_H
#define FLIGHTREC_OUT_STRAGGLERS_JSON_H

#include <stdio.h>

struct straggler_verdict;

/* v with fmt, or null when v is negative (unknown). */
void strag_json_num(FILE *out, double v, const char *fmt);
/* "frames":[{"name","share","others_share"}...],"syscalls":[{"name",
 * "calls","ms_per_step","others_ms_per_step"}...] of a found verdict. */
void strag_json_causes(FILE *out, const struct straggler_verdict *v);

#endif
