/* The findings object (see out_findings_json.h): numbers with 3
 * decimals, null where not finite or where a finding has no idle cost;
 * every string through out_json_str.  Not for laying out text. */
#include "out_findings_json.h"
#include "model_findings.h"
#include "out_common.h"

#include <inttypes.h>
#include <stddef.h>
#include <math.h>
#include <string.h>

static void json_num(FILE *out, double v)
{
	if (isfinite(v))
		fprintf(out, "%.3f", v);
	else
		fputs("null", out);
}

/* ,"name":{PID:ms,...}: the double at offset off of each process */
static void pid_map_ms(FILE *out, const struct findings_result *r, const char *name, size_t off)
{
	fprintf(out, ",\"%s\":{", name);
	for (size_t i = 0; i < r->n_procs; i++) {
		double v;
		memcpy(&v, (const char *)&r->procs[i] + off, sizeof(v));
		fprintf(out, "%s\"%u\":", i ? "," : "", r->procs[i].pid);
		json_num(out, v);
	}
	fputc('}', out);
}

static void json_finding(FILE *out, const struct finding *f)
{
	fputs("{\"kind\":", out);
	out_json_str(out, finding_kind_name(f->kind));
	fputs(",\"cost_ms\":", out);
	if (f->has_cost) {
		json_num(out, f->cost_ms);
		fputs(",\"cost_ms_per_step\":", out);
		json_num(out, f->cost_ms_per_step);
		fprintf(out, ",\"share\":%.4f", f->share);
	} else {
		fputs("null,\"cost_ms_per_step\":null,\"share\":null", out);
	}
	fputs(",\"pids\":[", out);
	for (size_t i = 0; i < f->n_pids; i++)
		fprintf(out, "%s%u", i ? "," : "", f->pids[i]);
	fputs("],\"ranks\":[", out);
	size_t n_ranks = 0;
	for (size_t i = 0; i < f->n_pids; i++)
		if (f->ranks[i] >= 0)
			fprintf(out, "%s%d", n_ranks++ ? "," : "", f->ranks[i]);
	fputs("],\"where\":[", out);
	for (size_t i = 0; i < f->n_where; i++) {
		if (i)
			fputc(',', out);
		out_json_str(out, f->where[i] ? f->where[i] : "[unknown]");
	}
	fputs("],\"evidence\":", out);
	out_json_str(out, f->evidence);
	fputs(",\"fix\":", out);
	out_json_str(out, f->fix);
	fputc('}', out);
}

void out_findings_json(FILE *out, const struct findings_result *r)
{
	fprintf(out, "{\"steps\":%zu,\"steps_from\":", r->steps);
	out_json_str(out, r->steps_from);
	/* how regular the steps are; null where not read */
	fputs(",\"step_ms\":", out);
	if (r->step_ms > 0)
		json_num(out, r->step_ms);
	else
		fputs("null", out);
	fputs(",\"steps_regular\":", out);
	if (r->step_ms > 0)
		fprintf(out, "%.3f", r->step_regular);
	else
		fputs("null", out);
	fputs(",\"step_site\":", out);
	if (r->step_site)
		out_json_str(out, r->step_site);
	else
		fputs("null", out);
	fputs(",\"wall_ms\":", out);
	json_num(out, r->wall_ms);
	fprintf(out, ",\"min_share\":%.3f", r->min_share);
	pid_map_ms(out, r, "gpu_idle_ms", offsetof(struct findings_proc, idle_ms));
	pid_map_ms(out, r, "unexplained_ms", offsetof(struct findings_proc, unexplained_ms));
	/* what each process drove: with more than one stream or device its
	 * idle is an upper bound (not_evaluated's per_stream_idle says why) */
	fputs(",\"streams\":{", out);
	for (size_t i = 0; i < r->n_procs; i++)
		fprintf(out, "%s\"%u\":%u", i ? "," : "", r->procs[i].pid, r->procs[i].streams);
	fputs("},\"devices\":{", out);
	for (size_t i = 0; i < r->n_procs; i++)
		fprintf(out, "%s\"%u\":%u", i ? "," : "", r->procs[i].pid, r->procs[i].devices);
	fputs("},\"gpu_time_from\":{", out);
	for (size_t i = 0; i < r->n_procs; i++)
		fprintf(out, "%s\"%u\":\"%s\"", i ? "," : "", r->procs[i].pid,
			r->procs[i].gpu_time_from ? r->procs[i].gpu_time_from : "host_signals");
	fputs("},\"gpu_kernels\":{", out);
	for (size_t i = 0; i < r->n_procs; i++)
		fprintf(out, "%s\"%u\":%" PRIu64, i ? "," : "", r->procs[i].pid, r->procs[i].gpu_kernels);
	fputc('}', out);
	pid_map_ms(out, r, "gpu_busy_ms", offsetof(struct findings_proc, gpu_busy_ms));
	pid_map_ms(out, r, "busy_in_host_idle_ms", offsetof(struct findings_proc, busy_in_idle_ms));
	/* the maps above are keyed by pid, which nodes can share (containers
	 * number their processes alike); here each process once, with its node */
	fputs(",\"processes\":[", out);
	for (size_t i = 0; i < r->n_procs; i++) {
		const struct findings_proc *p = &r->procs[i];
		fputs(i ? ",{\"host\":" : "{\"host\":", out);
		out_json_str(out, p->host);
		fprintf(out, ",\"pid\":%u,\"rank\":", p->pid);
		if (p->rank >= 0)
			fprintf(out, "%d", p->rank);
		else
			fputs("null", out);
		fputs(",\"gpu_idle_ms\":", out);
		json_num(out, p->idle_ms);
		fputs(",\"unexplained_ms\":", out);
		json_num(out, p->unexplained_ms);
		fprintf(out, ",\"streams\":%u,\"devices\":%u,\"gpu_time_from\":\"%s\","
			"\"gpu_kernels\":%" PRIu64 ",\"gpu_busy_ms\":", p->streams, p->devices,
			p->gpu_time_from ? p->gpu_time_from : "host_signals", p->gpu_kernels);
		json_num(out, p->gpu_busy_ms);
		fputs(",\"busy_in_host_idle_ms\":", out);
		json_num(out, p->busy_in_idle_ms);
		fputc('}', out);
	}
	fputs("],\"not_evaluated\":[", out);
	for (size_t i = 0; i < r->n_not_evaluated; i++) {
		fputs(i ? ",{\"kind\":" : "{\"kind\":", out);
		out_json_str(out, r->not_evaluated[i].kind);
		fputs(",\"why\":", out);
		out_json_str(out, r->not_evaluated[i].why);
		fputc('}', out);
	}
	fputs("],\"findings\":[", out);
	for (size_t i = 0; i < r->n_findings; i++) {
		if (i)
			fputc(',', out);
		json_finding(out, &r->findings[i]);
	}
	fputs("],\"below\":[", out);
	for (size_t i = 0; i < r->n_below; i++) {
		if (i)
			fputc(',', out);
		json_finding(out, &r->below[i]);
	}
	fputs("]}", out);
}
