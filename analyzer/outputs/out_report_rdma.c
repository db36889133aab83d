/* The report's "rdma" section: model_rdma's connections (both ends named
 * when both traces are there), their errors by class and latency by
 * opcode and size, the hardware counters and per-file totals.  Not for
 * pairing posts with completions (model_rdma.c). */
#include "out_report_sections.h"
#include "model_rdma.h"
#include "out_common.h"

#include <inttypes.h>

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

void report_section_rdma(FILE *f, const void *model)
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
