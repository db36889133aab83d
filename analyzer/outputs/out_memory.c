/* GPU memory, as text and JSON (see out_memory.h). */
#include "out_memory.h"
#include "out_common.h"
#include "model_cuda.h"
#include "model_mem.h"
#include "out_mem_stacks.h"
#include "trace_set.h"
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *comm_of(struct trace_set *ts, uint32_t file, uint32_t pid)
{
	const struct ts_process *p = trace_file_process(trace_set_file(ts, file), pid);
	return p && p->comm[0] ? p->comm : "?";
}

static const struct mem_process *process_of(const struct mem_result *r, uint32_t file, uint32_t pid)
{
	for (size_t i = 0; i < r->n_procs; i++)
		if (r->procs[i].file == file && r->procs[i].pid == pid)
			return &r->procs[i];
	return NULL;
}

static const char caching_note[] =
	"reserved by a caching allocator (segments): live tensors inside it are not visible to flightrec";

/* The largest in-use value in each of rows equal intervals of
 * [first, last]: the level carried in from before the interval counts. */
static void over_time_rows(const struct mem_series *s, unsigned rows, uint64_t *t_lo,
			   uint64_t *t_hi, uint64_t *max)
{
	uint64_t span = s->last_t_ns - s->first_t_ns;
	size_t p = 0;
	uint64_t level = 0;
	for (unsigned k = 0; k < rows; k++) {
		t_lo[k] = s->first_t_ns + span / rows * k + span % rows * k / rows;
		t_hi[k] = k + 1 == rows ? s->last_t_ns
			: s->first_t_ns + span / rows * (k + 1) + span % rows * (k + 1) / rows;
		max[k] = level;
		while (p < s->n_points && (s->points[p].t_ns < t_hi[k] ||
					   (k + 1 == rows && s->points[p].t_ns <= t_hi[k]))) {
			level = s->points[p].bytes;
			if (level > max[k])
				max[k] = level;
			p++;
		}
	}
}

static void text_series(struct trace_set *ts, const struct mem_result *r,
			const struct mem_series *s, unsigned rows, FILE *out)
{
	char b1[32], b2[32], line[512];
	if (s->space == MEM_SPACE_DEVICE) {
		if (s->device >= 0)
			fprintf(out, "process %u (%s), device %d\n", s->pid, comm_of(ts, s->file, s->pid), s->device);
		else
			fprintf(out, "process %u (%s), device unknown\n", s->pid, comm_of(ts, s->file, s->pid));
	} else {
		fprintf(out, "process %u (%s), pinned host memory (not device memory)\n", s->pid,
			comm_of(ts, s->file, s->pid));
	}
	fprintf(out, "  %-18s %s at %.6f s\n", "peak", out_bytes(s->peak_bytes, b1, sizeof(b1)),
		(double)s->peak_t_ns / 1e9);
	fprintf(out, "  %-18s %s in %" PRIu64 " allocation%s\n", "in use at end",
		out_bytes(s->end_bytes, b1, sizeof(b1)), s->end_count, s->end_count == 1 ? "" : "s");
	fprintf(out, "  %-18s %" PRIu64 " (%s), %" PRIu64 " freed (%s), %" PRIu64 " failed\n",
		"allocations", s->allocs, out_bytes(s->alloc_bytes, b1, sizeof(b1)), s->frees,
		out_bytes(s->freed_bytes, b2, sizeof(b2)), s->failed_allocs);
	if (s->managed_bytes_peak)
		fprintf(out, "  %-18s %s at most (cudaMallocManaged; counted in the totals)\n", "managed",
			out_bytes(s->managed_bytes_peak, b1, sizeof(b1)));
	const struct mem_process *p = process_of(r, s->file, s->pid);
	int caching = s->space == MEM_SPACE_DEVICE && p && p->caching_allocator;
	if (caching)
		fprintf(out, "  %-18s %s%s\n", "note", caching_note,
			p->pytorch_like ? " (segment sizes are 2 MiB multiples, like PyTorch's)" : "");
	if (s->before_frees)
		fprintf(out, "  %-18s %" PRIu64 " free%s of memory allocated before the recording (bytes unknown)\n",
			"before recording", s->before_frees, s->before_frees == 1 ? "" : "s");
	if (s->failed_frees)
		fprintf(out, "  %-18s %" PRIu64 " (returned an error; not applied)\n", "failed frees",
			s->failed_frees);
	if (s->replaced)
		fprintf(out, "  %-18s %" PRIu64 " (an address was allocated again while live: its free "
			"was not recorded)\n", "missed frees", s->replaced);
	if (s->n_top_at_peak) {
		fprintf(out, "  top stacks at the peak:\n");
		for (size_t i = 0; i < s->n_top_at_peak; i++)
			fprintf(out, "    %10s  %s\n", out_bytes(s->top_at_peak[i].bytes, b1, sizeof(b1)),
				mem_stack_line(ts, s->file, s->top_at_peak[i].stack_id, 4, line, sizeof(line)));
	}
	if (s->n_top_leaks) {
		fprintf(out, "  never freed by the end of the recording%s, top stacks:\n",
			caching ? " (cached segments, not lost memory)" : "");
		for (size_t i = 0; i < s->n_top_leaks; i++)
			fprintf(out, "    %10s  %6" PRIu64 " alloc%s  %s\n",
				out_bytes(s->top_leaks[i].bytes, b1, sizeof(b1)), s->top_leaks[i].count,
				s->top_leaks[i].count == 1 ? " " : "s",
				mem_stack_line(ts, s->file, s->top_leaks[i].stack_id, 4, line, sizeof(line)));
	}
	if (s->n_points) {
		uint64_t *lo = calloc(rows, sizeof(*lo)), *hi = calloc(rows, sizeof(*hi)),
			 *mx = calloc(rows, sizeof(*mx));
		if (lo && hi && mx) {
			unsigned n = s->last_t_ns > s->first_t_ns ? rows : 1;
			over_time_rows(s, n, lo, hi, mx);
			fprintf(out, "  in use over time:\n    %21s  %10s\n", "seconds", "max in use");
			for (unsigned k = 0; k < n; k++)
				fprintf(out, "    %9.3f - %9.3f  %10s\n", (double)lo[k] / 1e9,
					(double)hi[k] / 1e9, out_bytes(mx[k], b1, sizeof(b1)));
		}
		free(lo);
		free(hi);
		free(mx);
	}
}

static void text_failure(struct trace_set *ts, const struct mem_failure *fl, FILE *out)
{
	char b1[32], b2[32], line[512];
	const char *fn = cuda_func_name(fl->func), *err = cuda_error_name(fl->func, fl->error);
	fprintf(out, "  %.6f s  pid %u (%s) tid %u", (double)fl->t_ns / 1e9, fl->pid,
		comm_of(ts, fl->file, fl->pid), fl->tid);
	if (fl->device >= 0)
		fprintf(out, " device %d", fl->device);
	fprintf(out, ": %s of %s failed: %s (%" PRId64 "); %s in use then\n", fn ? fn : "allocation",
		out_bytes(fl->bytes, b1, sizeof(b1)), err ? err : "error", fl->error,
		out_bytes(fl->inuse_bytes, b2, sizeof(b2)));
	fprintf(out, "    stack: %s\n", mem_stack_line(ts, fl->file, fl->stack_id, 6, line, sizeof(line)));
	if (fl->n_holders)
		fprintf(out, "    top holders then:\n");
	for (size_t i = 0; i < fl->n_holders; i++)
		fprintf(out, "      %10s  %s\n", out_bytes(fl->holders[i].bytes, b1, sizeof(b1)),
			mem_stack_line(ts, fl->file, fl->holders[i].stack_id, 4, line, sizeof(line)));
}

void out_memory_text(struct trace_set *ts, const struct mem_result *r, unsigned rows, FILE *out)
{
	char b1[32], when[64];
	for (size_t fi = 0; fi < trace_set_count(ts); fi++) {
		const struct trace_file *f = trace_set_file(ts, fi);
		if (fi)
			fputc('\n', out);
		fprintf(out, "GPU memory: %s%s%s\n", f->path, f->cmdline[0] ? ": " : "", f->cmdline);
		fprintf(out, "times are seconds from the start of the recording (%s)\n",
			out_iso_time(f->hdr.start_real_ns, when, sizeof(when)));
		if (f->has_snapshot && f->snapshot.carried_allocs && f->snapshot.window_first_ns)
			/* the ledger replays the carried allocations first: exact from
			 * the window on, a partial history before it */
			fprintf(out, "a flight-recorder snapshot: its events start at %.6f s; before "
				"that only the %u allocations still live then are known (carried "
				"into the snapshot)\n",
				f->snapshot.window_first_ns > f->hdr.start_mono_ns ?
				(double)(f->snapshot.window_first_ns - f->hdr.start_mono_ns) / 1e9 : 0.0,
				f->snapshot.carried_allocs);
		if (fi < r->n_files && r->files[fi].peak_bytes)
			fprintf(out, "device memory peak, all processes: %s at %.6f s\n",
				out_bytes(r->files[fi].peak_bytes, b1, sizeof(b1)),
				(double)r->files[fi].peak_t_ns / 1e9);
		if (fi < r->n_files && r->files[fi].null_frees)
			fprintf(out, "free(NULL) calls (no-ops): %" PRIu64 "\n", r->files[fi].null_frees);
		if (fi < r->n_files && r->files[fi].nested_dups)
			fprintf(out, "runtime calls around a recorded driver call (e.g. cudaMalloc around "
				"cuMemAlloc_v2), counted once: %" PRIu64 "\n", r->files[fi].nested_dups);
		if (fi < r->n_files && r->files[fi].implausible)
			fprintf(out, "ignored: %" PRIu64 " successful allocation%s with a NULL pointer or an "
				"implausible size\n", r->files[fi].implausible,
				r->files[fi].implausible == 1 ? "" : "s");
		for (size_t i = 0; i < r->n_series; i++) {
			if (r->series[i].file != fi)
				continue;
			fputc('\n', out);
			text_series(ts, r, &r->series[i], rows, out);
		}
	}
	if (r->n_failures) {
		fprintf(out, "\nfailed allocations: %" PRIu64 "%s\n", r->n_failures,
			r->n_failures > r->n_failures_kept ? " (the first ones shown)" : "");
		for (size_t i = 0; i < r->n_failures_kept; i++)
			text_failure(ts, &r->failures[i], out);
	}
}

static void json_top(struct trace_set *ts, uint32_t file, const struct mem_stack_bytes *top,
		     size_t n, int with_count, FILE *out)
{
	fputc('[', out);
	for (size_t i = 0; i < n; i++) {
		fprintf(out, "%s{\"bytes\":%" PRIu64, i ? "," : "", top[i].bytes);
		if (with_count)
			fprintf(out, ",\"allocations\":%" PRIu64, top[i].count);
		fprintf(out, ",\"stack\":");
		mem_stack_json(ts, file, top[i].stack_id, out);
		fputc('}', out);
	}
	fputc(']', out);
}

void out_memory_json(struct trace_set *ts, const struct mem_result *r, FILE *out)
{
	fprintf(out, "{\"files\":[");
	for (size_t fi = 0; fi < trace_set_count(ts); fi++) {
		const struct trace_file *f = trace_set_file(ts, fi);
		const struct mem_file *mf = fi < r->n_files ? &r->files[fi] : NULL;
		fprintf(out, "%s{\"path\":", fi ? "," : "");
		out_json_str(out, f->path);
		fprintf(out, ",\"start_real_ns\":%" PRIu64 ",\"peak_bytes\":%" PRIu64 ",\"peak_s\":%.9f,"
			"\"null_frees\":%" PRIu64 ",\"ignored_allocations\":%" PRIu64
			",\"nested_duplicates\":%" PRIu64 "}",
			f->hdr.start_real_ns, mf ? mf->peak_bytes : 0,
			mf ? (double)mf->peak_t_ns / 1e9 : 0.0, mf ? mf->null_frees : 0,
			mf ? mf->implausible : 0, mf ? mf->nested_dups : 0);
	}
	fprintf(out, "],\"series\":[");
	for (size_t i = 0; i < r->n_series; i++) {
		const struct mem_series *s = &r->series[i];
		const struct mem_process *p = process_of(r, s->file, s->pid);
		fprintf(out, "%s{\"file\":%u,\"pid\":%u,\"comm\":", i ? "," : "", s->file, s->pid);
		out_json_str(out, comm_of(ts, s->file, s->pid));
		fprintf(out, ",\"device\":%d,\"space\":\"%s\",\"peak_bytes\":%" PRIu64 ",\"peak_s\":%.9f,"
			"\"end_bytes\":%" PRIu64 ",\"end_allocations\":%" PRIu64 ",\"allocations\":%" PRIu64
			",\"allocated_bytes\":%" PRIu64 ",\"frees\":%" PRIu64 ",\"freed_bytes\":%" PRIu64
			",\"failed_allocations\":%" PRIu64 ",\"before_recording_frees\":%" PRIu64
			",\"failed_frees\":%" PRIu64 ",\"missed_frees\":%" PRIu64
			",\"managed_peak_bytes\":%" PRIu64 ",\"caching_allocator\":%s,\"pytorch_like\":%s",
			s->device, s->space == MEM_SPACE_DEVICE ? "device" : "pinned_host", s->peak_bytes,
			(double)s->peak_t_ns / 1e9, s->end_bytes, s->end_count, s->allocs, s->alloc_bytes,
			s->frees, s->freed_bytes, s->failed_allocs, s->before_frees, s->failed_frees,
			s->replaced, s->managed_bytes_peak,
			s->space == MEM_SPACE_DEVICE && p && p->caching_allocator ? "true" : "false",
			s->space == MEM_SPACE_DEVICE && p && p->pytorch_like ? "true" : "false");
		fprintf(out, ",\"top_at_peak\":");
		json_top(ts, s->file, s->top_at_peak, s->n_top_at_peak, 0, out);
		fprintf(out, ",\"never_freed\":");
		json_top(ts, s->file, s->top_leaks, s->n_top_leaks, 1, out);
		fprintf(out, ",\"in_use\":[");
		for (size_t k = 0; k < s->n_points; k++)
			fprintf(out, "%s[%.9f,%" PRIu64 "]", k ? "," : "", (double)s->points[k].t_ns / 1e9,
				s->points[k].bytes);
		fprintf(out, "]}");
	}
	fprintf(out, "],\"failed_allocations_total\":%" PRIu64 ",\"failed_allocations\":[", r->n_failures);
	for (size_t i = 0; i < r->n_failures_kept; i++) {
		const struct mem_failure *fl = &r->failures[i];
		const char *fn = cuda_func_name(fl->func), *err = cuda_error_name(fl->func, fl->error);
		fprintf(out, "%s{\"file\":%u,\"t_s\":%.9f,\"pid\":%u,\"tid\":%u,\"device\":%d,\"function\":",
			i ? "," : "", fl->file, (double)fl->t_ns / 1e9, fl->pid, fl->tid, fl->device);
		out_json_str(out, fn ? fn : "?");
		fprintf(out, ",\"bytes\":%" PRIu64 ",\"error\":%" PRId64 ",\"error_name\":", fl->bytes, fl->error);
		if (err)
			out_json_str(out, err);
		else
			fputs("null", out);
		fprintf(out, ",\"in_use_bytes\":%" PRIu64 ",\"stack\":", fl->inuse_bytes);
		mem_stack_json(ts, fl->file, fl->stack_id, out);
		fprintf(out, ",\"top_holders\":");
		json_top(ts, fl->file, fl->holders, fl->n_holders, 1, out);
		fputc('}', out);
	}
	fprintf(out, "]}\n");
}

