/* The HTML report writer (see out_report.h).  The page is
 *   head: CSP meta, title, flame.css + report.css
 *   body: <script type="application/json" id="fr-data"> the sections' data
 *         <script> flame.js wrapped as a mount function </script>
 *         <script> report.js </script>
 * Every string from a trace goes through out_json_str (which escapes < > &
 * and quotes, so nothing can end the script element) or out_html_text.
 * Not for drawing: report.js does that. */
#include "out_report.h"
#include "cli.h"
#include "flame_tree.h"
#include "hmap.h"
#include "model_cuda.h"
#include "model_mem.h"
#include "model_nccl.h"
#include "model_rdma.h"
#include "model_stragglers.h"
#include "model_syscalls.h"
#include "out_common.h"
#include "out_report_data.h"
#include "syscall_names.h"
#include "trace_set.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "flame_web.h"  /* generated: flame_web_js, flame_web_css */
#include "report_web.h" /* generated: report_web_js, report_web_css */

#define TOP_SYSCALLS 20

/* ---- flame trees as the renderer's JSON (names, pre-order nodes) ------- */

static size_t walk(const struct flame_tree *t, uint64_t threshold, uint32_t *order)
{
	size_t n = 0;
	if (order)
		order[n] = 0;
	n++;
	uint32_t i = flame_tree_node(t, 0)->first_child;
	while (i) {
		const struct flame_node *node = flame_tree_node(t, i);
		if (node->total >= threshold) {
			if (order)
				order[n] = i;
			n++;
			if (node->first_child) {
				i = node->first_child;
				continue;
			}
		}
		while (i && !flame_tree_node(t, i)->next_sibling)
			i = flame_tree_node(t, i)->parent;
		if (i)
			i = flame_tree_node(t, i)->next_sibling;
	}
	return n;
}

static int cmp_u64_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

static int flame_json(FILE *f, const struct flame_tree *t, const char *title, const char *subtitle,
		      const char *unit, size_t max_nodes)
{
	uint64_t total = flame_tree_total(t);
	uint64_t threshold = total / 10000 ? total / 10000 : 1; /* 0.01% */
	size_t n = walk(t, threshold, NULL);
	if (n > max_nodes) {
		uint32_t *tmp = malloc(n * sizeof(*tmp));
		uint64_t *totals = malloc(n * sizeof(*totals));
		if (!tmp || !totals) {
			free(tmp);
			free(totals);
			return -ENOMEM;
		}
		walk(t, threshold, tmp);
		for (size_t k = 1; k < n; k++)
			totals[k - 1] = flame_tree_node(t, tmp[k])->total;
		qsort(totals, n - 1, sizeof(*totals), cmp_u64_desc);
		threshold = totals[max_nodes - 1] + 1;
		free(tmp);
		free(totals);
		n = walk(t, threshold, NULL);
	}
	uint32_t *order = malloc(n * sizeof(*order));
	uint32_t *pos = malloc(flame_tree_count(t) * sizeof(*pos));
	uint32_t *name_idx = malloc(n * sizeof(*name_idx));
	struct hmap names;
	hmap_init(&names);
	int rc = 0;
	if (!order || !pos || !name_idx) {
		rc = -ENOMEM;
		goto out;
	}
	walk(t, threshold, order);
	size_t omitted = flame_tree_count(t) - n;
	fputs("{\"title\":", f);
	out_json_str(f, title);
	fputs(",\"subtitle\":", f);
	out_json_str(f, subtitle);
	fprintf(f, ",\"unit\":\"%s\",\"total\":%" PRIu64 ",\"omitted\":%zu,\"omittedBelow\":%" PRIu64
		",\"names\":[", unit, total, omitted, omitted ? threshold : 0);
	uint64_t n_names = 0;
	for (size_t k = 0; k < n; k++) {
		const struct flame_node *node = flame_tree_node(t, order[k]);
		int created;
		uint64_t *v = hmap_slot(&names, (uint64_t)(uintptr_t)node->name, 0, &created);
		if (!v) {
			rc = -ENOMEM;
			goto out;
		}
		if (created) {
			*v = n_names++;
			if (*v)
				fputc(',', f);
			out_json_str(f, node->name);
		}
		name_idx[k] = (uint32_t)*v;
	}
	fputs("],\"nodes\":[", f);
	for (size_t k = 0; k < n; k++) {
		const struct flame_node *node = flame_tree_node(t, order[k]);
		pos[order[k]] = (uint32_t)k;
		fprintf(f, "%s%u,%u,%" PRIu64, k ? "," : "", k ? pos[node->parent] : 0u, name_idx[k],
			node->total);
	}
	fputs("]}", f);
out:
	hmap_free(&names);
	free(order);
	free(pos);
	free(name_idx);
	return rc;
}

/* ---- sections: each writes one member of the data object --------------- */

static void process_label(char *buf, size_t len, const struct trace_file *f, uint32_t pid)
{
	const struct ts_process *p = trace_file_process(f, pid);
	int64_t rank;
	int n = 0;
	if (out_process_rank(f, pid, &rank))
		n = snprintf(buf, len, "rank %" PRId64 ": ", rank);
	snprintf(buf + n, len - (size_t)n, "%s (pid %u) on %s", p && p->comm[0] ? p->comm : "process",
		 pid, f->hdr.host[0] ? f->hdr.host : "?");
}

static void section_summary(FILE *f, struct trace_set *ts)
{
	char b[64];
	fputs("\"summary\":{\"files\":[", f);
	for (size_t i = 0; i < trace_set_count(ts); i++) {
		const struct trace_file *tf = trace_set_file(ts, i);
		const struct fr_end *end = tf->reader ? frec_end(tf->reader) : NULL;
		uint64_t last = end ? end->end_mono_ns : tf->last_event_ns;
		char trouble[512];
		trace_file_trouble(tf, trouble, sizeof(trouble));
		fprintf(f, "%s{\"path\":", i ? "," : "");
		out_json_str(f, tf->path);
		fputs(",\"host\":", f);
		out_json_str(f, tf->hdr.host);
		fputs(",\"command\":", f);
		out_json_str(f, tf->cmdline);
		fprintf(f, ",\"start\":\"%s\",\"start_ns\":%" PRIu64 ",\"duration_ns\":%" PRIu64
			",\"events\":%" PRIu64 ",\"complete\":%s,\"status\":",
			cli_iso_time(tf->hdr.start_real_ns, b, sizeof(b)), tf->hdr.start_real_ns,
			last > tf->hdr.start_mono_ns ? last - tf->hdr.start_mono_ns : 0, tf->events,
			trace_file_complete(tf) ? "true" : "false");
		out_json_str(f, trouble[0] ? trouble : "intact");
		/* drops: END's counters, else the last STATS record */
		fputs(",\"drops\":[", f);
		uint32_t n = 0;
		const struct fr_probe_stats *ps = end ? frec_end_probes(tf->reader, &n) : NULL;
		int first = 1;
		for (uint32_t k = 0; ps && k < n; k++) {
			char name[17];
			memcpy(name, ps[k].name, 16);
			name[16] = '\0';
			fprintf(f, "%s{\"probe\":", first ? "" : ",");
			out_json_str(f, name);
			fprintf(f, ",\"events\":%" PRIu64 ",\"drops\":%" PRIu64 "}", ps[k].events, ps[k].drops);
			first = 0;
		}
		for (uint32_t k = 0; !ps && tf->has_stats && k < tf->n_stats_probes; k++) {
			fprintf(f, "%s{\"probe\":", first ? "" : ",");
			out_json_str(f, tf->stats_probes[k].name);
			fprintf(f, ",\"events\":%" PRIu64 ",\"drops\":%" PRIu64 "}",
				tf->stats_probes[k].events, tf->stats_probes[k].drops);
			first = 0;
		}
		fputs("],\"losses\":", f);
		out_json_losses(f, tf);
		fputs(",\"damage\":[", f);
		size_t nd = tf->reader ? frec_damage_count(tf->reader) : 0;
		for (size_t k = 0; k < nd && k < 100; k++) {
			const struct frec_damage *d = frec_damage_at(tf->reader, k);
			char what[161];
			snprintf(what, sizeof(what), "%.160s", d->what);
			fprintf(f, "%s{\"offset\":%" PRIu64 ",\"length\":%" PRIu64 ",\"what\":", k ? "," : "",
				d->offset, d->length);
			out_json_str(f, what);
			fputs("}", f);
		}
		fprintf(f, "],\"damaged_regions\":%zu,\"malformed_records\":%" PRIu64 "}", nd, tf->n_problems);
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

static int section_cpu(FILE *f, struct trace_set *ts, const struct report_data *d)
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
	int rc = flame_json(f, d->cpu_all, "CPU samples: all processes", sub, "samples", 2 * REPORT_FLAME_MAX_NODES);
	fputs("}", f);
	for (size_t i = 0; !rc && i < d->n_procs; i++) {
		const struct report_proc_tree *p = &d->procs[i];
		const struct trace_file *tf = trace_set_file(ts, p->file_index);
		char label[256], title[300];
		process_label(label, sizeof(label), tf, p->pid);
		snprintf(title, sizeof(title), "CPU samples: %s", label);
		snprintf(sub, sizeof(sub), "%" PRIu64 " samples", p->samples);
		fputs(",{\"label\":", f);
		out_json_str(f, label);
		fprintf(f, ",\"pid\":%u,\"file\":%u,\"samples\":%" PRIu64 ",\"data\":", p->pid,
			p->file_index, p->samples);
		rc = flame_json(f, p->tree, title, sub, "samples", REPORT_FLAME_MAX_NODES);
		fputs("}", f);
	}
	fputs("]}", f);
	return rc;
}

/* A number or null (negative: unknown). */
static void num_or_null(FILE *f, double v, const char *fmt)
{
	if (v < 0)
		fputs("null", f);
	else
		fprintf(f, fmt, v);
}

static void stack_str(FILE *f, struct trace_set *ts, uint32_t file, uint32_t stack_id)
{
	char buf[1024];
	out_json_str(f, mem_stack_line(ts, file, stack_id, 12, buf, sizeof(buf)));
}

/* The event-based table (report_data): used when no CUDA model ran, and
 * for copies per cudaMemcpyKind, which the model does not keep. */
static void cuda_kinds(FILE *f, const struct report_data *d)
{
	fputs("\"kinds\":[", f);
	int first = 1;
	for (unsigned k = 0; d && k < 6; k++) {
		const struct report_copy_kind *ck = &d->copies[k];
		if (!ck->calls)
			continue;
		fprintf(f, "%s{\"kind\":\"%s\",\"calls\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"total_ns\":%" PRIu64 "}",
			first ? "" : ",", k < 5 ? out_copy_kind_name(k) : "unknown", ck->calls, ck->bytes,
			ck->total_ns);
		first = 0;
	}
	fputs("]", f);
}

static void section_cuda(FILE *f, struct trace_set *ts, const struct report_data *d,
			 const void *cuda_model)
{
	const struct cuda_result *r = cuda_model ? model_cuda_result(cuda_model) : NULL;
	fputs("\"cuda\":", f);
	if (r && r->events) {
		fprintf(f, "{\"events\":%" PRIu64 ",\"source\":\"model\",\"threads\":%zu,\"funcs\":[",
			r->events, r->threads);
		for (size_t i = 0; i < r->n_rows; i++) {
			const struct cuda_api_row *c = &r->rows[i];
			fputs(i ? ",{\"name\":" : "{\"name\":", f);
			out_json_str(f, c->name);
			fprintf(f, ",\"calls\":%" PRIu64 ",\"failed\":%" PRIu64 ",\"total_ns\":%" PRIu64
				",\"self_ns\":%" PRIu64 ",\"min_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64
				",\"p50_ns\":%" PRIu64 ",\"p99_ns\":%" PRIu64 ",\"errors\":[",
				c->count, c->errors, c->total_ns, c->self_ns, c->min_ns, c->max_ns, c->p50_ns,
				c->p99_ns);
			for (size_t k = 0; k < c->n_codes; k++) {
				const char *en = cuda_error_name(c->func, c->codes[k].code);
				char buf[32];
				if (!en) {
					snprintf(buf, sizeof(buf), "error %" PRId64, c->codes[k].code);
					en = buf;
				}
				fprintf(f, "%s{\"name\":", k ? "," : "");
				out_json_str(f, en);
				fprintf(f, ",\"count\":%" PRIu64 "}", c->codes[k].count);
			}
			fputs("]}", f);
		}
		fputs("],\"copies\":[", f);
		for (size_t i = 0; i < r->n_copies; i++) {
			const struct cuda_copy_row *c = &r->copies[i];
			fprintf(f, "%s{\"dir\":\"%s\",\"host\":\"%s\",\"mode\":\"%s\",\"calls\":%" PRIu64
				",\"bytes\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"inferred\":%" PRIu64 "}",
				i ? "," : "", cuda_dir_name(c->dir), cuda_host_name(c->host),
				c->mode == CUDA_MODE_ASYNC ? "async" : "sync", c->count, c->bytes, c->time_ns,
				c->inferred);
		}
		fprintf(f, "],\"async_then_sync\":%" PRIu64 ",\"async_then_sync_ns\":%" PRIu64
			",\"sync_gap_ns\":%llu,\"sync_stacks\":[", r->async_then_sync, r->async_then_sync_ns,
			(unsigned long long)CUDA_SYNC_GAP_NS);
		for (size_t i = 0; i < r->n_sync_stacks && i < 10; i++) {
			const struct cuda_sync_stack *st = &r->sync_stacks[i];
			char label[256];
			process_label(label, sizeof(label), trace_set_file(ts, st->file), st->pid);
			fputs(i ? ",{\"process\":" : "{\"process\":", f);
			out_json_str(f, label);
			fputs(",\"stack\":", f);
			stack_str(f, ts, st->file, st->stack_id);
			fprintf(f, ",\"count\":%" PRIu64 ",\"sync_ns\":%" PRIu64 ",\"bytes\":%" PRIu64 "}",
				st->count, st->sync_ns, st->bytes);
		}
		fputs("],", f);
		cuda_kinds(f, d);
		fputs("}", f);
		return;
	}
	if (!d || !d->cuda_events) {
		fputs("null", f);
		return;
	}
	fprintf(f, "{\"events\":%" PRIu64 ",\"source\":\"events\",\"funcs\":[", d->cuda_events);
	for (size_t i = 0; i < d->n_cuda; i++) {
		const struct report_cuda_func *c = &d->cuda[i];
		const char *name = cuda_func_name((uint16_t)c->func);
		char unknown[32];
		if (!name) {
			snprintf(unknown, sizeof(unknown), "cuda_func_%u", c->func);
			name = unknown;
		}
		fprintf(f, "%s{\"name\":\"%s\",\"calls\":%" PRIu64 ",\"failed\":%" PRIu64 ",\"total_ns\":%" PRIu64
			",\"max_ns\":%" PRIu64 ",\"p50_ns\":%" PRIu64 ",\"p99_ns\":%" PRIu64 ",\"bytes\":%" PRIu64 "}",
			i ? "," : "", name, c->calls, c->failed, c->total_ns, c->max_ns,
			report_hist_quantile(c->hist, c->calls, 0.5),
			report_hist_quantile(c->hist, c->calls, 0.99), c->bytes);
	}
	fputs("],\"copies\":[", f);
	int first = 1;
	for (unsigned k = 0; k < 6; k++) {
		const struct report_copy_kind *ck = &d->copies[k];
		if (!ck->calls)
			continue;
		fprintf(f, "%s{\"kind\":\"%s\",\"calls\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"total_ns\":%" PRIu64 "}",
			first ? "" : ",", k < 5 ? out_copy_kind_name(k) : "unknown", ck->calls, ck->bytes,
			ck->total_ns);
		first = 0;
	}
	fputs("]}", f);
}

/* ---- GPU memory ---------------------------------------------------------- */

#define MEM_CHART_SERIES 16
#define MEM_CHART_POINTS 600
#define MEM_SNAPSHOT_NODES 1500

static void series_label(char *buf, size_t len, struct trace_set *ts, const struct mem_series *se)
{
	char proc[256];
	process_label(proc, sizeof(proc), trace_set_file(ts, se->file), se->pid);
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
		stack_str(f, ts, file, sb[k].stack_id);
		fprintf(f, ",\"bytes\":%" PRIu64 ",\"count\":%" PRIu64 "}", sb[k].bytes, sb[k].count);
	}
}

static int section_mem(FILE *f, struct trace_set *ts, const struct out_report_input *in)
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
		process_label(proc, sizeof(proc), trace_set_file(ts, fl->file), fl->pid);
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
		stack_str(f, ts, fl->file, fl->stack_id);
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
		rc = flame_json(f, r->inuse, "GPU memory in use at the peak", sub, "bytes",
				REPORT_FLAME_MAX_NODES);
	} else {
		fputs("null", f);
	}
	fputs(",\"alloc_tree\":", f);
	if (!rc && r->alloc && flame_tree_total(r->alloc))
		rc = flame_json(f, r->alloc, "GPU memory allocated (bytes per stack, whole run)",
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
			rc = flame_json(f, sr->inuse, title, sub, "bytes", MEM_SNAPSHOT_NODES);
		else
			fputs("null", f);
		fputs("}", f);
	}
	fputs("]}", f);
	return rc;
}

/* ---- stragglers ---------------------------------------------------------- */

#define STRAG_MAX_RANKS 128
#define STRAG_MAX_COLS 120

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* One heatmap: rows = ranks, columns = groups of `width` steps; the cell
 * is the mean (step time) or the max (lateness) over the group's steps. */
static void heat_json(FILE *f, const double *cells, const uint32_t *have, size_t n_rows,
		      size_t n_steps, size_t width, int use_max)
{
	size_t cols = (n_steps + width - 1) / width;
	fputc('[', f);
	for (size_t r = 0; r < n_rows; r++) {
		fputs(r ? ",[" : "[", f);
		for (size_t c = 0; c < cols; c++) {
			double acc = use_max ? -1e300 : 0;
			uint32_t n = 0;
			for (size_t s = c * width; s < (c + 1) * width && s < n_steps; s++) {
				size_t at = r * n_steps + s;
				if (!have[at])
					continue;
				if (use_max) {
					if (cells[at] > acc)
						acc = cells[at];
				} else {
					acc += cells[at];
				}
				n++;
			}
			if (c)
				fputc(',', f);
			if (!n)
				fputs("null", f);
			else
				fprintf(f, "%.3f", use_max ? acc : acc / n);
		}
		fputc(']', f);
	}
	fputc(']', f);
}

static int section_stragglers(FILE *f, struct trace_set *ts, const void *model)
{
	const struct stragglers_result *r = model ? model_stragglers_result(model) : NULL;
	fputs("\"stragglers\":", f);
	if (!r || !r->nccl || !r->nccl->n_ranks) {
		fputs("null", f);
		return 0;
	}
	const struct nccl_result *nc = r->nccl;
	const char *from = nc->step_source == NCCL_STEPS_MARKER ? "step markers"
			   : nc->step_source == NCCL_STEPS_PERIOD ? "the collective period" : "each collective";
	fprintf(f, "{\"ranks_total\":%zu,\"nodes\":%zu,\"complete_collectives\":%zu,\"steps_from\":",
		nc->n_ranks, trace_set_count(ts), r->complete_collectives);
	out_json_str(f, from);
	fprintf(f, ",\"period\":%u,\"median_step_ms\":", nc->period);
	num_or_null(f, r->median_step_ms, "%.3f");
	fputs(",\"ranks\":[", f);
	size_t n_rows = r->n_rows < STRAG_MAX_RANKS ? r->n_rows : STRAG_MAX_RANKS;
	size_t n_steps = 0;
	for (size_t i = 0; i < r->n_rows; i++) {
		const struct straggler_row *row = &r->rows[i];
		const struct nccl_rank *rk = &nc->ranks[row->rank_index];
		if (i < n_rows && rk->n_steps > n_steps)
			n_steps = rk->n_steps;
		fprintf(f, "%s{\"rank\":", i ? "," : "");
		if (rk->rank >= 0)
			fprintf(f, "%d", rk->rank);
		else
			fputs("null", f);
		fputs(",\"host\":", f);
		out_json_str(f, rk->host ? rk->host : "");
		fprintf(f, ",\"pid\":%u,\"steps\":%zu,\"mean_step_ms\":", rk->pid, row->steps);
		num_or_null(f, row->mean_step_ms, "%.3f");
		fputs(",\"mean_wait_ms\":", f);
		num_or_null(f, row->steps ? row->mean_wait_ms : -1, "%.3f");
		fputs(",\"median_compute_ms\":", f);
		num_or_null(f, row->median_compute_ms, "%.3f");
		fputs(",\"score\":", f);
		num_or_null(f, row->score, "%.4f");
		fprintf(f, ",\"flagged\":%s,\"latest\":%" PRIu64 ",\"median_lateness_ms\":%.3f}",
			row->score >= 0 && row->score < STRAGGLER_SCORE_FLAG ? "true" : "false", row->latest,
			row->median_lateness_ms);
	}
	fputs("],\"verdict\":", f);
	const struct straggler_verdict *v = &r->verdict;
	if (v->found && v->rank_index < nc->n_ranks) {
		const struct nccl_rank *rk = &nc->ranks[v->rank_index];
		char text[512];
		snprintf(text, sizeof(text), "Straggler: rank %d (host %s, pid %u) since step %d, "
			 "confidence %.2f, costs %.2f ms per step", rk->rank, rk->host ? rk->host : "?",
			 rk->pid, v->since_step, v->confidence, v->cost_ms_per_step);
		fputs("{\"found\":true,\"text\":", f);
		out_json_str(f, text);
		fprintf(f, ",\"rank\":%d,\"pid\":%u,\"host\":", rk->rank, rk->pid);
		out_json_str(f, rk->host ? rk->host : "");
		fprintf(f, ",\"since_step\":%d,\"confidence\":%.3f,\"cost_ms_per_step\":%.3f,\"latest\":%" PRIu64
			",\"collectives\":%" PRIu64 ",\"median_lateness_ms\":%.3f,\"threshold_ms\":%.3f"
			",\"evidence\":", v->since_step, v->confidence, v->cost_ms_per_step, v->latest,
			v->collectives, v->median_lateness_ms, v->threshold_ms);
		out_json_str(f, v->evidence);
		fputs(",\"frames\":[", f);
		for (size_t i = 0; i < v->n_frames; i++) {
			fputs(i ? ",{\"name\":" : "{\"name\":", f);
			out_json_str(f, v->frames[i].name ? v->frames[i].name : "?");
			fprintf(f, ",\"share\":%.4f,\"others_share\":%.4f}", v->frames[i].share,
				v->frames[i].others_share);
		}
		fputs("],\"syscalls\":[", f);
		for (size_t i = 0; i < v->n_syscalls; i++) {
			fputs(i ? ",{\"name\":" : "{\"name\":", f);
			out_json_str(f, v->syscalls[i].name ? v->syscalls[i].name : "?");
			fprintf(f, ",\"calls\":%" PRIu64 ",\"ms_per_step\":%.3f,\"others_ms_per_step\":%.3f}",
				v->syscalls[i].calls, v->syscalls[i].ms_per_step,
				v->syscalls[i].others_ms_per_step);
		}
		fputs("]}", f);
	} else {
		char text[400];
		snprintf(text, sizeof(text), "No straggler: %s", r->why_none[0] ? r->why_none : "none found");
		fputs("{\"found\":false,\"text\":", f);
		out_json_str(f, text);
		fputs("}", f);
	}
	/* heatmaps: step time and lateness, rank x step */
	fputs(",\"heatmap\":", f);
	if (!n_steps || !n_rows) {
		fputs("null}", f);
		return 0;
	}
	size_t cells = n_rows * n_steps;
	double *step_ms = calloc(cells, sizeof(*step_ms));
	double *late_ms = calloc(cells, sizeof(*late_ms));
	uint32_t *have_step = calloc(cells, sizeof(*have_step));
	uint32_t *have_late = calloc(cells, sizeof(*have_late));
	int64_t *ready = NULL;
	size_t ready_cap = 0;
	int rc = 0;
	if (!step_ms || !late_ms || !have_step || !have_late) {
		rc = -ENOMEM;
		goto out;
	}
	/* rows are in nccl rank order; rank_index -> row */
	for (size_t i = 0; i < n_rows; i++) {
		const struct nccl_rank *rk = &nc->ranks[r->rows[i].rank_index];
		for (size_t s = 0; s < rk->n_steps && s < n_steps; s++) {
			if (rk->step_end_ns[s] < rk->step_begin_ns[s])
				continue;
			step_ms[i * n_steps + s] = (double)(rk->step_end_ns[s] - rk->step_begin_ns[s]) / 1e6;
			have_step[i * n_steps + s] = 1;
		}
	}
	for (size_t k = 0; k < nc->n_instances; k++) {
		const struct nccl_instance *inst = &nc->instances[k];
		if (inst->n_members < 2)
			continue;
		if (inst->n_members > ready_cap) {
			int64_t *g = realloc(ready, inst->n_members * sizeof(*g));
			if (!g) {
				rc = -ENOMEM;
				goto out;
			}
			ready = g;
			ready_cap = inst->n_members;
		}
		for (uint32_t m = 0; m < inst->n_members; m++)
			ready[m] = nccl_member_ready_ns(nc, &nc->members[inst->first_member + m]);
		qsort(ready, inst->n_members, sizeof(*ready), cmp_i64);
		uint32_t n = inst->n_members;
		double median = n % 2 ? (double)ready[n / 2]
				      : ((double)ready[n / 2 - 1] + (double)ready[n / 2]) / 2;
		for (uint32_t m = 0; m < n; m++) {
			const struct nccl_member *mb = &nc->members[inst->first_member + m];
			const struct nccl_rank *rk = &nc->ranks[mb->rank_index];
			if (mb->call_index >= rk->n_calls)
				continue;
			int32_t step = rk->calls[mb->call_index].step;
			/* rows: one per nccl rank, in the same order */
			size_t row = mb->rank_index;
			if (row >= n_rows || r->rows[row].rank_index != mb->rank_index || step < 0 ||
			    (size_t)step >= n_steps)
				continue;
			double late = ((double)nccl_member_ready_ns(nc, mb) - median) / 1e6;
			size_t at = row * n_steps + (size_t)step;
			if (!have_late[at] || late > late_ms[at])
				late_ms[at] = late;
			have_late[at] = 1;
		}
	}
	size_t width = (n_steps + STRAG_MAX_COLS - 1) / STRAG_MAX_COLS;
	fprintf(f, "{\"steps\":%zu,\"width\":%zu,\"rows\":%zu,\"step_ms\":", n_steps, width, n_rows);
	heat_json(f, step_ms, have_step, n_rows, n_steps, width, 0);
	fputs(",\"lateness_ms\":", f);
	heat_json(f, late_ms, have_late, n_rows, n_steps, width, 1);
	fputs("}}", f);
out:
	if (rc)
		fputs("null}", f);
	free(step_ms);
	free(late_ms);
	free(have_step);
	free(have_late);
	free(ready);
	return rc;
}

/* ---- RDMA ---------------------------------------------------------------- */

#define RDMA_MAX_CONNS 256

static void endpoint_label(char *buf, size_t len, const struct rdma_endpoint *e)
{
	int n = 0;
	if (e->rank >= 0)
		n = snprintf(buf, len, "rank %" PRId64 ": ", e->rank);
	snprintf(buf + n, len - (size_t)n, "%s (pid %u) on %s", e->comm[0] ? e->comm : "process", e->pid,
		 e->host && e->host[0] ? e->host : "?");
}

static void latency_json(FILE *f, const struct rdma_latency *l)
{
	fprintf(f, "{\"count\":%" PRIu64 ",\"p50_ns\":%" PRIu64 ",\"p99_ns\":%" PRIu64 ",\"min_ns\":%" PRIu64
		",\"max_ns\":%" PRIu64 ",\"mean_ns\":%" PRIu64 "}", l->count, l->p50_ns, l->p99_ns,
		l->count ? l->min_ns : 0, l->max_ns, l->count ? l->sum_ns / l->count : 0);
}

static void section_rdma(FILE *f, const void *model)
{
	const struct rdma_result *r = model ? model_rdma_result(model) : NULL;
	fputs("\"rdma\":", f);
	if (!r || (!r->n_conns && !r->posts && !r->completions && !r->ctrl_calls && !r->n_counters)) {
		fputs("null", f);
		return;
	}
	fprintf(f, "{\"posts\":%" PRIu64 ",\"completions\":%" PRIu64 ",\"ctrl_calls\":%" PRIu64
		",\"connections\":%zu,\"left_out\":%zu,\"conns\":[", r->posts, r->completions, r->ctrl_calls,
		r->n_conns, r->n_conns > RDMA_MAX_CONNS ? r->n_conns - RDMA_MAX_CONNS : 0);
	for (size_t i = 0; i < r->n_conns && i < RDMA_MAX_CONNS; i++) {
		const struct rdma_conn *c = &r->conns[i];
		char local[256], remote[256];
		endpoint_label(local, sizeof(local), &c->local);
		if (c->joined)
			endpoint_label(remote, sizeof(remote), &c->remote);
		else if (c->has_rtr)
			snprintf(remote, sizeof(remote), "lid %u (not in these traces)", c->dlid);
		else
			snprintf(remote, sizeof(remote), "unknown");
		fprintf(f, "%s{\"id\":%zu,\"local\":", i ? "," : "", i + 1);
		out_json_str(f, local);
		fprintf(f, ",\"qp\":%u,\"remote_qp\":", c->qp_num);
		if (c->remote_qp_known)
			fprintf(f, "%u", c->remote_qp);
		else
			fputs("null", f);
		fputs(",\"remote\":", f);
		out_json_str(f, remote);
		fprintf(f, ",\"joined\":%s,\"ops\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"send_ops\":%" PRIu64
			",\"recv_ops\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"flush_errors\":%" PRIu64
			",\"outstanding\":%" PRIu64 ",\"duration_ns\":%" PRIu64 ",\"classes\":{",
			c->joined ? "true" : "false", c->ops, c->bytes, c->send_ops, c->recv_ops, c->errors,
			c->flush_errors, c->outstanding, c->last_ns > c->first_ns ? c->last_ns - c->first_ns : 0);
		int first = 1;
		for (int k = 0; k < RDMA_ERR_CLASSES; k++) {
			if (!c->by_class[k])
				continue;
			fprintf(f, "%s\"%s\":%" PRIu64, first ? "" : ",", rdma_err_class_name((enum rdma_err_class)k),
				c->by_class[k]);
			first = 0;
		}
		fputs("},\"latency\":", f);
		latency_json(f, &c->latency);
		fputs(",\"rows\":[", f);
		for (size_t k = 0; k < c->n_rows && k < 64; k++) {
			const struct rdma_op_row *o = &c->rows[k];
			char buf[32];
			fputs(k ? ",{\"op\":" : "{\"op\":", f);
			out_json_str(f, rdma_opcode_name(o->recv, o->opcode, buf, sizeof(buf)));
			fprintf(f, ",\"size\":\"%s\",\"ops\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"latency\":",
				rdma_size_bucket_name(o->bucket), o->ops, o->bytes);
			latency_json(f, &o->latency);
			fputs("}", f);
		}
		fputs("]}", f);
	}
	fputs("],\"counters\":[", f);
	for (size_t i = 0; i < r->n_counters && i < 200; i++) {
		const struct rdma_counter_row *c = &r->counters[i];
		fputs(i ? ",{\"host\":" : "{\"host\":", f);
		out_json_str(f, c->host ? c->host : "");
		fputs(",\"name\":", f);
		out_json_str(f, c->name);
		fprintf(f, ",\"total\":%" PRIu64 ",\"max_per_s\":%.1f}", c->total, c->max_per_s);
	}
	fputs("],\"files\":[", f);
	for (size_t i = 0; i < r->n_files; i++) {
		const struct rdma_file_row *fr = &r->files[i];
		fputs(i ? ",{\"host\":" : "{\"host\":", f);
		out_json_str(f, fr->host ? fr->host : "");
		fprintf(f, ",\"posts\":%" PRIu64 ",\"completions\":%" PRIu64 ",\"idle_polls\":", fr->posts,
			fr->completions);
		if (fr->has_idle_polls)
			fprintf(f, "%" PRIu64, fr->idle_polls);
		else
			fputs("null", f);
		fputs("}", f);
	}
	fputs("]}", f);
}

static int sc_by_total(const void *a, const void *b)
{
	const struct syscall_stat *x = a, *y = b;
	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	return x->nr < y->nr ? -1 : x->nr > y->nr;
}

static int section_syscalls(FILE *f, struct trace_set *ts, const void *model)
{
	fputs("\"syscalls\":", f);
	if (!model) {
		fputs("null", f);
		return 0;
	}
	/* merged over files */
	struct syscall_stat *all = calloc(SYSCALLS_MAX_NR + 1, sizeof(*all));
	struct syscall_stat *top = calloc(SYSCALLS_MAX_NR + 1, sizeof(*top));
	if (!all || !top) {
		free(all);
		free(top);
		return -ENOMEM;
	}
	for (uint32_t nr = 0; nr <= SYSCALLS_MAX_NR; nr++)
		all[nr].nr = nr;
	for (size_t i = 0; i < trace_set_count(ts); i++) {
		size_t n = model_syscalls_top(model, (uint32_t)i, top, SYSCALLS_MAX_NR + 1);
		for (size_t k = 0; k < n; k++) {
			struct syscall_stat *s = &all[top[k].nr <= SYSCALLS_MAX_NR ? top[k].nr : SYSCALLS_MAX_NR];
			s->count += top[k].count;
			s->total_ns += top[k].total_ns;
			s->failed += top[k].failed;
			if (top[k].max_ns > s->max_ns)
				s->max_ns = top[k].max_ns;
		}
	}
	qsort(all, SYSCALLS_MAX_NR + 1, sizeof(*all), sc_by_total);
	uint64_t calls = 0;
	for (uint32_t k = 0; k <= SYSCALLS_MAX_NR; k++)
		calls += all[k].count;
	if (!calls) {
		fputs("null", f);
	} else {
		fprintf(f, "{\"calls\":%" PRIu64 ",\"top\":[", calls);
		for (uint32_t k = 0; k < TOP_SYSCALLS && all[k].count; k++) {
			const char *name = all[k].nr < SYSCALLS_MAX_NR ? syscall_name(all[k].nr) : NULL;
			char buf[32];
			if (!name) {
				snprintf(buf, sizeof(buf), all[k].nr < SYSCALLS_MAX_NR ? "syscall_%u" : "(nr >= %u)",
					 all[k].nr);
				name = buf;
			}
			fprintf(f, "%s{\"name\":\"%s\",\"count\":%" PRIu64 ",\"total_ns\":%" PRIu64
				",\"max_ns\":%" PRIu64 ",\"failed\":%" PRIu64 "}", k ? "," : "", name,
				all[k].count, all[k].total_ns, all[k].max_ns, all[k].failed);
		}
		fputs("]}", f);
	}
	free(all);
	free(top);
	return 0;
}

static void section_presence(FILE *f, const struct report_data *d)
{
	fprintf(f, "\"presence\":{\"cpu_samples\":%" PRIu64 ",\"cuda_events\":%" PRIu64
		",\"cuda_alloc_events\":%" PRIu64 ",\"nccl_events\":%" PRIu64 ",\"rdma_events\":%" PRIu64
		",\"step_events\":%" PRIu64 "}",
		d ? d->cpu_samples : 0, d ? d->cuda_events : 0, d ? d->cuda_alloc_events : 0,
		d ? d->nccl_events : 0, d ? d->rdma_events : 0, d ? d->step_events : 0);
}

int out_report_write(FILE *f, const struct out_report_input *in, struct frec_error *err)
{
	struct trace_set *ts = in->ts;
	const struct trace_file *f0 = trace_set_file(ts, 0);
	char title[400];
	snprintf(title, sizeof(title), "flightrec report: %s%s",
		 f0 && f0->cmdline[0] ? f0->cmdline : f0 ? f0->path : "",
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
	section_summary(f, ts);
	fputs(",\n", f);
	int rc = section_cpu(f, ts, in->data);
	fputs(",\n", f);
	if (!rc)
		rc = section_mem(f, ts, in);
	fputs(",\n", f);
	section_cuda(f, ts, in->data, in->cuda);
	fputs(",\n", f);
	if (!rc)
		rc = section_stragglers(f, ts, in->stragglers);
	fputs(",\n", f);
	section_rdma(f, in->rdma);
	fputs(",\n", f);
	if (!rc)
		rc = section_syscalls(f, ts, in->syscalls);
	fputs(",\n", f);
	section_presence(f, in->data);
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
