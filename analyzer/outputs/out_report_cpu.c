/* The report's "cpu" section: the CPU-sample flame graphs, one of all
 * processes and one per busy process, from what out_report_data.c gathered.
 * Not for gathering the samples nor for pruning the trees (flame_render.c
 * does that, the same as `flame --format html`). */
#include "out_report_sections.h"
#include "out_common.h"
#include "out_report.h"
#include "out_report_data.h"
#include "trace_set.h"

#include <inttypes.h>

int report_section_cpu(FILE *f, struct trace_set *ts, const struct report_data *d)
{
	fputs("\"cpu\":", f);
	if (!d || !d->cpu_all) {
		fputs("null", f);
		return 0;
	}
	char sub[128];
	snprintf(sub, sizeof(sub), "%" PRIu64 " samples, %zu process%s", d->cpu_samples,
		 d->n_procs + d->procs_left_out, d->n_procs + d->procs_left_out == 1 ? "" : "es");
	fprintf(f, "{\"samples\":%" PRIu64 ",\"left_out\":%zu,\"trees\":[{\"label\":\"all processes\",\"data\":",
		d->cpu_samples, d->procs_left_out);
	int rc = report_flame_json(f, d->cpu_all, "CPU samples: all processes", sub, "samples",
				   2 * REPORT_FLAME_MAX_NODES);
	fputs("}", f);
	for (size_t i = 0; !rc && i < d->n_procs; i++) {
		const struct cpu_proc_tree *p = &d->procs[i];
		const struct trace_file *tf = trace_set_file(ts, p->file_index);
		char label[256], title[300];
		report_process_label(label, sizeof(label), tf, p->pid);
		snprintf(title, sizeof(title), "CPU samples: %s", label);
		snprintf(sub, sizeof(sub), "%" PRIu64 " samples", p->samples);
		fputs(",{\"label\":", f);
		out_json_str(f, label);
		fprintf(f, ",\"pid\":%u,\"file\":%u,\"samples\":%" PRIu64 ",\"data\":", p->pid,
			p->file_index, p->samples);
		rc = report_flame_json(f, p->tree, title, sub, "samples", REPORT_FLAME_MAX_NODES);
		fputs("}", f);
	}
	fputs("]}", f);
	return rc;
}
