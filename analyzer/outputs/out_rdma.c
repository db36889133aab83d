/* RDMA per connection, as text and JSON (see out_rdma.h). */
#include "out_rdma.h"
#include "out_common.h"
#include "model_rdma.h"
#include "trace_set.h"
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static double span_s(const struct rdma_conn *c)
{
	return c->last_ns > c->first_ns ? (double)(c->last_ns - c->first_ns) / 1e9 : 0;
}

/* "node-a:1234" or "node-a:1234/r3" */
static const char *endpoint(const struct rdma_endpoint *e, char *buf, size_t len)
{
	if (e->rank >= 0)
		snprintf(buf, len, "%s:%u/r%" PRId64, e->host, e->pid, e->rank);
	else
		snprintf(buf, len, "%s:%u", e->host, e->pid);
	return buf;
}

static const char *us(uint64_t ns, uint64_t count, char *buf, size_t len)
{
	if (!count)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.1f", (double)ns / 1e3);
	return buf;
}

static void text_conn_notes(const struct rdma_conn *c, FILE *out)
{
	if (c->errors || c->other_status) {
		fprintf(out, "      errors:");
		for (uint32_t s = 1; s < RDMA_WC_STATUSES; s++)
			if (s != RDMA_WC_WR_FLUSH_ERR && c->by_status[s])
				fprintf(out, " %s x%" PRIu64 " (%s)", rdma_wc_status_name(s),
					c->by_status[s], rdma_err_class_name(rdma_err_class_of(s)));
		if (c->other_status)
			fprintf(out, " unknown statuses x%" PRIu64, c->other_status);
		fputc('\n', out);
	}
	if (c->flush_errors)
		fprintf(out, "      flushed: %" PRIu64 " (IBV_WC_WR_FLUSH_ERR: the QP was already in "
			"error; not losses)\n", c->flush_errors);
	if (c->unmatched || c->missed || c->truncated || c->failed_posts || c->dropped ||
	    c->outstanding) {
		fprintf(out, "      also:");
		if (c->unmatched)
			fprintf(out, " %" PRIu64 " completions without their post in the trace;",
				c->unmatched);
		if (c->missed)
			fprintf(out, " %" PRIu64 " requests whose completion event is missing;",
				c->missed);
		if (c->truncated)
			fprintf(out, " %" PRIu64 " chains longer than the probe walks;", c->truncated);
		if (c->failed_posts)
			fprintf(out, " %" PRIu64 " requests rejected by the post call;", c->failed_posts);
		if (c->dropped)
			fprintf(out, " %" PRIu64 " requests dropped at a reset or destroy;", c->dropped);
		if (c->outstanding)
			fprintf(out, " %" PRIu64 " still in flight at the end;", c->outstanding);
		fputc('\n', out);
	}
}

void out_rdma_text(const struct rdma_result *r, FILE *out)
{
	char l[96], rm[96], b[32], p[3][32], op[32];
	fprintf(out, "RDMA: %zu queue pair view%s; %" PRIu64 " work requests posted, %" PRIu64
		" completions, %" PRIu64 " control calls\n", r->n_conns, r->n_conns == 1 ? "" : "s",
		r->posts, r->completions, r->ctrl_calls);
	if (r->n_conns) {
		fprintf(out, "\nconnections (latency: successful send-queue requests, post -> completion, us)\n");
		fprintf(out, "  %-22s %8s    %-22s %8s %9s %10s %9s %9s %9s %9s %9s %7s\n", "local", "qp",
			"remote", "qp", "ops", "bytes", "MB/s", "ops/s", "p50", "p99", "max", "errors");
	}
	for (size_t i = 0; i < r->n_conns; i++) {
		const struct rdma_conn *c = &r->conns[i];
		double s = span_s(c);
		char mbs[32], opss[32], rqp[16];
		if (s > 0) {
			snprintf(mbs, sizeof(mbs), "%.2f", (double)c->bytes / s / 1e6);
			snprintf(opss, sizeof(opss), "%.1f", (double)c->ops / s);
		} else {
			snprintf(mbs, sizeof(mbs), "-");
			snprintf(opss, sizeof(opss), "-");
		}
		if (c->remote_qp_known)
			snprintf(rqp, sizeof(rqp), "%u", c->remote_qp);
		else
			snprintf(rqp, sizeof(rqp), "?");
		fprintf(out, "  %-22s %8u -> %-22s %8s %9" PRIu64 " %10s %9s %9s %9s %9s %9s %7" PRIu64 "\n",
			endpoint(&c->local, l, sizeof(l)), c->qp_num,
			c->joined ? endpoint(&c->remote, rm, sizeof(rm)) : "?", rqp, c->ops,
			out_bytes(c->bytes, b, sizeof(b)), mbs, opss,
			us(c->latency.p50_ns, c->latency.count, p[0], 32),
			us(c->latency.p99_ns, c->latency.count, p[1], 32),
			us(c->latency.max_ns, c->latency.count, p[2], 32), c->errors);
		text_conn_notes(c, out);
	}
	if (r->n_conns) {
		fprintf(out, "\nlatency by opcode and size (post -> completion, us; receives wait for the peer)\n");
		fprintf(out, "  %-22s %8s  %-20s %-7s %9s %10s %9s %9s %9s\n", "local", "qp", "opcode", "size",
			"ops", "bytes", "p50", "p99", "max");
	}
	for (size_t i = 0; i < r->n_conns; i++) {
		const struct rdma_conn *c = &r->conns[i];
		for (size_t k = 0; k < c->n_rows; k++) {
			const struct rdma_op_row *w = &c->rows[k];
			fprintf(out, "  %-22s %8u  %-20s %-7s %9" PRIu64 " %10s %9s %9s %9s\n",
				endpoint(&c->local, l, sizeof(l)), c->qp_num,
				rdma_opcode_name(w->recv, w->opcode, op, sizeof(op)),
				rdma_size_bucket_name(w->bucket), w->ops, out_bytes(w->bytes, b, sizeof(b)),
				us(w->latency.p50_ns, w->latency.count, p[0], 32),
				us(w->latency.p99_ns, w->latency.count, p[1], 32),
				us(w->latency.max_ns, w->latency.count, p[2], 32));
		}
	}
	fprintf(out, "\npoll_cq calls that returned nothing (counted in the kernel, per recording)\n");
	for (size_t i = 0; i < r->n_files; i++) {
		const struct rdma_file_row *f = &r->files[i];
		if (f->has_idle_polls)
			fprintf(out, "  %-22s %12" PRIu64 "\n", f->host, f->idle_polls);
		else
			fprintf(out, "  %-22s %12s (not recorded: rdma probe off or an older recorder)\n",
				f->host, "-");
	}
	fprintf(out, "\nport counters%s\n", r->n_counters ? " (increase over the recording; largest per second)" :
		": none recorded");
	if (r->n_counters)
		fprintf(out, "  %-22s %-40s %14s %12s\n", "host", "counter", "increase", "max/s");
	for (size_t i = 0; i < r->n_counters; i++) {
		const struct rdma_counter_row *c = &r->counters[i];
		fprintf(out, "  %-22s %-40s %14" PRIu64 " %12.1f\n", c->host, c->name, c->total,
			c->max_per_s);
	}
}

static void json_latency(const struct rdma_latency *l, FILE *out)
{
	if (!l->count) {
		fputs("{\"p50\":null,\"p99\":null,\"max\":null,\"count\":0}", out);
		return;
	}
	fprintf(out, "{\"p50\":%.3f,\"p99\":%.3f,\"max\":%.3f,\"min\":%.3f,\"mean\":%.3f,\"count\":%" PRIu64 "}",
		(double)l->p50_ns / 1e3, (double)l->p99_ns / 1e3, (double)l->max_ns / 1e3,
		(double)l->min_ns / 1e3, (double)l->sum_ns / (double)l->count / 1e3, l->count);
}

static void json_endpoint(const char *prefix, const struct rdma_endpoint *e, FILE *out)
{
	fprintf(out, "\"%spid\":%u,\"%shost\":", prefix, e->pid, prefix);
	out_json_str(out, e->host);
	fprintf(out, ",\"%scomm\":", prefix);
	out_json_str(out, e->comm);
	if (e->rank >= 0)
		fprintf(out, ",\"%srank\":%" PRId64, prefix, e->rank);
	fprintf(out, ",\"%sfile\":%u", prefix, e->file);
}

static void json_conn(const struct rdma_conn *c, FILE *out)
{
	char op[32];
	double s = span_s(c);
	fprintf(out, "{\"local_qp\":%u,\"remote_qp\":", c->qp_num);
	if (c->remote_qp_known)
		fprintf(out, "%u", c->remote_qp);
	else
		fputs("null", out);
	fputc(',', out);
	json_endpoint("", &c->local, out);
	fprintf(out, ",\"joined\":%s", c->joined ? "true" : "false");
	if (c->joined) {
		fputc(',', out);
		json_endpoint("remote_", &c->remote, out);
	}
	if (c->has_rtr) {
		fprintf(out, ",\"remote_gid\":\"");
		for (int k = 0; k < 16; k += 2)
			fprintf(out, "%s%02x%02x", k ? ":" : "", c->remote_gid[k], c->remote_gid[k + 1]);
		fprintf(out, "\",\"dlid\":%u,\"path_mtu\":%u", c->dlid, c->path_mtu);
	}
	fprintf(out, ",\"ops\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"send_ops\":%" PRIu64
		",\"send_bytes\":%" PRIu64 ",\"recv_ops\":%" PRIu64 ",\"recv_bytes\":%" PRIu64
		",\"completions\":%" PRIu64 ",\"active_s\":%.6f,\"bytes_per_s\":",
		c->ops, c->bytes, c->send_ops, c->send_bytes, c->recv_ops, c->recv_bytes,
		c->completions, s);
	if (s > 0)
		fprintf(out, "%.1f,\"ops_per_s\":%.1f", (double)c->bytes / s, (double)c->ops / s);
	else
		fputs("null,\"ops_per_s\":null", out);
	fputs(",\"latency_us\":", out);
	json_latency(&c->latency, out);
	fprintf(out, ",\"errors\":%" PRIu64 ",\"error_status\":{", c->errors);
	int first = 1;
	for (uint32_t k = 1; k < RDMA_WC_STATUSES; k++) {
		if (k == RDMA_WC_WR_FLUSH_ERR || !c->by_status[k])
			continue;
		fprintf(out, "%s\"%s\":%" PRIu64, first ? "" : ",", rdma_wc_status_name(k), c->by_status[k]);
		first = 0;
	}
	if (c->other_status)
		fprintf(out, "%s\"unknown\":%" PRIu64, first ? "" : ",", c->other_status);
	fputs("},\"error_class\":{", out);
	for (int k = 0; k < RDMA_ERR_CLASSES; k++)
		fprintf(out, "%s\"%s\":%" PRIu64, k ? "," : "", rdma_err_class_name((enum rdma_err_class)k),
			c->by_class[k]);
	fprintf(out, "},\"flush_errors\":%" PRIu64 ",\"unmatched_completions\":%" PRIu64
		",\"missed_completions\":%" PRIu64 ",\"truncated_chains\":%" PRIu64
		",\"failed_posts\":%" PRIu64 ",\"dropped\":%" PRIu64 ",\"outstanding\":%" PRIu64
		",\"by_opcode\":[", c->flush_errors, c->unmatched, c->missed, c->truncated,
		c->failed_posts, c->dropped, c->outstanding);
	for (size_t k = 0; k < c->n_rows; k++) {
		const struct rdma_op_row *w = &c->rows[k];
		fprintf(out, "%s{\"opcode\":\"%s\",\"recv\":%s,\"size\":\"%s\",\"ops\":%" PRIu64
			",\"bytes\":%" PRIu64 ",\"latency_us\":", k ? "," : "",
			rdma_opcode_name(w->recv, w->opcode, op, sizeof(op)), w->recv ? "true" : "false",
			rdma_size_bucket_name(w->bucket), w->ops, w->bytes);
		json_latency(&w->latency, out);
		fputc('}', out);
	}
	fputs("]}", out);
}

void out_rdma_json(const struct rdma_result *r, FILE *out)
{
	fprintf(out, "{\"posts\":%" PRIu64 ",\"completions\":%" PRIu64 ",\"control_calls\":%" PRIu64
		",\"ambiguous_joins\":%" PRIu64 ",\"connections\":[", r->posts, r->completions,
		r->ctrl_calls, r->ambiguous_joins);
	for (size_t i = 0; i < r->n_conns; i++) {
		if (i)
			fputc(',', out);
		json_conn(&r->conns[i], out);
	}
	fputs("],\"counters\":[", out);
	for (size_t i = 0; i < r->n_counters; i++) {
		const struct rdma_counter_row *c = &r->counters[i];
		fprintf(out, "%s{\"host\":", i ? "," : "");
		out_json_str(out, c->host);
		fprintf(out, ",\"file\":%u,\"name\":", c->file);
		out_json_str(out, c->name);
		fprintf(out, ",\"total\":%" PRIu64 ",\"max_delta\":%" PRIu64 ",\"max_per_s\":%.3f,"
			"\"samples\":%" PRIu64 "}", c->total, c->max_delta, c->max_per_s, c->samples);
	}
	fputs("],\"files\":[", out);
	for (size_t i = 0; i < r->n_files; i++) {
		const struct rdma_file_row *f = &r->files[i];
		fprintf(out, "%s{\"file\":%u,\"host\":", i ? "," : "", f->file);
		out_json_str(out, f->host);
		fputs(",\"path\":", out);
		out_json_str(out, f->path);
		fprintf(out, ",\"posts\":%" PRIu64 ",\"completions\":%" PRIu64 ",\"control_calls\":%" PRIu64
			",\"idle_polls\":", f->posts, f->completions, f->ctrl_calls);
		if (f->has_idle_polls)
			fprintf(out, "%" PRIu64 "}", f->idle_polls);
		else
			fputs("null}", out);
	}
	fputs("]}\n", out);
}

