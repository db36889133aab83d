/* The report's "cuda" section: model_cuda's API table (self time, exact
 * percentiles, error codes), its copies by direction, host memory and mode,
 * the async copies a synchronize followed, and the copies per
 * cudaMemcpyKind.  Not for counting events (model_cuda.c does). */
#include "out_report_sections.h"
#include "model_call_time.h"
#include "model_cuda.h"
#include "out_common.h"
#include "out_report.h"
#include "out_report_data.h"
#include "trace_set.h"

#include <inttypes.h>

/* Copies per cudaMemcpyKind the caller passed (model_cuda's kinds). */
static void cuda_kinds(FILE *f, const struct report_data *d)
{
	fputs("\"kinds\":[", f);
	int first = 1;
	for (unsigned k = 0; d && d->copies && k < CUDA_KINDS; k++) {
		const struct cuda_kind_count *ck = &d->copies[k];
		if (!ck->calls)
			continue;
		fprintf(f, "%s{\"kind\":\"%s\",\"calls\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"total_ns\":%" PRIu64 "}",
			first ? "" : ",", k < 5 ? out_copy_kind_name(k) : "unknown", ck->calls, ck->bytes,
			ck->total_ns);
		first = 0;
	}
	fputs("]", f);
}

/* Time in the API per stack (model_call_time), with how launches were
 * sampled. */
static int cuda_time_tree(FILE *f, const void *cuda_time_model)
{
	const struct call_time_result *t = cuda_time_model ? model_call_time_result(cuda_time_model) : NULL;
	fputs("\"time_tree\":", f);
	if (!t || !t->tree || !flame_tree_total(t->tree)) {
		fputs("null,", f);
		return 0;
	}
	char sub[200], d1[32];
	snprintf(sub, sizeof(sub), "%s in %" PRIu64 " calls, each without the calls nested in it",
		 out_duration(t->total_ns, d1, sizeof(d1)), t->calls);
	int rc = report_flame_json(f, t->tree, "Time in CUDA API calls per stack", sub, "ns",
				   2 * REPORT_FLAME_MAX_NODES);
	fprintf(f, ",\"launches\":%" PRIu64 ",\"launches_with_stack\":%" PRIu64
		",\"launch_stack_every\":%u,", t->launches, t->launches_with_stack, t->launch_stack_every);
	return rc;
}

int report_section_cuda(FILE *f, struct trace_set *ts, const struct report_data *d,
			const void *cuda_model, const void *cuda_time_model)
{
	const struct cuda_result *r = cuda_model ? model_cuda_result(cuda_model) : NULL;
	fputs("\"cuda\":", f);
	if (!r || !r->events) {
		fputs("null", f);
		return 0;
	}
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
		report_process_label(label, sizeof(label), trace_set_file(ts, st->file), st->pid);
		fputs(i ? ",{\"process\":" : "{\"process\":", f);
		out_json_str(f, label);
		fputs(",\"stack\":", f);
		report_stack_json(f, ts, st->file, st->stack_id);
		fprintf(f, ",\"count\":%" PRIu64 ",\"sync_ns\":%" PRIu64 ",\"bytes\":%" PRIu64 "}",
			st->count, st->sync_ns, st->bytes);
	}
	fputs("],", f);
	int rc = cuda_time_tree(f, cuda_time_model);
	cuda_kinds(f, d);
	fputs("}", f);
	return rc;
}
