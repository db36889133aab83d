/* The summary's layout (out_summary.h): seven sections with fixed
 * headings, in this order, each one line when its data is missing:
 *   Recording           command, hosts and ranks, per file duration,
 *                       processes, probes and status
 *   Findings            the findings model's first five: kind, cost, share,
 *                       where (the innermost frames), fix
 *   CPU                 the cpu model's heaviest stacks as frame_pick.h
 *                       picks frames (Python, own code, the innermost
 *                       named native; the rest counted as [+N]), the
 *                       innermost six of them (a kernel part: its
 *                       innermost frame), merged when
 *                       the cut makes two stacks equal
 *   GPU memory          the largest file peak (memory's files[].peak_bytes),
 *                       the top holders of the largest series at its peak,
 *                       failed allocations, what was never freed
 *   Stragglers          the verdict of the stragglers model, or none
 *   RDMA                connections, error completions, p50/p99 latency of
 *                       the connections with the most errors, then the
 *                       slowest
 *   Drops and damage    losses by probe and reason, damaged regions
 * Deterministic: nothing of the analysis' own time, every list in the
 * models' order or sorted with a full tie-break.  The JSON holds the same
 * numbers, printed with the formats the other commands' --json use, so a
 * script can compare them as strings.  Not for choosing the budget's level:
 * cmd_summary.c tries the levels in turn. */
#include "out_identity.h"
#include "out_summary.h"
#include "out_summary_text.h"
#include "frame_pick.h"
#include "model_cpu.h"
#include "model_cuda.h"
#include "model_findings.h"
#include "model_mem.h"
#include "model_rdma.h"
#include "model_stragglers.h"
#include "out_common.h"
#include "out_file_json.h"
#include "trace_set.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* How much each section writes at one level. */
struct summary_limits {
	size_t files;          /* files described one by one in Recording */
	size_t findings;
	size_t fix_chars;
	size_t where_frames;
	size_t cpu_stacks;
	size_t cpu_frames;
	size_t holders;
	size_t rdma_conns;
	size_t drop_rows;
	size_t evidence_chars;
	const char *shortened; /* what this level drops beyond the previous one */
};

/* Lower-priority lines go first: CPU stacks beyond 3, then holders, then
 * RDMA connections and loss rows, then long texts, ... */
static const struct summary_limits SUMMARY_LEVELS[] = {
	{ 8, 5, 240, 4, 5, 6, 3, 3, 8, 240, NULL },
	{ 8, 5, 240, 4, 3, 6, 3, 3, 8, 240, "cpu_stacks" },
	{ 8, 5, 240, 4, 3, 6, 1, 3, 8, 240, "memory_holders" },
	{ 8, 5, 240, 4, 3, 6, 1, 1, 4, 240, "rdma_connections,drop_rows" },
	{ 8, 5, 120, 4, 3, 6, 1, 1, 4, 120, "fix_and_evidence_text" },
	{ 4, 3, 120, 3, 3, 4, 1, 1, 4, 120, "findings,files,frames" },
	{ 2, 2, 60, 2, 1, 3, 0, 1, 2, 60, "everything_but_the_first_lines" },
};
#define N_LEVELS (sizeof(SUMMARY_LEVELS) / sizeof(SUMMARY_LEVELS[0]))

size_t summary_levels(void)
{
	return N_LEVELS;
}

static void json_key_str(FILE *out, const char *key, const char *v)
{
	fprintf(out, "\"%s\":", key);
	if (v)
		out_json_str(out, v);
	else
		fputs("null", out);
}

static const char *host_of(struct trace_set *ts, size_t i)
{
	const struct trace_file *f = trace_set_file(ts, i);
	return f->hdr.host[0] ? f->hdr.host : "?";
}

/* ---- Recording ---- */

static void recording_md(const struct summary_input *in, const struct summary_limits *lim,
			 FILE *out)
{
	struct trace_set *ts = in->ts;
	size_t n = trace_set_count(ts);
	char buf[512], b1[32];
	fputs("## Recording\n", out);
	const struct trace_file *f0 = trace_set_file(ts, 0);
	fprintf(out, "- command: %s\n", f0->cmdline[0] ? summary_clip_text(f0->cmdline, 160, buf, sizeof(buf))
							: "(none recorded)");
	fprintf(out, "- hosts: ");
	size_t shown = 0;
	for (size_t i = 0; i < n; i++) {
		int seen = 0;
		for (size_t j = 0; j < i && !seen; j++)
			seen = !strcmp(host_of(ts, i), host_of(ts, j));
		if (seen)
			continue;
		if (shown++ == lim->files) {
			fputs(", ...", out);
			break;
		}
		fprintf(out, "%s%s", shown > 1 ? ", " : "", host_of(ts, i));
	}
	fprintf(out, " (%zu file%s); ranks: ", n, n == 1 ? "" : "s");
	size_t ranks = in->stragglers->nccl->n_ranks;
	if (ranks)
		fprintf(out, "%zu (NCCL)\n", ranks);
	else
		fputs("none (no NCCL calls)\n", out);
	for (size_t i = 0; i < n && i < lim->files; i++) {
		const struct trace_file *f = trace_set_file(ts, i);
		int exact;
		uint64_t d = trace_file_duration_ns(f, &exact);
		char trouble[512];
		trace_file_trouble(f, trouble, sizeof(trouble));
		const char *slash = strrchr(f->path, '/');
		fprintf(out, "- %s (%s): %s%s, %zu process%s", host_of(ts, i),
			summary_clip_text(slash ? slash + 1 : f->path, 40, buf, sizeof(buf)),
			out_duration(d, b1, sizeof(b1)),
			exact ? "" : " (to the last event)", f->n_procs, f->n_procs == 1 ? "" : "es");
		if (i && strcmp(f->cmdline, f0->cmdline))
			fprintf(out, ", command: %s", summary_clip_text(f->cmdline, 80, buf, sizeof(buf)));
		struct out_file_probes pr;
		out_file_probes_get(f, &pr);
		if (pr.source) {
			fputs(", probes (events):", out);
			for (uint32_t k = 0; k < pr.n; k++)
				fprintf(out, "%s %s %" PRIu64, k ? "," : "", pr.probes[k].name,
					pr.probes[k].events);
		} else {
			fputs(", probes: unknown (no counters recorded)", out);
		}
		free(pr.probes);
		char where[256];
		if (out_identity_file_text(f, where, sizeof(where)))
			fprintf(out, "; ran in %s", summary_clip_text(where, 160, buf, sizeof(buf)));
		fprintf(out, "; status: %s\n", trouble[0] ? summary_clip_text(trouble, 160, buf, sizeof(buf))
							 : "intact");
	}
	if (n > lim->files)
		fprintf(out, "- ... %zu more file%s\n", n - lim->files, n - lim->files == 1 ? "" : "s");
}

static void recording_json(const struct summary_input *in, const struct summary_limits *lim,
			   FILE *out)
{
	struct trace_set *ts = in->ts;
	size_t n = trace_set_count(ts);
	fputs("\"recording\":{", out);
	json_key_str(out, "command", trace_set_file(ts, 0)->cmdline);
	fprintf(out, ",\"files_total\":%zu,\"ranks\":%zu,\"files\":[", n,
		in->stragglers->nccl->n_ranks);
	for (size_t i = 0; i < n && i < lim->files; i++) {
		const struct trace_file *f = trace_set_file(ts, i);
		int exact;
		uint64_t d = trace_file_duration_ns(f, &exact);
		fputs(i ? ",{" : "{", out);
		json_key_str(out, "path", f->path);
		fputc(',', out);
		json_key_str(out, "host", f->hdr.host);
		fputc(',', out);
		json_key_str(out, "command", f->cmdline);
		char where[256];
		if (out_identity_file_text(f, where, sizeof(where))) { /* only when known: the budget */
			fputs(",\"ran_in\":", out);
			out_json_str(out, where);
		}
		fprintf(out, ",\"duration_ns\":%" PRIu64 ",\"duration_exact\":%s,\"processes\":%zu,"
			"\"complete\":%s,\"status\":", d, exact ? "true" : "false", f->n_procs,
			trace_file_complete(f) ? "true" : "false");
		out_file_status_json(out, f);
		struct out_file_probes pr;
		out_file_probes_get(f, &pr);
		fputs(",\"probes\":", out);
		out_file_probes_json(out, &pr, "name");
		free(pr.probes);
		fputc('}', out);
	}
	fputs("]}", out);
}

/* ---- Findings ---- */

static double idle_ms_total(const struct findings_result *r)
{
	double s = 0;
	for (size_t i = 0; i < r->n_procs; i++)
		s += r->procs[i].idle_ms;
	return s;
}

/* How the processes' idle was read: measured from kernel records, or
 * bounded from host signals, or some of each. */
static const char *idle_read_from(const struct findings_result *r)
{
	size_t measured = 0;
	for (size_t i = 0; i < r->n_procs; i++)
		measured += r->procs[i].gpu_kernels > 0;
	return measured == r->n_procs ? "measured from GPU kernel records" :
	       measured ? "measured where kernel records exist, else a host-signal bound" :
			  "from host signals: an upper bound";
}

static void findings_md(const struct summary_input *in, const struct summary_limits *lim,
			FILE *out)
{
	const struct findings_result *r = in->findings;
	char where[512], fix[600];
	fputs("\n## Findings\n", out);
	if (!r->n_procs && !r->n_findings) {
		fputs("none: no CUDA events (GPU idle not evaluated)\n", out);
		return;
	}
	if (r->n_procs)
		fprintf(out, "GPU idle %.1f ms over %zu process%s (%s), wall %.1f ms, %zu step%s\n",
			idle_ms_total(r), r->n_procs, r->n_procs == 1 ? "" : "es", idle_read_from(r),
			r->wall_ms, r->steps, r->steps == 1 ? "" : "s");
	if (!r->n_findings)
		fprintf(out, "none above %.0f%% of wall time\n", 100 * r->min_share);
	for (size_t i = 0; i < r->n_findings && i < lim->findings; i++) {
		const struct finding *f = &r->findings[i];
		fprintf(out, "%zu. %s", i + 1, finding_kind_name(f->kind));
		if (f->has_cost)
			fprintf(out, ": %.1f ms GPU idle (%.1f%% of wall x %zu process%s)", f->cost_ms,
				100 * f->share, f->n_pids, f->n_pids == 1 ? "" : "es");
		else
			fputs(" (no idle cost)", out);
		if (f->n_where)
			fprintf(out, "; where: %s", summary_trim_stack(f->where, f->n_where, lim->where_frames,
							       where, sizeof(where)));
		fprintf(out, "; fix: %s\n", summary_clip_text(f->fix, lim->fix_chars, fix, sizeof(fix)));
	}
	if (r->n_findings > lim->findings) {
		fprintf(out, "(%zu more:", r->n_findings - lim->findings);
		for (size_t i = lim->findings; i < r->n_findings; i++)
			fprintf(out, " %s", finding_kind_name(r->findings[i].kind));
		fputs(")\n", out);
	}
}

static void findings_json(const struct summary_input *in, const struct summary_limits *lim,
			  FILE *out)
{
	const struct findings_result *r = in->findings;
	char where[512], fix[600];
	fputs("\"findings\":{", out);
	if (!r->n_procs && !r->n_findings) {
		fputs("\"missing\":\"no CUDA events\"}", out);
		return;
	}
	fprintf(out, "\"gpu_processes\":%zu,\"gpu_idle_ms\":%.3f,\"gpu_idle_from\":\"%s\","
		"\"wall_ms\":%.3f,\"steps\":%zu,\"total\":%zu,\"top\":[", r->n_procs,
		idle_ms_total(r), idle_read_from(r), r->wall_ms, r->steps, r->n_findings);
	for (size_t i = 0; i < r->n_findings && i < lim->findings; i++) {
		const struct finding *f = &r->findings[i];
		fputs(i ? ",{" : "{", out);
		json_key_str(out, "kind", finding_kind_name(f->kind));
		if (f->has_cost)
			fprintf(out, ",\"cost_ms\":%.3f,\"share\":%.4f", f->cost_ms, f->share);
		else
			fputs(",\"cost_ms\":null,\"share\":null", out);
		fputc(',', out);
		json_key_str(out, "where", f->n_where ? summary_trim_stack(f->where, f->n_where,
								   lim->where_frames, where,
								   sizeof(where)) : NULL);
		fputc(',', out);
		json_key_str(out, "fix", summary_clip_text(f->fix, lim->fix_chars, fix, sizeof(fix)));
		fputc('}', out);
	}
	fputs("]}", out);
}

/* ---- CPU ---- */

struct cpu_stack {
	char *text;
	uint64_t samples;
};

static int by_text(const void *a, const void *b)
{
	return strcmp(((const struct cpu_stack *)a)->text, ((const struct cpu_stack *)b)->text);
}

static int by_samples(const void *a, const void *b)
{
	const struct cpu_stack *x = a, *y = b;
	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return strcmp(x->text, y->text);
}

/* The tree's stacks, trimmed to keep frames and merged, heaviest first;
 * *n set.  NULL with *n 0 when there are none or memory runs out (*oom). */
static struct cpu_stack *cpu_stacks(const struct flame_tree *t, const struct frame_owners *owners,
				    size_t keep, size_t *n, int *oom)
{
	*n = 0;
	size_t count = t ? flame_tree_count(t) : 0, cap = 0;
	struct cpu_stack *v = NULL;
	const char **frames = NULL;
	size_t frames_cap = 0;
	char buf[1024];
	for (uint32_t i = 1; i < count; i++) {
		const struct flame_node *node = flame_tree_node(t, i);
		if (!node->self)
			continue;
		uint64_t self = node->self;
		size_t depth = node->depth;
		if (depth > frames_cap) {
			const char **nf = realloc(frames, depth * sizeof(*frames));
			if (!nf)
				goto fail;
			frames = nf;
			frames_cap = depth;
		}
		uint32_t k = i;
		for (size_t d = depth; d-- > 0;) {
			const struct flame_node *x = flame_tree_node(t, k);
			frames[d] = x->name;
			k = x->parent;
		}
		if (*n == cap) {
			size_t nc = cap ? 2 * cap : 64;
			struct cpu_stack *nv = realloc(v, nc * sizeof(*v));
			if (!nv)
				goto fail;
			v = nv;
			cap = nc;
		}
		v[*n].text = strdup(frame_pick_text(owners, frames, depth, keep, buf, sizeof(buf)));
		if (!v[*n].text)
			goto fail;
		v[(*n)++].samples = self;
	}
	free(frames);
	if (!*n)
		return v;
	qsort(v, *n, sizeof(*v), by_text);
	size_t m = 0;
	for (size_t i = 0; i < *n; i++) {
		if (m && !strcmp(v[m - 1].text, v[i].text)) {
			v[m - 1].samples += v[i].samples;
			free(v[i].text);
		} else {
			v[m++] = v[i];
		}
	}
	*n = m;
	qsort(v, *n, sizeof(*v), by_samples);
	return v;
fail:
	free(frames);
	for (size_t i = 0; i < *n; i++)
		free(v[i].text);
	free(v);
	*n = 0;
	*oom = 1;
	return NULL;
}

static int cpu_section(const struct summary_input *in, const struct summary_limits *lim,
		       enum summary_format fmt, FILE *out)
{
	const struct model_cpu_result *c = in->cpu;
	uint64_t total = c->tree ? flame_tree_total(c->tree) : 0;
	if (fmt == SUMMARY_MD)
		fputs("\n## CPU\n", out);
	else
		fputs("\"cpu\":{", out);
	if (!total) {
		fputs(fmt == SUMMARY_MD ? "no CPU samples\n" : "\"missing\":\"no CPU samples\"}", out);
		return 0;
	}
	int oom = 0;
	size_t n;
	struct cpu_stack *v = cpu_stacks(c->tree, frame_owners_of(in->ts), lim->cpu_frames, &n, &oom);
	if (oom)
		return -1;
	if (fmt == SUMMARY_MD)
		fprintf(out, "%" PRIu64 " samples, %zu distinct stacks (the innermost %zu frames of "
			"Python, the job's own code and the innermost named native; [+N]: N "
			"interpreter, library or unnamed frames)\n", total, n, lim->cpu_frames);
	else
		fprintf(out, "\"samples\":%" PRIu64 ",\"stacks\":%zu,\"top\":[", total, n);
	for (size_t i = 0; i < n && i < lim->cpu_stacks; i++) {
		double share = (double)v[i].samples / (double)total;
		if (fmt == SUMMARY_MD) {
			fprintf(out, "- %.1f%% (%" PRIu64 "): %s\n", 100 * share, v[i].samples, v[i].text);
		} else {
			fprintf(out, "%s{\"samples\":%" PRIu64 ",\"share\":%.4f,", i ? "," : "",
				v[i].samples, share);
			json_key_str(out, "stack", v[i].text);
			fputc('}', out);
		}
	}
	if (fmt == SUMMARY_JSON)
		fputs("]}", out);
	for (size_t i = 0; i < n; i++)
		free(v[i].text);
	free(v);
	return 0;
}

/* ---- GPU memory ---- */

/* The file with the largest device peak, and its largest device series. */
static void mem_pick(const struct mem_result *r, size_t *file, const struct mem_series **series)
{
	*file = 0;
	*series = NULL;
	for (size_t i = 1; i < r->n_files; i++)
		if (r->files[i].peak_bytes > r->files[*file].peak_bytes)
			*file = i;
	for (size_t i = 0; i < r->n_series; i++) {
		const struct mem_series *s = &r->series[i];
		if (s->file == *file && s->space == MEM_SPACE_DEVICE &&
		    (!*series || s->peak_bytes > (*series)->peak_bytes))
			*series = s;
	}
}

static int mem_section(const struct summary_input *in, const struct summary_limits *lim,
		       enum summary_format fmt, FILE *out)
{
	const struct mem_result *r = in->mem;
	int md = fmt == SUMMARY_MD;
	fputs(md ? "\n## GPU memory\n" : "\"gpu_memory\":{", out);
	const char *missing = !r->cuda_events ? "no CUDA events"
			      : !r->mem_events ? "no CUDA memory events" : NULL;
	if (missing) {
		if (md)
			fprintf(out, "%s\n", missing);
		else
			fprintf(out, "\"missing\":\"%s\"}", missing);
		return 0;
	}
	size_t fi;
	const struct mem_series *s;
	mem_pick(r, &fi, &s);
	const struct mem_file *mf = fi < r->n_files ? &r->files[fi] : NULL;
	uint64_t peak = mf ? mf->peak_bytes : 0, peak_t = mf ? mf->peak_t_ns : 0;
	uint64_t end_bytes = 0, end_count = 0;
	int caching = 0;
	for (size_t i = 0; i < r->n_series; i++)
		if (r->series[i].space == MEM_SPACE_DEVICE) {
			end_bytes += r->series[i].end_bytes;
			end_count += r->series[i].end_count;
		}
	for (size_t i = 0; i < r->n_procs; i++)
		caching |= r->procs[i].caching_allocator;
	char b1[32], b2[32], line[1024];
	size_t n_holders = s ? s->n_top_at_peak : 0;
	if (n_holders > lim->holders)
		n_holders = lim->holders;
	if (md) {
		fprintf(out, "- peak: %s (%" PRIu64 " B) at %.3f s on %s\n",
			out_bytes(peak, b1, sizeof(b1)), peak, (double)peak_t / 1e9,
			host_of(in->ts, fi));
		if (n_holders)
			fprintf(out, "- top holders at the peak of pid %u, device %d:\n", s->pid, s->device);
	} else {
		fprintf(out, "\"peak_bytes\":%" PRIu64 ",\"peak_s\":%.9f,\"file\":%zu,", peak,
			(double)peak_t / 1e9, fi);
		json_key_str(out, "host", host_of(in->ts, fi));
		if (s)
			fprintf(out, ",\"holders_pid\":%u,\"holders_device\":%d", s->pid, s->device);
		fputs(",\"holders\":[", out);
	}
	for (size_t i = 0; i < n_holders; i++) {
		size_t nf = 0;
		const char **frames = mem_stack_frames(in->ts, s->file, s->top_at_peak[i].stack_id, &nf);
		if (!frames)
			return -1;
		frame_pick_text(frame_owners_of(in->ts), frames, nf, lim->cpu_frames, line, sizeof(line));
		free(frames);
		if (md) {
			fprintf(out, "  - %s: %s\n", out_bytes(s->top_at_peak[i].bytes, b1, sizeof(b1)), line);
		} else {
			fprintf(out, "%s{\"bytes\":%" PRIu64 ",", i ? "," : "", s->top_at_peak[i].bytes);
			json_key_str(out, "stack", line);
			fputc('}', out);
		}
	}
	const struct mem_failure *fl = r->n_failures_kept ? &r->failures[0] : NULL;
	const char *fn = fl ? cuda_func_name(fl->func) : NULL;
	const char *err = fl ? cuda_error_name(fl->func, fl->error) : NULL;
	if (md) {
		fprintf(out, "- failed allocations: %" PRIu64, r->n_failures);
		if (fl)
			fprintf(out, "; first: %s of %s at %.3f s (%s), %s in use then", fn ? fn : "allocation",
				out_bytes(fl->bytes, b1, sizeof(b1)), (double)fl->t_ns / 1e9,
				err ? err : "error", out_bytes(fl->inuse_bytes, b2, sizeof(b2)));
		fprintf(out, "\n- never freed by the end: %s in %" PRIu64 " allocation%s%s\n",
			out_bytes(end_bytes, b1, sizeof(b1)), end_count, end_count == 1 ? "" : "s",
			caching ? " (a caching allocator: cached segments, not lost memory)" : "");
		return 0;
	}
	fprintf(out, "],\"failed_allocations\":%" PRIu64 ",\"first_failure\":", r->n_failures);
	if (fl) {
		fprintf(out, "{\"t_s\":%.9f,\"pid\":%u,\"bytes\":%" PRIu64 ",\"in_use_bytes\":%" PRIu64 ",",
			(double)fl->t_ns / 1e9, fl->pid, fl->bytes, fl->inuse_bytes);
		json_key_str(out, "function", fn ? fn : "?");
		fputc(',', out);
		json_key_str(out, "error_name", err);
		fputc('}', out);
	} else {
		fputs("null", out);
	}
	fprintf(out, ",\"never_freed_bytes\":%" PRIu64 ",\"never_freed_allocations\":%" PRIu64
		",\"caching_allocator\":%s}", end_bytes, end_count, caching ? "true" : "false");
	return 0;
}

/* ---- Stragglers ---- */

static void stragglers_section(const struct summary_input *in, const struct summary_limits *lim,
			       enum summary_format fmt, FILE *out)
{
	const struct stragglers_result *r = in->stragglers;
	const struct nccl_result *nc = r->nccl;
	int md = fmt == SUMMARY_MD;
	char ev[1100];
	fputs(md ? "\n## Stragglers\n" : "\"stragglers\":{", out);
	if (!nc->n_ranks) {
		fputs(md ? "no NCCL calls\n" : "\"missing\":\"no NCCL calls\"}", out);
		return;
	}
	const struct straggler_verdict *v = &r->verdict;
	const struct nccl_rank *rk = v->found ? &nc->ranks[v->rank_index] : NULL;
	if (md) {
		fprintf(out, "%zu ranks, %zu complete collectives", nc->n_ranks, r->complete_collectives);
		if (r->median_step_ms >= 0)
			fprintf(out, ", median step %.2f ms", r->median_step_ms);
		if (!v->found) {
			fprintf(out, "\n- straggler: none (%s)\n",
				summary_clip_text(r->why_none, lim->evidence_chars, ev, sizeof(ev)));
			return;
		}
		fprintf(out, "\n- straggler: rank %d (host %s, pid %u) since step %d, costs %.2f ms per "
			"step, confidence %.2f\n", rk->rank, rk->host, rk->pid, v->since_step,
			v->cost_ms_per_step, v->confidence);
		fprintf(out, "- evidence: %s\n", summary_clip_text(v->evidence, lim->evidence_chars, ev, sizeof(ev)));
		return;
	}
	fprintf(out, "\"ranks\":%zu,\"complete_collectives\":%zu,\"median_step_ms\":", nc->n_ranks,
		r->complete_collectives);
	if (r->median_step_ms >= 0)
		fprintf(out, "%.3f", r->median_step_ms);
	else
		fputs("null", out);
	fputs(",\"straggler\":", out);
	if (v->found) {
		fprintf(out, "{\"rank\":%d,\"pid\":%u,\"cost_ms_per_step\":%.3f,\"since_step\":%d,"
			"\"confidence\":%.3f,", rk->rank, rk->pid, v->cost_ms_per_step, v->since_step,
			v->confidence);
		json_key_str(out, "host", rk->host);
		fputc(',', out);
		json_key_str(out, "evidence", summary_clip_text(v->evidence, lim->evidence_chars, ev, sizeof(ev)));
		fputs("},\"no_straggler_reason\":null}", out);
	} else {
		fputs("null,", out);
		json_key_str(out, "no_straggler_reason",
			     summary_clip_text(r->why_none, lim->evidence_chars, ev, sizeof(ev)));
		fputc('}', out);
	}
}

/* ---- RDMA ---- */

/* Before: more errors, then a slower p99, then the model's order. */
static int more_trouble(const struct rdma_result *r, size_t i, size_t j)
{
	const struct rdma_conn *x = &r->conns[i], *y = &r->conns[j];
	if (x->errors != y->errors)
		return x->errors > y->errors;
	if (x->latency.p99_ns != y->latency.p99_ns)
		return x->latency.p99_ns > y->latency.p99_ns;
	return i < j;
}

static int rdma_section(const struct summary_input *in, const struct summary_limits *lim,
			enum summary_format fmt, FILE *out)
{
	const struct rdma_result *r = in->rdma;
	int md = fmt == SUMMARY_MD;
	fputs(md ? "\n## RDMA\n" : "\"rdma\":{", out);
	if (!r->n_conns && !r->posts && !r->completions) {
		fputs(md ? "no RDMA verbs calls\n" : "\"missing\":\"no RDMA verbs calls\"}", out);
		return 0;
	}
	uint64_t errors = 0, flushes = 0;
	for (size_t i = 0; i < r->n_conns; i++) {
		errors += r->conns[i].errors;
		flushes += r->conns[i].flush_errors;
	}
	/* the first lim->rdma_conns by more_trouble, chosen one at a time */
	size_t order[8], n_order = 0;
	for (size_t k = 0; k < lim->rdma_conns && k < 8 && k < r->n_conns; k++) {
		size_t best = SIZE_MAX;
		for (size_t i = 0; i < r->n_conns; i++) {
			int taken = 0;
			for (size_t j = 0; j < n_order && !taken; j++)
				taken = order[j] == i;
			if (!taken && (best == SIZE_MAX || more_trouble(r, i, best)))
				best = i;
		}
		order[n_order++] = best;
	}
	if (md)
		fprintf(out, "%zu connections (queue pair views), %" PRIu64 " posts, %" PRIu64
			" completions, %" PRIu64 " error completions (%" PRIu64 " flushed apart)\n",
			r->n_conns, r->posts, r->completions, errors, flushes);
	else
		fprintf(out, "\"connections\":%zu,\"posts\":%" PRIu64 ",\"completions\":%" PRIu64
			",\"error_completions\":%" PRIu64 ",\"flush_errors\":%" PRIu64 ",\"top\":[",
			r->n_conns, r->posts, r->completions, errors, flushes);
	for (size_t k = 0; k < n_order; k++) {
		const struct rdma_conn *c = &r->conns[order[k]];
		const struct rdma_latency *l = &c->latency;
		if (md) {
			fprintf(out, "- %s:%u qp %u: %" PRIu64 " ops, ", c->local.host, c->local.pid,
				c->qp_num, c->ops);
			if (l->count)
				fprintf(out, "p50 %.1f us, p99 %.1f us", (double)l->p50_ns / 1e3,
					(double)l->p99_ns / 1e3);
			else
				fputs("no latency", out);
			fprintf(out, ", %" PRIu64 " errors\n", c->errors);
			continue;
		}
		fprintf(out, "%s{", k ? "," : "");
		json_key_str(out, "host", c->local.host);
		fprintf(out, ",\"pid\":%u,\"local_qp\":%u,\"ops\":%" PRIu64 ",\"errors\":%" PRIu64,
			c->local.pid, c->qp_num, c->ops, c->errors);
		if (l->count)
			fprintf(out, ",\"p50_us\":%.3f,\"p99_us\":%.3f}", (double)l->p50_ns / 1e3,
				(double)l->p99_ns / 1e3);
		else
			fputs(",\"p50_us\":null,\"p99_us\":null}", out);
	}
	if (!md)
		fputs("]}", out);
	return 0;
}

/* ---- Drops and damage ---- */

static void drops_section(const struct summary_input *in, const struct summary_limits *lim,
			  enum summary_format fmt, FILE *out)
{
	struct trace_set *ts = in->ts;
	size_t n = trace_set_count(ts), rows = 0;
	uint64_t losses_total = 0, damaged = 0, missing = 0, malformed = 0;
	int md = fmt == SUMMARY_MD;
	fputs(md ? "\n## Drops and damage\n" : "\"drops\":{\"losses\":[", out);
	for (size_t i = 0; i < n; i++) {
		const struct trace_file *f = trace_set_file(ts, i);
		uint32_t nd = 0;
		const struct fr_drop_count *d = trace_file_drops(f, &nd);
		for (uint32_t k = 0; d && k < nd; k++) {
			losses_total += d[k].count;
			if (rows++ >= lim->drop_rows)
				continue;
			char probe[17];
			snprintf(probe, sizeof(probe), "%.16s", d[k].probe);
			const char *lost = out_drop_unit(&d[k]);
			if (md) {
				fprintf(out, "- %s%s%s %s: %" PRIu64 " (%s lost)\n", n > 1 ? host_of(ts, i) : "",
					n > 1 ? ": " : "", probe, fr_drop_reason_name(d[k].reason),
					d[k].count, lost);
				continue;
			}
			fprintf(out, "%s{", rows > 1 ? "," : "");
			json_key_str(out, "host", host_of(ts, i));
			fputc(',', out);
			json_key_str(out, "probe", probe);
			fprintf(out, ",\"reason\":\"%s\",\"count\":%" PRIu64 ",\"lost\":\"%s\"}",
				fr_drop_reason_name(d[k].reason), d[k].count, lost);
		}
		damaged += f->reader ? frec_damage_count(f->reader) : 0;
		missing += f->reader ? frec_chunks_missing(f->reader) : 0;
		malformed += f->n_problems;
	}
	if (md) {
		if (!rows)
			fputs("- no drops\n", out);
		else if (rows > lim->drop_rows)
			fprintf(out, "- ... %zu more (probe, reason) rows; %" PRIu64 " lost in all\n",
				rows - lim->drop_rows, losses_total);
		if (!damaged && !missing && !malformed)
			fputs("- no damaged regions\n", out);
		else
			fprintf(out, "- damaged regions %" PRIu64 ", chunks missing %" PRIu64
				", malformed records %" PRIu64 " (details: " OUT_PROG " check)\n",
				damaged, missing, malformed);
		return;
	}
	fprintf(out, "],\"loss_rows\":%zu,\"losses_total\":%" PRIu64 ",\"damaged_regions\":%" PRIu64
		",\"chunks_missing\":%" PRIu64 ",\"malformed_records\":%" PRIu64 "}", rows,
		losses_total, damaged, missing, malformed);
}

/* ---- the whole ---- */

int summary_write(const struct summary_input *in, enum summary_format fmt, size_t level,
		  FILE *out)
{
	if (level >= N_LEVELS)
		level = N_LEVELS - 1;
	const struct summary_limits *lim = &SUMMARY_LEVELS[level];
	if (fmt == SUMMARY_MD) {
		fprintf(out, "# flightrec summary\n(budget %d tokens, counted as bytes/4", SUMMARY_MAX_TOKENS);
		for (size_t l = 1; l <= level; l++)
			fprintf(out, "%s%s", l == 1 ? "; shortened: " : ",", SUMMARY_LEVELS[l].shortened);
		fputs(")\n\n", out);
		recording_md(in, lim, out);
		findings_md(in, lim, out);
		if (cpu_section(in, lim, fmt, out) || mem_section(in, lim, fmt, out))
			return -1;
		stragglers_section(in, lim, fmt, out);
		if (rdma_section(in, lim, fmt, out))
			return -1;
		drops_section(in, lim, fmt, out);
		return 0;
	}
	fprintf(out, "{\"budget\":{\"rule\":\"bytes/4\",\"max_tokens\":%d,\"level\":%zu,"
		"\"shortened\":[", SUMMARY_MAX_TOKENS, level);
	for (size_t l = 1; l <= level; l++) {
		const char *s = SUMMARY_LEVELS[l].shortened;
		while (*s) {
			size_t k = strcspn(s, ",");
			fprintf(out, "%s\"%.*s\"", l == 1 && s == SUMMARY_LEVELS[l].shortened ? "" : ",",
				(int)k, s);
			s += k + (s[k] == ',');
		}
	}
	fputs("]},", out);
	recording_json(in, lim, out);
	fputc(',', out);
	findings_json(in, lim, out);
	fputc(',', out);
	if (cpu_section(in, lim, fmt, out))
		return -1;
	fputc(',', out);
	if (mem_section(in, lim, fmt, out))
		return -1;
	fputc(',', out);
	stragglers_section(in, lim, fmt, out);
	fputc(',', out);
	if (rdma_section(in, lim, fmt, out))
		return -1;
	fputc(',', out);
	drops_section(in, lim, fmt, out);
	fputs("}\n", out);
	return 0;
}
