/* `explain`'s text and JSON (out_explain.h).  Shares are of every CPU
 * sample kept, as `flame` and pprof's cum% count them. */
#include "out_explain.h"
#include "func_story.h"
#include "model_findings.h"
#include "out_common.h"

#include <inttypes.h>

static double share(uint64_t v, uint64_t of)
{
	return of ? (double)v / (double)of : 0;
}

static size_t shown(size_t n, size_t top)
{
	return n < top ? n : top;
}

static void text_edges(FILE *out, const char *title, const struct story_edge *e, size_t n,
		       uint64_t samples, size_t top)
{
	if (!n)
		return;
	fprintf(out, "%s:\n", title);
	for (size_t i = 0; i < shown(n, top); i++)
		fprintf(out, "  %6.1f%%  %8" PRIu64 "  %s\n", 100 * share(e[i].samples, samples),
			e[i].samples, e[i].name);
	if (n > top)
		fprintf(out, "  ... %zu more\n", n - top);
}

static void text_calls(FILE *out, const char *title, const struct story_call *c, size_t n,
		       uint64_t calls, uint64_t ns, uint64_t errors, const char *err_word, size_t top)
{
	char d[32];
	if (!n) {
		fprintf(out, "%s: none under it\n", title);
		return;
	}
	fprintf(out, "%s: %" PRIu64 " calls, %s, %" PRIu64 " %s\n", title, calls,
		out_duration(ns, d, sizeof(d)), errors, err_word);
	for (size_t i = 0; i < shown(n, top); i++)
		fprintf(out, "  %-28s %8" PRIu64 " calls %10s  %" PRIu64 " %s\n", c[i].name,
			c[i].count, out_duration(c[i].total_ns, d, sizeof(d)), c[i].errors, err_word);
	if (n > top)
		fprintf(out, "  ... %zu more\n", n - top);
}

void out_explain_text(FILE *out, const struct func_story *s, const struct findings_result *fx,
		      size_t top)
{
	char b[2][32];
	if (!s->found) {
		fprintf(out, "explain %s: no frame of the recording is this function\n", s->function);
		if (s->n_candidates) {
			fputs("frames whose names hold it (pass one exactly):\n", out);
			for (size_t i = 0; i < s->n_candidates; i++)
				fprintf(out, "  %6.1f%%  %s\n",
					100 * share(s->candidates[i].samples, s->samples),
					s->candidates[i].name);
		}
		return;
	}
	fprintf(out, "explain %s: %" PRIu64 " of %" PRIu64 " CPU samples under it (%.1f%%), "
		"%" PRIu64 " self (%.1f%%)\n", s->function, s->total, s->samples,
		100 * share(s->total, s->samples), s->self, 100 * share(s->self, s->samples));
	if (s->module) {
		fprintf(out, "module: %s", s->module);
		if (s->has_offset)
			fprintf(out, " +0x%" PRIx64, s->offset);
		fputc('\n', out);
	}
	if (s->source[0])
		fprintf(out, "source: %s%s%.0d\n", s->source, s->line ? ":" : "", s->line);
	if (s->n_frames > 1)
		text_edges(out, "frames (lines)", s->frames, s->n_frames, s->samples, top);
	text_edges(out, "callers", s->callers, s->n_callers, s->samples, top);
	text_edges(out, "callees", s->callees, s->n_callees, s->samples, top);
	text_calls(out, "CUDA calls", s->cuda, s->n_cuda, s->cuda_calls, s->cuda_ns, s->cuda_errors,
		   "errors", top);
	if (s->has_mem)
		fprintf(out, "GPU memory: %s allocated under it (%.1f%% of %s); %s in use at the "
			"peak (%.1f%%)\n", out_bytes(s->mem_alloc_bytes, b[0], 32),
			100 * share(s->mem_alloc_bytes, s->mem_alloc_total),
			out_bytes(s->mem_alloc_total, b[1], 32),
			out_bytes(s->mem_inuse_bytes, b[0], 32),
			100 * share(s->mem_inuse_bytes, s->mem_inuse_total));
	else
		fputs("GPU memory: no device allocations recorded\n", out);
	text_calls(out, "system calls", s->syscalls, s->n_syscalls, s->syscall_calls,
		   s->syscall_ns, s->syscall_errors, "failed", top);
	if (s->n_findings) {
		fputs("findings whose where holds it:\n", out);
		for (size_t i = 0; i < s->n_findings; i++) {
			const struct finding *f = &fx->findings[s->findings[i]];
			fprintf(out, "  %zu. %s", s->findings[i] + 1, finding_kind_name(f->kind));
			if (f->has_cost)
				fprintf(out, ": %.1f ms of GPU idle (%.2f ms per step, %.1f%%)",
					f->cost_ms, f->cost_ms_per_step, 100 * f->share);
			fputc('\n', out);
		}
	} else {
		fputs("findings: none names it\n", out);
	}
	fprintf(out, "processes: %zu\n", s->n_procs);
	for (size_t i = 0; i < shown(s->n_procs, top); i++) {
		const struct story_proc *p = &s->procs[i];
		fprintf(out, "  file %u pid %u (%s)", p->file, p->pid, p->comm);
		if (p->rank >= 0)
			fprintf(out, " rank %d", p->rank);
		fprintf(out, ": %" PRIu64 " samples, %" PRIu64 " CUDA calls (%s), %" PRIu64
			" system calls\n", p->samples, p->cuda_calls, out_duration(p->cuda_ns, b[0], 32),
			p->syscalls);
	}
	if (s->n_procs > top)
		fprintf(out, "  ... %zu more\n", s->n_procs - top);
}

static void json_edges(FILE *out, const char *key, const struct story_edge *e, size_t n,
		       uint64_t samples, size_t top)
{
	fprintf(out, ",\"%s\":[", key);
	for (size_t i = 0; i < shown(n, top); i++) {
		fprintf(out, "%s{\"name\":", i ? "," : "");
		out_json_str(out, e[i].name);
		fprintf(out, ",\"samples\":%" PRIu64 ",\"share\":%.4f}", e[i].samples,
			share(e[i].samples, samples));
	}
	fputc(']', out);
}

static void json_calls(FILE *out, const char *key, const struct story_call *c, size_t n,
		       uint64_t calls, uint64_t ns, uint64_t errors, size_t top)
{
	fprintf(out, ",\"%s\":{\"calls\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"errors\":%" PRIu64
		",\"functions\":[", key, calls, ns, errors);
	for (size_t i = 0; i < shown(n, top); i++) {
		fprintf(out, "%s{\"name\":", i ? "," : "");
		out_json_str(out, c[i].name);
		fprintf(out, ",\"calls\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"errors\":%" PRIu64 "}",
			c[i].count, c[i].total_ns, c[i].errors);
	}
	fputs("]}", out);
}

static size_t left(size_t n, size_t top)
{
	return n > top ? n - top : 0;
}

void out_explain_json(FILE *out, const struct func_story *s, const struct findings_result *fx,
		      size_t top)
{
	fputs("{\"function\":", out);
	out_json_str(out, s->function);
	fprintf(out, ",\"found\":%s,\"samples\":%" PRIu64 ",\"self\":%" PRIu64
		",\"self_share\":%.4f,\"total\":%" PRIu64 ",\"total_share\":%.4f,\"module\":",
		s->found ? "true" : "false", s->samples, s->self, share(s->self, s->samples), s->total,
		share(s->total, s->samples));
	if (s->module)
		out_json_str(out, s->module);
	else
		fputs("null", out);
	if (s->has_offset)
		fprintf(out, ",\"offset\":\"0x%" PRIx64 "\"", s->offset);
	else
		fputs(",\"offset\":null", out);
	fputs(",\"source\":", out);
	if (s->source[0])
		out_json_str(out, s->source);
	else
		fputs("null", out);
	fprintf(out, ",\"line\":%d", s->line);
	json_edges(out, "frames", s->frames, s->n_frames, s->samples, top);
	json_edges(out, "callers", s->callers, s->n_callers, s->samples, top);
	json_edges(out, "callees", s->callees, s->n_callees, s->samples, top);
	json_calls(out, "cuda", s->cuda, s->n_cuda, s->cuda_calls, s->cuda_ns, s->cuda_errors, top);
	json_calls(out, "syscalls", s->syscalls, s->n_syscalls, s->syscall_calls, s->syscall_ns,
		   s->syscall_errors, top);
	if (s->has_mem)
		fprintf(out, ",\"gpu_memory\":{\"allocated_bytes\":%" PRIu64
			",\"allocated_total_bytes\":%" PRIu64 ",\"inuse_at_peak_bytes\":%" PRIu64
			",\"inuse_at_peak_total_bytes\":%" PRIu64 "}", s->mem_alloc_bytes,
			s->mem_alloc_total, s->mem_inuse_bytes, s->mem_inuse_total);
	else
		fputs(",\"gpu_memory\":null", out);
	fputs(",\"findings\":[", out);
	for (size_t i = 0; i < s->n_findings; i++) {
		const struct finding *f = &fx->findings[s->findings[i]];
		fprintf(out, "%s{\"number\":%zu,\"kind\":\"%s\",", i ? "," : "", s->findings[i] + 1,
			finding_kind_name(f->kind));
		if (f->has_cost)
			fprintf(out, "\"cost_ms\":%.3f,\"cost_ms_per_step\":%.3f,\"share\":%.4f}",
				f->cost_ms, f->cost_ms_per_step, f->share);
		else
			fputs("\"cost_ms\":null,\"cost_ms_per_step\":null,\"share\":null}", out);
	}
	fputs("],\"processes\":[", out);
	for (size_t i = 0; i < shown(s->n_procs, top); i++) {
		const struct story_proc *p = &s->procs[i];
		fprintf(out, "%s{\"file\":%u,\"pid\":%u,\"rank\":", i ? "," : "", p->file, p->pid);
		if (p->rank >= 0)
			fprintf(out, "%d", p->rank);
		else
			fputs("null", out);
		fputs(",\"comm\":", out);
		out_json_str(out, p->comm);
		fprintf(out, ",\"samples\":%" PRIu64 ",\"cuda_calls\":%" PRIu64 ",\"cuda_ns\":%" PRIu64
			",\"syscalls\":%" PRIu64 "}", p->samples, p->cuda_calls, p->cuda_ns, p->syscalls);
	}
	fprintf(out, "],\"left_out\":{\"frames\":%zu,\"callers\":%zu,\"callees\":%zu,\"cuda\":%zu,"
		"\"syscalls\":%zu,\"processes\":%zu}", left(s->n_frames, top),
		left(s->n_callers, top), left(s->n_callees, top), left(s->n_cuda, top),
		left(s->n_syscalls, top), left(s->n_procs, top));
	if (!s->found)
		json_edges(out, "candidates", s->candidates, s->n_candidates, s->samples,
			   STORY_MAX_CANDIDATES);
	fputs("}\n", out);
}
