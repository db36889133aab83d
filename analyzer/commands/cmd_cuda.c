/* `flightrec-analyze cuda`: the CUDA API table (calls, total, self, p50,
 * p99, max, errors by code), the host-device copies table (direction,
 * pinned or pageable, sync or async, bytes, GB/s), the async copies
 * immediately followed by a synchronize, and the GPU kernels the CUPTI
 * library recorded (by name, by stream); text or --json.  Not the models
 * (model_cuda.c, model_gpu.c): this file parses options and lays out the
 * results. */
#include "cli.h"
#include "out_common.h"
#include "commands.h"
#include "model_cuda.h"
#include "model_gpu.h"
#include "model_mem.h"
#include "out_mem_stacks.h"
#include "trace_set.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char cuda_help[] =
	"usage: " CLI_PROG " cuda FILE... [--pid PID] [--top N] [--json]\n"
	"\n"
	"What the CUDA runtime and driver calls cost on the host:\n"
	"  calls     per function: calls, total time, self time (total minus the\n"
	"            CUDA calls nested in it on the same thread, e.g. the driver\n"
	"            call inside a runtime call), p50, p99 (within 0.4%), max,\n"
	"            errors by code and name\n"
	"  copies    by direction (H2D, D2H, D2D, H2H; cudaMemcpyDefault is\n"
	"            inferred from the recorded allocations), host memory pinned\n"
	"            or pageable, sync or async: calls, bytes, time, GB/s (bytes\n"
	"            over call time: a transfer rate for sync copies only)\n"
	"  async then sync  cudaMemcpyAsync whose thread's next CUDA call is a\n"
	"            stream/device/event synchronize starting < 50 us after the\n"
	"            copy returned: the copy overlapped nothing; top stacks\n"
	"  GPU kernels  what ran on the GPU, from the CUPTI records of a job\n"
	"            recorded with --gpu-kernels: per kernel name count, total,\n"
	"            p50, p99, max; per device and stream kernels and busy time;\n"
	"            launches joined to their kernels.  Without those records\n"
	"            (an attached job, --pid) the tables above are host-side\n"
	"            times: they bound GPU time, they do not measure it\n"
	"\n"
	"options:\n"
	"  --pid PID  only process PID\n"
	"  --top N    stacks listed for async-then-sync (default 5)\n"
	"  --json     one JSON object: calls, copies, async_then_sync, gpu\n"
	"\n"
	"examples:\n"
	"  " CLI_PROG " cuda run.frec\n"
	"  " CLI_PROG " cuda run.frec --pid 4242 --top 10\n"
	"  " CLI_PROG " cuda node*.frec --json > cuda.json\n";

static const struct cli_table_spec cuda_spec = {
	.cmd = "cuda", .help = cuda_help, .takes_pid = 1,
	.number_name = "--top", .number_min = 0, .number_max = 1000,
	.number_default = 5,
};

/* GB/s (10^9 bytes per second), or -1 when the time is 0. */
static double gbps(uint64_t bytes, uint64_t ns)
{
	return ns ? (double)bytes / (double)ns : -1;
}

/* Kernel names in the text table: C++ templates run long */
#define GPU_NAME_COLUMN 44
#define GPU_TEXT_ROWS 20

static void gpu_text(const struct gpu_result *g, FILE *out)
{
	char d[6][32];
	if (!g->kernels) {
		fprintf(out, "\nGPU kernels: none recorded.  Kernel times need the job started by "
			"'flightrec record --gpu-kernels -- COMMAND' (or with CUDA_INJECTION64_PATH "
			"naming libflightrec_cupti.so); the times above are host-side: bounds on GPU "
			"time, not measurements of it\n");
		if (g->launches)
			fprintf(out, "  (%" PRIu64 " launches recorded by the library, no kernel record "
				"reached the trace)\n", g->launches);
		return;
	}
	fprintf(out, "\nGPU kernels (CUPTI): %" PRIu64 ", %s on the GPU; %" PRIu64 " joined to their "
		"launch of %" PRIu64 " launches recorded", g->kernels, out_duration(g->total_ns, d[0], 32),
		g->joined, g->launches);
	if (g->launches_without_kernel)
		fprintf(out, ", %" PRIu64 " launches without a kernel record", g->launches_without_kernel);
	if (g->dropped)
		fprintf(out, "; %" PRIu64 " kernel records dropped by the library", g->dropped);
	fputc('\n', out);
	fprintf(out, "%-*s %10s %10s %10s %10s %10s\n", GPU_NAME_COLUMN, "kernel", "count", "total",
		"p50", "p99", "max");
	for (size_t i = 0; i < g->n_rows && i < GPU_TEXT_ROWS; i++) {
		const struct gpu_kernel_row *w = &g->rows[i];
		size_t n = strlen(w->name);
		if (n > GPU_NAME_COLUMN)
			fprintf(out, "%.*s...", GPU_NAME_COLUMN - 3, w->name);
		else
			fprintf(out, "%-*s", GPU_NAME_COLUMN, w->name);
		fprintf(out, " %10" PRIu64 " %10s %10s %10s %10s\n", w->count,
			out_duration(w->total_ns, d[0], 32), out_duration(w->p50_ns, d[1], 32),
			out_duration(w->p99_ns, d[2], 32), out_duration(w->max_ns, d[3], 32));
	}
	if (g->n_rows > GPU_TEXT_ROWS)
		fprintf(out, "... %zu more kernel names (--json lists them all)\n",
			g->n_rows - GPU_TEXT_ROWS);
	fprintf(out, "%-8s %6s %10s %10s %10s %10s %6s\n", "pid", "device", "stream", "kernels",
		"busy", "span", "busy%");
	for (size_t i = 0; i < g->n_streams; i++) {
		const struct gpu_stream_row *s = &g->streams[i];
		uint64_t span = s->last_ns - s->first_ns;
		fprintf(out, "%-8u %6u %10u %10" PRIu64 " %10s %10s %5.1f%%\n", s->pid, s->device,
			s->stream, s->kernels, out_duration(s->busy_ns, d[0], 32),
			out_duration(span, d[1], 32),
			span ? 100.0 * (double)s->busy_ns / (double)span : 100.0);
	}
}

static void gpu_json(const struct gpu_result *g, FILE *out)
{
	fprintf(out, ",\"gpu\":{\"source\":\"%s\",\"kernels\":%" PRIu64 ",\"launches\":%" PRIu64
		",\"joined\":%" PRIu64 ",\"in_api_call\":%" PRIu64 ",\"launches_without_kernel\":%" PRIu64
		",\"dropped\":%" PRIu64 ",\"bad_times\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"by_name\":[",
		g->kernels ? "cupti" : "none", g->kernels, g->launches, g->joined, g->in_api_call,
		g->launches_without_kernel, g->dropped, g->bad_times, g->total_ns);
	for (size_t i = 0; i < g->n_rows; i++) {
		const struct gpu_kernel_row *w = &g->rows[i];
		fprintf(out, "%s{\"name\":", i ? "," : "");
		out_json_str(out, w->name);
		fprintf(out, ",\"count\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"min_ns\":%" PRIu64
			",\"max_ns\":%" PRIu64 ",\"p50_ns\":%" PRIu64 ",\"p99_ns\":%" PRIu64 "}",
			w->count, w->total_ns, w->min_ns, w->max_ns, w->p50_ns, w->p99_ns);
	}
	fputs("],\"streams\":[", out);
	for (size_t i = 0; i < g->n_streams; i++) {
		const struct gpu_stream_row *s = &g->streams[i];
		fprintf(out, "%s{\"file\":%u,\"pid\":%u,\"device\":%u,\"stream\":%u,\"kernels\":%" PRIu64
			",\"busy_ns\":%" PRIu64 ",\"first_ns\":%" PRIu64 ",\"last_ns\":%" PRIu64 "}",
			i ? "," : "", s->file, s->pid, s->device, s->stream, s->kernels, s->busy_ns,
			s->first_ns, s->last_ns);
	}
	fputs("]}", out);
}

static void cuda_text(struct trace_set *ts, const struct cuda_result *r, unsigned top, FILE *out)
{
	char d[6][32], line[512];
	fprintf(out, "CUDA API calls: %" PRIu64 " on %zu thread%s\n", r->events, r->threads,
		r->threads == 1 ? "" : "s");
	fprintf(out, "%-28s %10s %10s %10s %10s %10s %10s  %s\n", "function", "calls", "total",
		"self", "p50", "p99", "max", "errors");
	for (size_t i = 0; i < r->n_rows; i++) {
		const struct cuda_api_row *w = &r->rows[i];
		fprintf(out, "%-28s %10" PRIu64 " %10s %10s %10s %10s %10s  ", w->name, w->count,
			out_duration(w->total_ns, d[0], 32), out_duration(w->self_ns, d[1], 32),
			out_duration(w->p50_ns, d[2], 32), out_duration(w->p99_ns, d[3], 32),
			out_duration(w->max_ns, d[4], 32));
		if (!w->errors)
			fputs("-", out);
		else
			fprintf(out, "%" PRIu64 ":", w->errors);
		for (size_t k = 0; k < w->n_codes; k++) {
			const char *name = cuda_error_name(w->func, w->codes[k].code);
			if (name)
				fprintf(out, " %s (%" PRId64 ") x%" PRIu64, name, w->codes[k].code,
					w->codes[k].count);
			else
				fprintf(out, " code %" PRId64 " x%" PRIu64, w->codes[k].code, w->codes[k].count);
		}
		if (w->other_codes)
			fprintf(out, " other codes x%" PRIu64, w->other_codes);
		fputc('\n', out);
	}
	fprintf(out, "\ncopies%s\n", r->n_copies ? "" : ": none");
	if (r->n_copies)
		fprintf(out, "%-9s %-8s %-5s %10s %10s %10s %8s\n", "direction", "host", "mode", "calls",
			"bytes", "time", "GB/s");
	for (size_t i = 0; i < r->n_copies; i++) {
		const struct cuda_copy_row *c = &r->copies[i];
		double rate = gbps(c->bytes, c->time_ns);
		char rate_s[32];
		if (rate < 0)
			snprintf(rate_s, sizeof(rate_s), "-");
		else
			snprintf(rate_s, sizeof(rate_s), "%.2f%s", rate, c->mode == CUDA_MODE_ASYNC ? "*" : "");
		fprintf(out, "%-9s %-8s %-5s %10" PRIu64 " %10s %10s %8s", cuda_dir_name(c->dir),
			cuda_host_name(c->host), c->mode == CUDA_MODE_ASYNC ? "async" : "sync", c->count,
			out_bytes(c->bytes, d[0], 32), out_duration(c->time_ns, d[1], 32), rate_s);
		if (c->inferred)
			fprintf(out, "  (%" PRIu64 " inferred from pointers)", c->inferred);
		fputc('\n', out);
	}
	if (r->n_copies)
		fprintf(out, "* async: bytes over the enqueue call's time, not a transfer rate\n");
	for (size_t i = 0; i < r->n_copies; i++) {
		const struct cuda_copy_row *c = &r->copies[i];
		if (c->host == CUDA_HOST_PAGEABLE && (c->dir == CUDA_DIR_H2D || c->dir == CUDA_DIR_D2H)) {
			fprintf(out, "note: pageable host memory in %s copies is staged through a driver "
				"buffer and an async copy from it does not overlap; pin it "
				"(pin_memory=True, cudaHostAlloc)\n", cuda_dir_name(c->dir));
			break;
		}
	}
	fprintf(out, "\nasync copies immediately followed by a synchronize (next call < 50 us later): %" PRIu64,
		r->async_then_sync);
	if (r->async_then_sync)
		fprintf(out, ", %s spent in those synchronizes\n", out_duration(r->async_then_sync_ns, d[0], 32));
	else
		fputc('\n', out);
	for (size_t i = 0; i < r->n_sync_stacks && i < top; i++) {
		const struct cuda_sync_stack *s = &r->sync_stacks[i];
		fprintf(out, "  %8" PRIu64 "  %10s  pid %u  %s\n", s->count,
			out_duration(s->sync_ns, d[0], 32), s->pid,
			mem_stack_line(ts, s->file, s->stack_id, 4, line, sizeof(line)));
	}
	if (r->async_then_sync)
		fprintf(out, "  fix: launch the next work before synchronizing, or drop the copy's "
			"synchronize (non_blocking=True with pinned memory)\n");
}

static void cuda_json(struct trace_set *ts, const struct cuda_result *r, unsigned top, FILE *out)
{
	fprintf(out, "{\"events\":%" PRIu64 ",\"threads\":%zu,\"calls\":[", r->events, r->threads);
	for (size_t i = 0; i < r->n_rows; i++) {
		const struct cuda_api_row *w = &r->rows[i];
		fprintf(out, "%s{\"function\":", i ? "," : "");
		out_json_str(out, w->name);
		fprintf(out, ",\"func\":%u,\"per_thread_stream\":%s,\"calls\":%" PRIu64 ",\"total_ns\":%" PRIu64
			",\"self_ns\":%" PRIu64 ",\"p50_ns\":%" PRIu64 ",\"p99_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64
			",\"errors\":%" PRIu64 ",\"error_codes\":[",
			w->func, w->ptsz ? "true" : "false", w->count, w->total_ns, w->self_ns, w->p50_ns,
			w->p99_ns, w->max_ns, w->errors);
		for (size_t k = 0; k < w->n_codes; k++) {
			const char *name = cuda_error_name(w->func, w->codes[k].code);
			fprintf(out, "%s{\"code\":%" PRId64 ",\"name\":", k ? "," : "", w->codes[k].code);
			if (name)
				out_json_str(out, name);
			else
				fputs("null", out);
			fprintf(out, ",\"count\":%" PRIu64 "}", w->codes[k].count);
		}
		fprintf(out, "],\"other_error_codes\":%" PRIu64 "}", w->other_codes);
	}
	fprintf(out, "],\"copies\":[");
	for (size_t i = 0; i < r->n_copies; i++) {
		const struct cuda_copy_row *c = &r->copies[i];
		double rate = gbps(c->bytes, c->time_ns);
		fprintf(out, "%s{\"direction\":\"%s\",\"host\":\"%s\",\"mode\":\"%s\",\"calls\":%" PRIu64
			",\"bytes\":%" PRIu64 ",\"time_ns\":%" PRIu64 ",\"gb_per_s\":",
			i ? "," : "", cuda_dir_name(c->dir),
			c->host == CUDA_HOST_NA ? "n/a" : cuda_host_name(c->host),
			c->mode == CUDA_MODE_ASYNC ? "async" : "sync", c->count, c->bytes, c->time_ns);
		if (rate < 0)
			fputs("null", out);
		else
			fprintf(out, "%.3f", rate);
		fprintf(out, ",\"inferred\":%" PRIu64 "}", c->inferred);
	}
	fprintf(out, "],\"nested_copies\":%" PRIu64 ",\"async_then_sync\":{\"count\":%" PRIu64
		",\"sync_ns\":%" PRIu64 ",\"gap_ns\":%llu,\"stacks\":[",
		r->nested_copies, r->async_then_sync, r->async_then_sync_ns, CUDA_SYNC_GAP_NS);
	for (size_t i = 0; i < r->n_sync_stacks && i < top; i++) {
		const struct cuda_sync_stack *s = &r->sync_stacks[i];
		fprintf(out, "%s{\"file\":%u,\"pid\":%u,\"count\":%" PRIu64 ",\"sync_ns\":%" PRIu64
			",\"bytes\":%" PRIu64 ",\"stack\":", i ? "," : "", s->file, s->pid, s->count,
			s->sync_ns, s->bytes);
		mem_stack_json(ts, s->file, s->stack_id, out);
		fputc('}', out);
	}
	fputs("]}", out);
}

int cmd_cuda(int argc, char **argv, FILE *out, FILE *errout)
{
	struct cli_table_args a;
	int rc = cli_parse_table_args(argc, argv, &cuda_spec, &a, out, errout);
	if (rc)
		return rc < 0 ? CLI_OK : rc;
	struct model_opts mo = { .filter_pid = a.filter_pid, .pid = a.pid };
	void *cuda;
	struct trace_set *ts = cli_open_with_model("cuda", (const char *const *)a.files,
						     a.n_files, "cuda", &mo,
						     &cuda, errout);
	free(a.files);
	if (!ts)
		return CLI_FAIL;
	void *gpu = trace_set_use_model(ts, "gpu", &mo);
	if (!gpu) {
		fprintf(errout, CLI_PROG " cuda: out of memory\n");
		trace_set_free(ts);
		return CLI_FAIL;
	}
	if (cli_run_set(ts, errout))
		return CLI_FAIL;
	const struct cuda_result *r = model_cuda_result(cuda);
	const struct gpu_result *g = model_gpu_result(gpu);
	if (!r->events && !g->kernels && !g->launches) {
		const char *path = trace_set_file(ts, 0)->path;
		if (a.filter_pid)
			fprintf(errout, CLI_PROG ": %s: no CUDA calls of pid %u in this trace (see '" CLI_PROG
				" info' for the processes)\n", path, a.pid);
		else
			fprintf(errout, CLI_PROG ": %s: no CUDA calls in this trace (was the cuda probe "
				"attached? see '" CLI_PROG " info')\n", path);
		trace_set_free(ts);
		return CLI_FAIL;
	}
	if (a.json) {
		cuda_json(ts, r, a.number, out);
		gpu_json(g, out);
		fputs("}\n", out);
	} else {
		cuda_text(ts, r, a.number, out);
		gpu_text(g, out);
	}
	rc = CLI_OK;
	if (fflush(out) || ferror(out)) {
		fprintf(errout, CLI_PROG " cuda: write failed on standard output\n");
		rc = CLI_FAIL;
	}
	trace_set_free(ts);
	return rc;
}
