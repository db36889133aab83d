/* The report's "mem" section: GPU memory from model_mem: the peak and the
 * stacks holding it, in use over time per (process, device), leaks at the
 * end, failed allocations with who held the memory then, the in-use and
 * allocation flame graphs, and the in-use graphs of the time slider (the
 * second pass's states, one per instant).  Not for the ledger itself
 * (model_mem.c). */
#include "out_report_sections.h"
#include "cuda_funcs.h"
#include "model_cuda.h"
#include "model_mem.h"
#include "out_common.h"
#include "out_report.h"
#include "trace_set.h"

#include <inttypes.h>

#define MEM_CHART_SERIES 16
#define MEM_CHART_POINTS 600
#define MEM_SNAPSHOT_NODES 1500

static void series_label(char *buf, size_t len, struct trace_set *ts, const struct mem_series *se)
{
	char proc[256];
	report_process_label(proc, sizeof(proc), trace_set_file(ts, se->file), se->pid);
	if (se->space == MEM_SPACE_PINNED_HOST)
		snprintf(buf, len, "%s, pinned host", proc);
	else if (se->device >= 0)
		snprintf(buf, len, "%s, GPU %d", proc, se->device);
	else
		snprintf(buf, len, "%s, GPU ?", proc);
}

static void stack_bytes_json(FILE *f, struct trace_set *ts, uint32_t file,
			     const struct mem_stack_bytes *sb, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		fputs(k ? ",{\"stack\":" : "{\"stack\":", f);
		report_stack_json(f, ts, file, sb[k].stack_id);
		fprintf(f, ",\"bytes\":%" PRIu64 ",\"count\":%" PRIu64 "}", sb[k].bytes, sb[k].count);
	}
}

int report_section_mem(FILE *f, struct trace_set *ts, const struct out_report_input *in)
{
	const struct mem_result *r = in->mem ? model_mem_result(in->mem) : NULL;
	fputs("\"mem\":", f);
	if (!r || !r->mem_events) {
		fputs("null", f);
		return 0;
	}
	/* the device peak: per file (one clock each); the largest one leads */
	uint64_t peak = 0, peak_t = 0;
	size_t peak_file = 0;
	for (size_t i = 0; i < r->n_files; i++)
		if (r->files[i].peak_bytes > peak) {
			peak = r->files[i].peak_bytes;
			peak_t = r->files[i].peak_t_ns;
			peak_file = i;
		}
	uint64_t leaks = 0, leak_count = 0;
	for (size_t i = 0; i < r->n_series; i++)
		if (r->series[i].space == MEM_SPACE_DEVICE) {
			leaks += r->series[i].end_bytes;
			leak_count += r->series[i].end_count;
		}
	fprintf(f, "{\"events\":%" PRIu64 ",\"device_allocs\":%" PRIu64 ",\"peak_bytes\":%" PRIu64
		",\"peak_t_ns\":%" PRIu64 ",\"peak_file\":%zu,\"files\":%zu,\"leak_bytes\":%" PRIu64
		",\"leak_count\":%" PRIu64 ",\"failures\":%" PRIu64 ",\"before_frees\":%" PRIu64
		",\"series\":[", r->mem_events, r->device_allocs, peak, peak_t, peak_file, r->n_files,
		leaks, leak_count, r->n_failures, r->before_frees);
	for (size_t i = 0; i < r->n_series; i++) {
		const struct mem_series *se = &r->series[i];
		char label[320];
		series_label(label, sizeof(label), ts, se);
		int caching = 0;
		for (size_t k = 0; k < r->n_procs; k++)
			if (r->procs[k].file == se->file && r->procs[k].pid == se->pid)
				caching = r->procs[k].caching_allocator;
		fputs(i ? ",{\"label\":" : "{\"label\":", f);
		out_json_str(f, label);
		fprintf(f, ",\"file\":%u,\"pid\":%u,\"device\":%d,\"space\":\"%s\",\"caching\":%s"
			",\"allocs\":%" PRIu64 ",\"alloc_bytes\":%" PRIu64 ",\"frees\":%" PRIu64
			",\"failed\":%" PRIu64 ",\"before_frees\":%" PRIu64 ",\"peak_bytes\":%" PRIu64
			",\"peak_t_ns\":%" PRIu64 ",\"end_bytes\":%" PRIu64 ",\"end_count\":%" PRIu64
			",\"top_at_peak\":[", se->file, se->pid, se->device,
			se->space == MEM_SPACE_DEVICE ? "device" : "pinned_host", caching ? "true" : "false",
			se->allocs, se->alloc_bytes, se->frees, se->failed_allocs, se->before_frees,
			se->peak_bytes, se->peak_t_ns, se->end_bytes, se->end_count);
		stack_bytes_json(f, ts, se->file, se->top_at_peak, se->n_top_at_peak);
		fputs("],\"leaks\":[", f);
		stack_bytes_json(f, ts, se->file, se->top_leaks, se->n_top_leaks);
		fputs("],\"points\":", f);
		if (i >= MEM_CHART_SERIES || se->space != MEM_SPACE_DEVICE) {
			fputs("null}", f);
			continue;
		}
		/* at most MEM_CHART_POINTS: the largest value of each group, and
		 * the exact peak */
		fputc('[', f);
		size_t group = (se->n_points + MEM_CHART_POINTS - 1) / MEM_CHART_POINTS;
		if (!group)
			group = 1;
		int first = 1, peak_done = 0;
		for (size_t k = 0; k < se->n_points; k += group) {
			size_t best = k;
			for (size_t j = k; j < k + group && j < se->n_points; j++)
				if (se->points[j].bytes > se->points[best].bytes)
					best = j;
			if (!peak_done && se->peak_t_ns <= se->points[best].t_ns) {
				if (se->peak_t_ns < se->points[best].t_ns ||
				    se->peak_bytes != se->points[best].bytes) {
					fprintf(f, "%s[%" PRIu64 ",%" PRIu64 "]", first ? "" : ",", se->peak_t_ns,
						se->peak_bytes);
					first = 0; /* else the point below is the peak */
				}
				peak_done = 1;
			}
			fprintf(f, "%s[%" PRIu64 ",%" PRIu64 "]", first ? "" : ",", se->points[best].t_ns,
				se->points[best].bytes);
			first = 0;
		}
		fputs("]}", f);
	}
	fputs("],\"failed\":[", f);
	for (size_t i = 0; i < r->n_failures_kept && i < 32; i++) {
		const struct mem_failure *fl = &r->failures[i];
		char proc[256], buf[32];
		report_process_label(proc, sizeof(proc), trace_set_file(ts, fl->file), fl->pid);
		const char *fn = cuda_func_name(fl->func);
		const char *en = cuda_error_name(fl->func, fl->error);
		if (!en) {
			snprintf(buf, sizeof(buf), "error %" PRId64, fl->error);
			en = buf;
		}
		fputs(i ? ",{\"process\":" : "{\"process\":", f);
		out_json_str(f, proc);
		fputs(",\"func\":", f);
		out_json_str(f, fn ? fn : "?");
		fputs(",\"error\":", f);
		out_json_str(f, en);
		fprintf(f, ",\"device\":%d,\"t_ns\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"inuse_bytes\":%" PRIu64
			",\"stack\":", fl->device, fl->t_ns, fl->bytes, fl->inuse_bytes);
		report_stack_json(f, ts, fl->file, fl->stack_id);
		fputs(",\"holders\":[", f);
		stack_bytes_json(f, ts, fl->file, fl->holders, fl->n_holders);
		fputs("]}", f);
	}
	fputs("],\"peak_tree\":", f);
	int rc = 0;
	char sub[160];
	if (r->inuse && flame_tree_total(r->inuse)) {
		snprintf(sub, sizeof(sub), "device bytes in use at the peak%s",
			 r->n_files > 1 ? " of each file" : "");
		rc = report_flame_json(f, r->inuse, "GPU memory in use at the peak", sub, "bytes",
				REPORT_FLAME_MAX_NODES);
	} else {
		fputs("null", f);
	}
	fputs(",\"alloc_tree\":", f);
	if (!rc && r->alloc && flame_tree_total(r->alloc))
		rc = report_flame_json(f, r->alloc, "GPU memory allocated (bytes per stack, whole run)",
				"every successful device allocation", "bytes", REPORT_FLAME_MAX_NODES);
	else
		fputs("null", f);
	fputs(",\"snapshots\":[", f);
	for (size_t k = 0; !rc && k < in->n_mem_snapshots; k++) {
		const struct mem_result *sr = model_mem_result(in->mem_snapshots[k]);
		uint64_t at = UINT64_MAX, bytes = 0;
		for (size_t i = 0; i < sr->n_files; i++) {
			if (sr->files[i].at_t_ns != UINT64_MAX && at == UINT64_MAX)
				at = sr->files[i].at_t_ns;
			bytes += sr->files[i].at_bytes;
		}
		if (at == UINT64_MAX)
			continue;
		char title[96];
		snprintf(title, sizeof(title), "GPU memory in use at %.3f s", (double)at / 1e9);
		snprintf(sub, sizeof(sub), "device bytes in use per stack at that instant");
		fprintf(f, "%s{\"t_ns\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"tree\":", k ? "," : "", at, bytes);
		if (sr->inuse && flame_tree_total(sr->inuse))
			rc = report_flame_json(f, sr->inuse, title, sub, "bytes", MEM_SNAPSHOT_NODES);
		else
			fputs("null", f);
		fputs("}", f);
	}
	fputs("]}", f);
	return rc;
}
