/* The report's "stragglers" section: model_stragglers' per-rank rows and
 * verdict (with the frames and system calls that set the straggler apart),
 * and two rank x step heatmaps, step time and lateness at each collective,
 * with steps grouped so a row has at most STRAG_MAX_COLS cells.  Not for
 * finding stragglers (model_stragglers.c, model_nccl.c). */
#include "out_report_sections.h"
#include "model_nccl.h"
#include "model_stragglers.h"
#include "out_common.h"
#include "out_stragglers_json.h"
#include "trace_set.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#define STRAG_MAX_RANKS 128
#define STRAG_MAX_COLS 120

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* One heatmap: rows = ranks, columns = groups of `width` steps; the cell
 * is the mean (step time) or the max (lateness) over the group's steps. */
static void heat_json(FILE *f, const double *cells, const uint32_t *have, size_t n_rows,
		      size_t n_steps, size_t width, int use_max)
{
	size_t cols = (n_steps + width - 1) / width;
	fputc('[', f);
	for (size_t r = 0; r < n_rows; r++) {
		fputs(r ? ",[" : "[", f);
		for (size_t c = 0; c < cols; c++) {
			double acc = use_max ? -1e300 : 0;
			uint32_t n = 0;
			for (size_t s = c * width; s < (c + 1) * width && s < n_steps; s++) {
				size_t at = r * n_steps + s;
				if (!have[at])
					continue;
				if (use_max) {
					if (cells[at] > acc)
						acc = cells[at];
				} else {
					acc += cells[at];
				}
				n++;
			}
			if (c)
				fputc(',', f);
			if (!n)
				fputs("null", f);
			else
				fprintf(f, "%.3f", use_max ? acc : acc / n);
		}
		fputc(']', f);
	}
	fputc(']', f);
}

int report_section_stragglers(FILE *f, struct trace_set *ts, const void *model)
{
	const struct stragglers_result *r = model ? model_stragglers_result(model) : NULL;
	fputs("\"stragglers\":", f);
	if (!r || !r->nccl || !r->nccl->n_ranks) {
		fputs("null", f);
		return 0;
	}
	const struct nccl_result *nc = r->nccl;
	const char *from = nc->step_source == NCCL_STEPS_MARKER ? "step markers"
			   : nc->step_source == NCCL_STEPS_PERIOD ? "the collective period" : "each collective";
	fprintf(f, "{\"ranks_total\":%zu,\"nodes\":%zu,\"complete_collectives\":%zu,\"steps_from\":",
		nc->n_ranks, trace_set_count(ts), r->complete_collectives);
	out_json_str(f, from);
	fprintf(f, ",\"period\":%u,\"median_step_ms\":", nc->period);
	strag_json_num(f, r->median_step_ms, "%.3f");
	fputs(",\"ranks\":[", f);
	size_t n_rows = r->n_rows < STRAG_MAX_RANKS ? r->n_rows : STRAG_MAX_RANKS;
	size_t n_steps = 0;
	for (size_t i = 0; i < r->n_rows; i++) {
		const struct straggler_row *row = &r->rows[i];
		const struct nccl_rank *rk = &nc->ranks[row->rank_index];
		if (i < n_rows && rk->n_steps > n_steps)
			n_steps = rk->n_steps;
		fprintf(f, "%s{\"rank\":", i ? "," : "");
		if (rk->rank >= 0)
			fprintf(f, "%d", rk->rank);
		else
			fputs("null", f);
		fputs(",\"host\":", f);
		out_json_str(f, rk->host ? rk->host : "");
		fprintf(f, ",\"pid\":%u,\"steps\":%zu,\"mean_step_ms\":", rk->pid, row->steps);
		strag_json_num(f, row->mean_step_ms, "%.3f");
		fputs(",\"mean_wait_ms\":", f);
		strag_json_num(f, row->steps ? row->mean_wait_ms : -1, "%.3f");
		fputs(",\"median_compute_ms\":", f);
		strag_json_num(f, row->median_compute_ms, "%.3f");
		fputs(",\"score\":", f);
		strag_json_num(f, row->score, "%.4f");
		fprintf(f, ",\"flagged\":%s,\"latest\":%" PRIu64 ",\"median_lateness_ms\":%.3f}",
			row->score >= 0 && row->score < STRAGGLER_SCORE_FLAG ? "true" : "false", row->latest,
			row->median_lateness_ms);
	}
	fputs("],\"verdict\":", f);
	const struct straggler_verdict *v = &r->verdict;
	if (v->found && v->rank_index < nc->n_ranks) {
		const struct nccl_rank *rk = &nc->ranks[v->rank_index];
		char text[512];
		snprintf(text, sizeof(text), "Straggler: rank %d (host %s, pid %u) since step %d, "
			 "confidence %.2f, costs %.2f ms per step", rk->rank, rk->host ? rk->host : "?",
			 rk->pid, v->since_step, v->confidence, v->cost_ms_per_step);
		fputs("{\"found\":true,\"text\":", f);
		out_json_str(f, text);
		fprintf(f, ",\"rank\":%d,\"pid\":%u,\"host\":", rk->rank, rk->pid);
		out_json_str(f, rk->host ? rk->host : "");
		fprintf(f, ",\"since_step\":%d,\"confidence\":%.3f,\"cost_ms_per_step\":%.3f,\"latest\":%" PRIu64
			",\"collectives\":%" PRIu64 ",\"median_lateness_ms\":%.3f,\"threshold_ms\":%.3f"
			",\"evidence\":", v->since_step, v->confidence, v->cost_ms_per_step, v->latest,
			v->collectives, v->median_lateness_ms, v->threshold_ms);
		out_json_str(f, v->evidence);
		fputc(',', f);
		strag_json_causes(f, v);
		fputc('}', f);
	} else {
		char text[400];
		snprintf(text, sizeof(text), "No straggler: %s", r->why_none[0] ? r->why_none : "none found");
		fputs("{\"found\":false,\"text\":", f);
		out_json_str(f, text);
		fputs("}", f);
	}
	/* heatmaps: step time and lateness, rank x step */
	fputs(",\"heatmap\":", f);
	if (!n_steps || !n_rows) {
		fputs("null}", f);
		return 0;
	}
	size_t cells = n_rows * n_steps;
	double *step_ms = calloc(cells, sizeof(*step_ms));
	double *late_ms = calloc(cells, sizeof(*late_ms));
	uint32_t *have_step = calloc(cells, sizeof(*have_step));
	uint32_t *have_late = calloc(cells, sizeof(*have_late));
	int64_t *ready = NULL;
	size_t ready_cap = 0;
	int rc = 0;
	if (!step_ms || !late_ms || !have_step || !have_late) {
		rc = -ENOMEM;
		goto out;
	}
	/* rows are in nccl rank order; rank_index -> row */
	for (size_t i = 0; i < n_rows; i++) {
		const struct nccl_rank *rk = &nc->ranks[r->rows[i].rank_index];
		for (size_t s = 0; s < rk->n_steps && s < n_steps; s++) {
			if (rk->step_end_ns[s] < rk->step_begin_ns[s])
				continue;
			step_ms[i * n_steps + s] = (double)(rk->step_end_ns[s] - rk->step_begin_ns[s]) / 1e6;
			have_step[i * n_steps + s] = 1;
		}
	}
	for (size_t k = 0; k < nc->n_instances; k++) {
		const struct nccl_instance *inst = &nc->instances[k];
		if (inst->n_members < 2)
			continue;
		if (inst->n_members > ready_cap) {
			int64_t *g = realloc(ready, inst->n_members * sizeof(*g));
			if (!g) {
				rc = -ENOMEM;
				goto out;
			}
			ready = g;
			ready_cap = inst->n_members;
		}
		for (uint32_t m = 0; m < inst->n_members; m++)
			ready[m] = nccl_member_ready_ns(nc, &nc->members[inst->first_member + m]);
		qsort(ready, inst->n_members, sizeof(*ready), cmp_i64);
		uint32_t n = inst->n_members;
		double median = n % 2 ? (double)ready[n / 2]
				      : ((double)ready[n / 2 - 1] + (double)ready[n / 2]) / 2;
		for (uint32_t m = 0; m < n; m++) {
			const struct nccl_member *mb = &nc->members[inst->first_member + m];
			const struct nccl_rank *rk = &nc->ranks[mb->rank_index];
			if (mb->call_index >= rk->n_calls)
				continue;
			int32_t step = rk->calls[mb->call_index].step;
			/* rows: one per nccl rank, in the same order */
			size_t row = mb->rank_index;
			if (row >= n_rows || r->rows[row].rank_index != mb->rank_index || step < 0 ||
			    (size_t)step >= n_steps)
				continue;
			double late = ((double)nccl_member_ready_ns(nc, mb) - median) / 1e6;
			size_t at = row * n_steps + (size_t)step;
			if (!have_late[at] || late > late_ms[at])
				late_ms[at] = late;
			have_late[at] = 1;
		}
	}
	size_t width = (n_steps + STRAG_MAX_COLS - 1) / STRAG_MAX_COLS;
	fprintf(f, "{\"steps\":%zu,\"width\":%zu,\"rows\":%zu,\"step_ms\":", n_steps, width, n_rows);
	heat_json(f, step_ms, have_step, n_rows, n_steps, width, 0);
	fputs(",\"lateness_ms\":", f);
	heat_json(f, late_ms, have_late, n_rows, n_steps, width, 1);
	fputs("}}", f);
out:
	if (rc)
		fputs("null}", f);
	free(step_ms);
	free(late_ms);
	free(have_step);
	free(have_late);
	free(ready);
	return rc;
}
