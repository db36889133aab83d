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
		      size_t max_nodes)
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
	fprintf(f, ",\"unit\":\"samples\",\"total\":%" PRIu64 ",\"omitted\":%zu,\"omittedBelow\":%" PRIu64
		",\"names\":[", total, omitted, omitted ? threshold : 0);
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
		fputs("],\"damage\":[", f);
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
	int rc = flame_json(f, d->cpu_all, "CPU samples: all processes", sub, 2 * REPORT_FLAME_MAX_NODES);
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
		rc = flame_json(f, p->tree, title, sub, REPORT_FLAME_MAX_NODES);
		fputs("}", f);
	}
	fputs("]}", f);
	return rc;
}

static void section_cuda(FILE *f, const struct report_data *d, const void *cuda_model)
{
	/* HOOK: with model_cuda, this table comes from its result (self time,
	 * exact percentiles, pinned vs pageable copies). */
	(void)cuda_model;
	fputs("\"cuda\":", f);
	if (!d || !d->cuda_events) {
		fputs("null", f);
		return;
	}
	fprintf(f, "{\"events\":%" PRIu64 ",\"source\":\"events\",\"funcs\":[", d->cuda_events);
	for (size_t i = 0; i < d->n_cuda; i++) {
		const struct report_cuda_func *c = &d->cuda[i];
		const char *name = out_cuda_func_name(c->func);
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

static void section_mem(FILE *f, const struct report_data *d, const void *mem_model)
{
	/* HOOK: model_mem's result goes here: {"inuse":[[t_ns,bytes]...] per
	 * device, "snapshots":[{"t_ns":..,"tree":flame json}] x 20, "alloc":
	 * flame json, "leaks":[...], "failed":[...]}.  Until then: null, and
	 * report.js says what the trace holds. */
	(void)mem_model;
	(void)d;
	fputs("\"mem\":null", f);
}

static void section_stragglers(FILE *f, const void *model)
{
	/* HOOK: {"ranks":[...], "steps":N, "heatmap":[[ms...]...], "verdict":{...}} */
	(void)model;
	fputs("\"stragglers\":null", f);
}

static void section_rdma(FILE *f, const void *model)
{
	/* HOOK: {"connections":[{..., "hist":[[upper_ns,count]...]}]} */
	(void)model;
	fputs("\"rdma\":null", f);
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
	section_mem(f, in->data, in->mem);
	fputs(",\n", f);
	section_cuda(f, in->data, in->cuda);
	fputs(",\n", f);
	section_stragglers(f, in->stragglers);
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
