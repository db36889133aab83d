/* The report's "findings" member, right after the summary: what to fix
 * first.  It is `findings --json`'s object exactly (out_findings_json.c:
 * findings with kind, cost in ms, per step and as a share, pids, where
 * root first, evidence, fix; GPU idle and its unexplained part per pid;
 * the kinds not evaluated and why), so the page and the CLI cannot
 * disagree; null when the findings model did not run.  Not for drawing
 * (web/report.js: renderFindings) nor for finding anything. */
#include "out_report_sections.h"
#include "model_findings.h"
#include "out_findings_json.h"

void report_section_findings(FILE *f, const void *model)
{
	fputs("\"findings\":", f);
	if (!model) {
		fputs("null", f);
		return;
	}
	out_findings_json(f, model_findings_result(model));
}
