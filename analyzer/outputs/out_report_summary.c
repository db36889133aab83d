/* The report's first sections: what the traces are.  "summary": per file
 * its path, host, command, times, completeness, drops per probe, losses and
 * damaged regions, then the processes; "presence": how many events of each
 * family the traces hold, so the page can say why a section is empty.
 * Not for anything a model computes (the other out_report_*.c). */
#include "out_identity.h"
#include "out_report_sections.h"
#include "out_common.h"
#include "out_file_json.h"
#include "out_report_data.h"
#include "trace_set.h"

#include <inttypes.h>
#include <stdlib.h>

void report_section_summary(FILE *f, struct trace_set *ts)
{
	char b[64];
	fputs("\"summary\":{\"files\":[", f);
	for (size_t i = 0; i < trace_set_count(ts); i++) {
		const struct trace_file *tf = trace_set_file(ts, i);
		const struct fr_end *end = tf->reader ? frec_end(tf->reader) : NULL;
		/* to END, else the last event (info's duration also counts a later
		 * stats record) */
		uint64_t last = end ? end->end_mono_ns : tf->last_event_ns;
		fprintf(f, "%s{\"path\":", i ? "," : "");
		out_json_str(f, tf->path);
		fputs(",\"host\":", f);
		out_json_str(f, tf->hdr.host);
		fputs(",\"command\":", f);
		out_json_str(f, tf->cmdline);
		char where[256];
		out_identity_file_text(tf, where, sizeof(where));
		fputs(",\"ran_in\":", f);
		out_json_str(f, where);
		fprintf(f, ",\"start\":\"%s\",\"start_ns\":%" PRIu64 ",\"duration_ns\":%" PRIu64
			",\"events\":%" PRIu64 ",\"complete\":%s,\"status\":",
			out_iso_time(tf->hdr.start_real_ns, b, sizeof(b)), tf->hdr.start_real_ns,
			last > tf->hdr.start_mono_ns ? last - tf->hdr.start_mono_ns : 0, tf->events,
			trace_file_complete(tf) ? "true" : "false");
		out_file_status_json(f, tf);
		/* drops: END's counters, else the last STATS record (as info) */
		struct out_file_probes pr;
		out_file_probes_get(tf, &pr);
		fputs(",\"drops\":", f);
		out_file_probes_json(f, &pr, "probe");
		free(pr.probes);
		fputs(",\"losses\":", f);
		out_json_losses(f, tf);
		fputs(",\"damage\":", f);
		out_file_damage_json(f, tf, 100);
		size_t nd = tf->reader ? frec_damage_count(tf->reader) : 0;
		fprintf(f, ",\"damaged_regions\":%zu,\"malformed_records\":%" PRIu64 "}", nd, tf->n_problems);
	}
	fputs("],\"processes\":[", f);
	int first = 1;
	for (size_t i = 0; i < trace_set_count(ts); i++) {
		const struct trace_file *tf = trace_set_file(ts, i);
		for (size_t k = 0; k < tf->n_procs && k < 1000; k++) {
			const struct ts_process *p = &tf->procs[k];
			int64_t rank;
			fprintf(f, "%s{\"file\":%zu,\"pid\":%u,\"ppid\":%u,\"threads\":%u,\"rank\":", first ? "" : ",",
				i, p->pid, p->ppid, p->threads);
			if (out_process_rank(tf, p->pid, &rank))
				fprintf(f, "%" PRId64, rank);
			else
				fputs("null", f);
			fputs(",\"host\":", f);
			out_json_str(f, tf->hdr.host);
			fputs(",\"comm\":", f);
			out_json_str(f, p->comm);
			fputs(",\"cmdline\":", f);
			out_json_str(f, p->cmdline);
			fputs("}", f);
			first = 0;
		}
	}
	fputs("]}", f);
}

void report_section_presence(FILE *f, const struct report_data *d)
{
	fprintf(f, "\"presence\":{\"cpu_samples\":%" PRIu64 ",\"cuda_events\":%" PRIu64
		",\"cuda_alloc_events\":%" PRIu64 ",\"nccl_events\":%" PRIu64 ",\"rdma_events\":%" PRIu64
		",\"step_events\":%" PRIu64 "}",
		d ? d->cpu_samples : 0, d ? d->cuda_events : 0, d ? d->cuda_alloc_events : 0,
		d ? d->nccl_events : 0, d ? d->rdma_events : 0, d ? d->step_events : 0);
}
