/* `diff`'s text and JSON (out_diff.h). */
#include "out_diff.h"
#include "frame_pick.h"
#include "out_common.h"
#include "trace_diff.h"

#include <inttypes.h>
#include <string.h>

static const char *finding_status(const struct diff_finding *f)
{
	if (f->listed[0] && f->listed[1])
		return "both";
	if (f->listed[1])
		return "new";
	if (f->listed[0])
		return "gone";
	return "below";
}

/* A ';'-joined stack as frame_pick.h shows it: its innermost
 * DIFF_STACK_FRAMES picked frames, the rest counted. */
static const char *stack_shown(const char *stack, char *buf, size_t len)
{
	const char *frames[1024];
	char copy[16384];
	size_t n = 0;
	snprintf(copy, sizeof(copy), "%s", stack);
	for (char *save, *f = strtok_r(copy, ";", &save); f && n < 1024; f = strtok_r(NULL, ";", &save))
		frames[n++] = f;
	return frame_pick_text(NULL, frames, n, DIFF_STACK_FRAMES, buf, len);
}

static size_t shown(size_t n, size_t top)
{
	return n < top ? n : top;
}

static void text_side(FILE *out, const char *what, const struct diff_side *s)
{
	fprintf(out, "%s: %zu file%s, %zu GPU process%s, ", what, s->files, s->files == 1 ? "" : "s",
		s->gpu_procs, s->gpu_procs == 1 ? "" : "es");
	if (s->steps)
		fprintf(out, "%zu steps (%s), %.3f ms a step", s->steps, s->steps_from, s->step_ms);
	else
		fputs("steps unknown", out);
	fprintf(out, ", wall %.3f s, %" PRIu64 " CPU samples", s->wall_s, s->cpu_samples);
	if (s->sample_hz > 0)
		fprintf(out, " (about %.0f Hz)", s->sample_hz);
	fputs(", probes:", out);
	for (unsigned f = 0; f < DIFF_FAMS; f++)
		if (s->families & (1u << f))
			fprintf(out, " %s", diff_family_name(f));
	fputc('\n', out);
}

static void text_list_share(FILE *out, const char *title, const struct diff_row *rows,
			    const struct diff_order *o, int slot, int share_slot, const char *fmt_unit,
			    double scale, int stacks, size_t top);

static void text_list(FILE *out, const char *title, const struct diff_row *rows,
		      const struct diff_order *o, int slot, const char *fmt_unit, double scale,
		      int stacks, size_t top)
{
	text_list_share(out, title, rows, o, slot, -1, fmt_unit, scale, stacks, top);
}

static void text_list_share(FILE *out, const char *title, const struct diff_row *rows,
			    const struct diff_order *o, int slot, int share_slot, const char *fmt_unit,
			    double scale, int stacks, size_t top)
{
	if (!o->n)
		return;
	fprintf(out, "%s:\n", title);
	for (size_t i = 0; i < shown(o->n, top); i++) {
		const struct diff_row *r = &rows[o->idx[i]];
		double b = r->v[0][slot] * scale, a = r->v[1][slot] * scale;
		char buf[2048];
		const char *key = stacks ? stack_shown(r->key, buf, sizeof(buf)) : r->key;
		if (share_slot >= 0)
			fprintf(out, "  %+10.3f  %10.3f -> %-10.3f %s  %5.1f%% -> %5.1f%%  %s\n", a - b, b,
				a, fmt_unit, 100 * r->v[0][share_slot], 100 * r->v[1][share_slot], key);
		else
			fprintf(out, "  %+10.3f  %10.3f -> %-10.3f %s  %s\n", a - b, b, a, fmt_unit, key);
	}
	if (o->n > top)
		fprintf(out, "  ... %zu more\n", o->n - top);
}

void out_diff_text(FILE *out, const struct trace_diff *d, size_t top)
{
	const struct diff_side *b = &d->side[0], *a = &d->side[1];
	char x[3][32];
	text_side(out, "before", b);
	text_side(out, "after", a);
	fprintf(out, "deltas per %s; %s\n", d->unit,
		d->comparable ? "comparable" : "NOT comparable (see notes)");
	for (size_t i = 0; i < d->n_notes; i++)
		fprintf(out, "note: %s\n", d->notes[i]);
	if (b->steps && a->steps)
		fprintf(out, "step time: %.3f -> %.3f ms (%+.3f ms, %+.1f%%)\n", b->step_ms, a->step_ms,
			a->step_ms - b->step_ms,
			b->step_ms > 0 ? 100 * (a->step_ms - b->step_ms) / b->step_ms : 0.0);
	if (b->gpu_idle_share >= 0 || a->gpu_idle_share >= 0)
		fprintf(out, "GPU idle: %.1f%% -> %.1f%% of wall x GPU processes (%+.1f pp)\n",
			b->gpu_idle_share > 0 ? 100 * b->gpu_idle_share : 0.0,
			a->gpu_idle_share > 0 ? 100 * a->gpu_idle_share : 0.0,
			100 * ((a->gpu_idle_share > 0 ? a->gpu_idle_share : 0) -
			       (b->gpu_idle_share > 0 ? b->gpu_idle_share : 0)));
	fprintf(out, "GPU memory peak: %s -> %s (%s%s)\n", out_bytes(b->mem_peak_bytes, x[0], 32),
		out_bytes(a->mem_peak_bytes, x[1], 32),
		a->mem_peak_bytes >= b->mem_peak_bytes ? "+" : "-",
		out_bytes(a->mem_peak_bytes >= b->mem_peak_bytes ? a->mem_peak_bytes - b->mem_peak_bytes
								  : b->mem_peak_bytes - a->mem_peak_bytes,
			  x[2], 32));
	fputs("straggler: ", out);
	for (int s = 0; s < 2; s++) {
		const struct diff_side *sd = &d->side[s];
		if (sd->straggler)
			fprintf(out, "rank %d (%.3f ms per step)", sd->straggler_rank,
				sd->straggler_cost_ms_per_step);
		else
			fputs("none", out);
		fputs(s ? "\n" : " -> ", out);
	}
	if (d->n_findings) {
		fprintf(out, "findings (GPU idle ms per %s):\n", d->unit);
		for (size_t i = 0; i < d->n_findings; i++) {
			const struct diff_finding *f = &d->findings[i];
			fprintf(out, "  %-5s %-16s", finding_status(f), finding_kind_name(f->kind));
			if (f->has_cost)
				fprintf(out, " %10.3f -> %-10.3f (%+.3f)", f->cost[0], f->cost[1],
					f->cost[1] - f->cost[0]);
			else
				fputs(" (no idle cost)", out);
			fputc('\n', out);
		}
	} else {
		fputs("findings: none on either side\n", out);
	}
	char unit[40], cpu_unit[40];
	snprintf(unit, sizeof(unit), "ms/%s", d->unit);
	snprintf(cpu_unit, sizeof(cpu_unit), "%s", d->side[0].sample_hz > 0 && d->side[1].sample_hz > 0
		 ? unit : "samples/unit");
	text_list_share(out, "functions by CPU time under them (and their share of samples)",
			d->funcs, &d->by_cpu, DF_CPU_MS, DF_CPU_TOTAL, cpu_unit, 1, 0, top);
	text_list(out, "functions by the CUDA time of the calls they make", d->funcs, &d->by_cuda,
		  DF_CUDA_MS, unit, 1, 0, top);
	text_list(out, "functions by GPU memory they allocated in use at the peak (MiB)", d->funcs,
		  &d->by_mem, DF_MEM_BYTES, "MiB", 1.0 / 1048576, 0, top);
	text_list_share(out, "stacks by CPU time (and their share of samples)", d->stacks,
			&d->stacks_cpu, DS_CPU_MS, DS_CPU, cpu_unit, 1, 1, top);
	text_list(out, "stacks by CUDA time", d->stacks, &d->stacks_cuda, DS_CUDA_MS, unit, 1, 1, top);
	text_list(out, "stacks by GPU memory in use at the peak (MiB)", d->stacks, &d->stacks_mem,
		  DS_MEM_BYTES, "MiB", 1.0 / 1048576, 1, top);
	text_list(out, "CUDA functions by time", d->calls, &d->calls_ms, DC_MS, unit, 1, 0, top);
}

static void json_num(FILE *out, const char *key, double v, int known)
{
	if (known)
		fprintf(out, "\"%s\":%.6g", key, v);
	else
		fprintf(out, "\"%s\":null", key);
}

static void json_side(FILE *out, const struct diff_side *s)
{
	fprintf(out, "{\"files\":%zu,\"gpu_processes\":%zu,\"ranks\":%zu,\"steps\":%zu,"
		"\"steps_from\":\"%s\",\"wall_s\":%.6f,", s->files, s->gpu_procs, s->ranks, s->steps,
		s->steps_from, s->wall_s);
	json_num(out, "step_ms", s->step_ms, s->steps > 0);
	fprintf(out, ",\"gpu_idle_ms\":%.3f,", s->gpu_idle_ms);
	json_num(out, "gpu_idle_share", s->gpu_idle_share, s->gpu_idle_share >= 0);
	fprintf(out, ",\"cpu_samples\":%" PRIu64 ",", s->cpu_samples);
	json_num(out, "sample_hz", s->sample_hz, s->sample_hz > 0);
	fprintf(out, ",\"mem_peak_bytes\":%" PRIu64 ",\"probes\":[", s->mem_peak_bytes);
	int first = 1;
	for (unsigned f = 0; f < DIFF_FAMS; f++) {
		if (s->families & (1u << f)) {
			fprintf(out, "%s\"%s\"", first ? "" : ",", diff_family_name(f));
			first = 0;
		}
	}
	fputs("],\"straggler\":", out);
	if (s->straggler)
		fprintf(out, "{\"rank\":%d,\"cost_ms_per_step\":%.3f}", s->straggler_rank,
			s->straggler_cost_ms_per_step);
	else
		fputs("null", out);
	fputc('}', out);
}

static void json_pair(FILE *out, const char *key, double b, double a, int known)
{
	if (!known) {
		fprintf(out, ",\"%s\":null", key);
		return;
	}
	fprintf(out, ",\"%s\":{\"before\":%.6g,\"after\":%.6g,\"delta\":%.6g}", key, b, a, a - b);
}

static void json_list(FILE *out, const char *key, const char *key_name, const struct diff_row *rows,
		      const struct diff_order *o, int slot, int self_slot, int stacks, size_t top)
{
	fprintf(out, "\"%s\":[", key);
	for (size_t i = 0; i < shown(o->n, top); i++) {
		const struct diff_row *r = &rows[o->idx[i]];
		char buf[2048];
		fprintf(out, "%s{\"%s\":", i ? "," : "", key_name);
		out_json_str(out, stacks ? stack_shown(r->key, buf, sizeof(buf)) : r->key);
		fprintf(out, ",\"before\":%.6g,\"after\":%.6g,\"delta\":%.6g", r->v[0][slot],
			r->v[1][slot], r->v[1][slot] - r->v[0][slot]);
		if (self_slot == DF_CPU_TOTAL && !stacks)
			fprintf(out, ",\"share_before\":%.6g,\"share_after\":%.6g,\"self_share_before\":"
				"%.6g,\"self_share_after\":%.6g", r->v[0][DF_CPU_TOTAL], r->v[1][DF_CPU_TOTAL],
				r->v[0][DF_CPU_SELF], r->v[1][DF_CPU_SELF]);
		else if (self_slot == DS_CPU && stacks)
			fprintf(out, ",\"share_before\":%.6g,\"share_after\":%.6g", r->v[0][DS_CPU],
				r->v[1][DS_CPU]);
		fputc('}', out);
	}
	fputc(']', out);
}

void out_diff_json(FILE *out, const struct trace_diff *d, size_t top)
{
	const struct diff_side *b = &d->side[0], *a = &d->side[1];
	fprintf(out, "{\"unit\":\"%s\",\"comparable\":%s,\"notes\":[", d->unit,
		d->comparable ? "true" : "false");
	for (size_t i = 0; i < d->n_notes; i++) {
		if (i)
			fputc(',', out);
		out_json_str(out, d->notes[i]);
	}
	fputs("],\"before\":", out);
	json_side(out, b);
	fputs(",\"after\":", out);
	json_side(out, a);
	json_pair(out, "step_ms", b->step_ms, a->step_ms, b->steps && a->steps);
	json_pair(out, "gpu_idle_share", b->gpu_idle_share > 0 ? b->gpu_idle_share : 0,
		  a->gpu_idle_share > 0 ? a->gpu_idle_share : 0,
		  b->gpu_idle_share >= 0 || a->gpu_idle_share >= 0);
	json_pair(out, "mem_peak_bytes", (double)b->mem_peak_bytes, (double)a->mem_peak_bytes, 1);
	fputs(",\"findings\":[", out);
	for (size_t i = 0; i < d->n_findings; i++) {
		const struct diff_finding *f = &d->findings[i];
		fprintf(out, "%s{\"kind\":\"%s\",\"status\":\"%s\",", i ? "," : "",
			finding_kind_name(f->kind), finding_status(f));
		if (f->has_cost)
			fprintf(out, "\"cost_ms_before\":%.3f,\"cost_ms_after\":%.3f,\"delta_ms\":%.3f}",
				f->cost[0], f->cost[1], f->cost[1] - f->cost[0]);
		else
			fputs("\"cost_ms_before\":null,\"cost_ms_after\":null,\"delta_ms\":null}", out);
	}
	fputs("],\"functions\":{", out);
	json_list(out, "cpu_ms", "function", d->funcs, &d->by_cpu, DF_CPU_MS, DF_CPU_TOTAL, 0, top);
	fputc(',', out);
	json_list(out, "cuda_ms", "function", d->funcs, &d->by_cuda, DF_CUDA_MS, -1, 0, top);
	fputc(',', out);
	json_list(out, "gpu_bytes_at_peak", "function", d->funcs, &d->by_mem, DF_MEM_BYTES, -1, 0, top);
	fputs("},\"stacks\":{", out);
	json_list(out, "cpu_ms", "stack", d->stacks, &d->stacks_cpu, DS_CPU_MS, DS_CPU, 1, top);
	fputc(',', out);
	json_list(out, "cuda_ms", "stack", d->stacks, &d->stacks_cuda, DS_CUDA_MS, -1, 1, top);
	fputc(',', out);
	json_list(out, "gpu_bytes_at_peak", "stack", d->stacks, &d->stacks_mem, DS_MEM_BYTES, -1, 1,
		  top);
	fputs("},", out);
	json_list(out, "cuda_calls_ms", "function", d->calls, &d->calls_ms, DC_MS, -1, 0, top);
	fprintf(out, ",\"changed\":{\"functions_cpu\":%zu,\"functions_cuda\":%zu,"
		"\"functions_memory\":%zu,\"stacks_cpu\":%zu,\"stacks_cuda\":%zu,\"stacks_memory\":%zu,"
		"\"cuda_calls\":%zu}}\n", d->by_cpu.n, d->by_cuda.n, d->by_mem.n, d->stacks_cpu.n,
		d->stacks_cuda.n, d->stacks_mem.n, d->calls_ms.n);
}
