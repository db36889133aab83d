/* `findings --json`'s object, written once for the findings command
 * (cmd_findings.c) and the report's "findings" member
 * (out_report_findings.c), so the page shows exactly the numbers the CLI
 * prints.  The shape is /work/shared/CLI.md's (steps, wall_ms,
 * gpu_idle_ms, unexplained_ms, not_evaluated, findings) with the extra
 * fields steps_from, min_share and below.  Not for finding anything
 * (model_findings.h). */
#ifndef FLIGHTREC_OUT_FINDINGS_JSON_H
#define FLIGHTREC_OUT_FINDINGS_JSON_H

#include <stdio.h>

struct findings_result;

/* The object on one line, without a trailing newline. */
void out_findings_json(FILE *out, const struct findings_result *r);

#endif
