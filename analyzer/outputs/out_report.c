/* The HTML report writer (see out_report.h): the page shell.  The page is
 *   head: CSP meta, title, flame.css + report.css
 *   body: <script type="application/json" id="fr-data"> the sections' data
 *         <script> flame.js wrapped as a mount function </script>
 *         <script> report.js </script>
 * This file writes the shell, the embedded assets and the sections in
 * their order; each section's JSON is in its own out_report_*.c (see
 * out_report_sections.h).  Every string from a trace goes through
 * out_json_str (which escapes < > & and quotes, so nothing can end the
 * script element) or out_html_text.  Not for drawing: report.js does that. */
#include "out_report.h"
#include "out_common.h"
#include "out_report_sections.h"
#include "recorder_cmdline.h"
#include "trace_set.h"

#include <errno.h>

#include "flame_web.h"  /* generated: flame_web_js, flame_web_css */
#include "report_web.h" /* generated: report_web_js, report_web_css */

int out_report_write(FILE *f, const struct out_report_input *in, struct frec_error *err)
{
	struct trace_set *ts = in->ts;
	const struct trace_file *f0 = trace_set_file(ts, 0);
	char title[400];
	/* the job's command, not the recorder's whole line around it */
	snprintf(title, sizeof(title), "flightrec report: %s%s",
		 f0 && f0->cmdline[0] ? recorder_job_command(f0->cmdline) : f0 ? f0->path : "",
		 trace_set_count(ts) > 1 ? " (+ more files)" : "");
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      /* nothing may be fetched: not scripts, styles, images, fonts, nor connections */
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	      "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; "
	      "connect-src 'none'; form-action 'none'; base-uri 'none'\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	      "<title>", f);
	out_html_text(f, title);
	fputs("</title>\n<style>\n", f);
	fputs(flame_web_css, f);
	fputs("\n", f);
	fputs(report_web_css, f);
	fputs("</style>\n</head>\n<body class=\"fr-report\">\n"
	      "<noscript><p class=\"fr-warn\">This report is drawn by JavaScript, which is "
	      "disabled.</p></noscript>\n"
	      "<main id=\"fr-root\"></main>\n"
	      "<script type=\"application/json\" id=\"fr-data\">{\"title\":", f);
	out_json_str(f, title);
	fputs(",\n", f);
	report_section_summary(f, ts);
	fputs(",\n", f);
	report_section_findings(f, in->findings);
	fputs(",\n", f);
	int rc = report_section_cpu(f, ts, in->data);
	fputs(",\n", f);
	if (!rc)
		rc = report_section_mem(f, ts, in);
	fputs(",\n", f);
	if (!rc)
		rc = report_section_cuda(f, ts, in->data, in->cuda, in->cuda_time);
	fputs(",\n", f);
	if (!rc)
		rc = report_section_stragglers(f, ts, in->stragglers);
	fputs(",\n", f);
	report_section_rdma(f, in->rdma);
	fputs(",\n", f);
	if (!rc)
		rc = report_section_syscalls(f, ts, in->syscalls);
	fputs(",\n", f);
	report_section_presence(f, in->data);
	fputs("}</script>\n<script>\nwindow.FR_FLAME_MOUNT = function (window, document) {\n", f);
	fputs(flame_web_js, f);
	fputs("\n};\n</script>\n<script>\n", f);
	fputs(report_web_js, f);
	fputs("</script>\n</body>\n</html>\n", f);
	if (!rc && (fflush(f) || ferror(f)))
		rc = -EIO;
	if (rc)
		frec_error_set(err, "report", -1, -rc, "%s", rc == -ENOMEM ? "out of memory" : "write failed");
	return rc;
}
