/* speedscope JSON from a stack profile; see out_speedscope.h.  The rules
 * its importer checks (jlfwong/speedscope src/lib/file-format.ts): as many
 * weights as samples, frame indices into shared.frames, a unit from its
 * list.  Rows of one process are adjacent (the profile is sorted by file
 * and pid), so each profile is written as its rows are read; the frames
 * table, which every profile shares, goes last. */
#include "out_speedscope.h"
#include "name_index.h"
#include "out_common.h"
#include "py_hide.h"
#include "stack_profile.h"
#include "symbolize.h"
#include "trace_set.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *unit_of(const struct stack_profile *p)
{
	if (p->value_unit && strcmp(p->value_unit, "nanoseconds") == 0)
		return "nanoseconds";
	if (p->value_unit && strcmp(p->value_unit, "bytes") == 0)
		return "bytes";
	return "none";
}

static void profile_head(FILE *out, struct trace_set *ts, const struct stack_row *r,
			 const char *unit, int first)
{
	const struct trace_file *f = trace_set_file(ts, r->file);
	const struct ts_process *p = f ? trace_file_process(f, r->pid) : NULL;
	char name[256], rank_s[32] = "";
	int64_t rank;
	if (f && out_process_rank(f, r->pid, &rank))
		snprintf(rank_s, sizeof(rank_s), ", rank %" PRId64, rank);
	snprintf(name, sizeof(name), "%s (pid %" PRIu32 "%s)%s%.64s",
		 p && p->comm[0] ? p->comm : "process", r->pid, rank_s,
		 f && f->hdr.host[0] ? " on " : "", f ? f->hdr.host : "");
	fputs(first ? "\n" : ",\n", out);
	fputs("{\"type\":\"sampled\",\"name\":", out);
	out_json_str(out, name);
	fprintf(out, ",\"unit\":\"%s\",\"startValue\":0,", unit);
}

int out_speedscope_write(const struct speedscope_opts *o, FILE *out)
{
	const struct stack_profile *p = o->prof;
	struct frec_error err = { .offset = -1 };
	struct symbolizer *sym = trace_set_symbolizer(o->ts, &err);
	struct name_index fr;
	const char **names = NULL;
	size_t cap = 0;
	unsigned char *hide = NULL;
	uint64_t *weights = NULL;
	size_t n_weights = 0, cap_weights = 0;
	int rc = 0;
	name_index_init(&fr);
	if (!sym)
		return -ENOMEM;
	const char *unit = unit_of(p);
	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"name\":", out);
	out_json_str(out, o->name ? o->name : "flightrec");
	fputs(",\"exporter\":\"flightrec-analyze\",\"activeProfileIndex\":0,\"profiles\":[", out);
	int first_profile = 1;
	for (size_t i = 0; i < p->n_rows && !rc;) {
		const struct stack_row *r0 = &p->rows[i];
		size_t end = i;
		while (end < p->n_rows && p->rows[end].file == r0->file && p->rows[end].pid == r0->pid)
			end++;
		profile_head(out, o->ts, r0, unit, first_profile);
		first_profile = 0;
		fputs("\"samples\":[", out);
		n_weights = 0;
		uint64_t total = 0;
		for (size_t j = i; j < end && !rc; j++) {
			const struct stack_row *r = &p->rows[j];
			const struct trace_file *f = trace_set_file(o->ts, r->file);
			if (!f)
				continue;
			size_t n = symbolize_frames(sym, f, r->file, r->stack_id, &names, &cap, NULL);
			if (n == SIZE_MAX) {
				rc = -ENOMEM;
				break;
			}
			const char *leaf = stack_profile_leaf(p, r);
			if (leaf)
				names[n++] = leaf; /* symbolize_frames leaves room for one */
			unsigned char *h = realloc(hide, n ? n : 1);
			uint64_t *w = n_weights == cap_weights ?
				realloc(weights, (cap_weights ? 2 * cap_weights : 256) * sizeof(*w)) : weights;
			if (h)
				hide = h;
			if (w && w != weights) {
				weights = w;
				cap_weights = cap_weights ? 2 * cap_weights : 256;
			}
			if (!h || !w) {
				rc = -ENOMEM;
				break;
			}
			if (o->hide)
				py_hide_mask(o->hide, names, n, hide);
			else
				memset(hide, 0, n);
			fputs(n_weights ? ",[" : "[", out);
			int first = 1;
			for (size_t k = 0; k < n; k++) {
				if (hide[k])
					continue;
				int64_t fi = name_index_of(&fr, names[k]);
				if (fi < 0) {
					rc = -ENOMEM;
					break;
				}
				fprintf(out, first ? "%" PRId64 : ",%" PRId64, fi);
				first = 0;
			}
			fputc(']', out);
			weights[n_weights++] = r->value;
			total += r->value;
		}
		fputs("],\"weights\":[", out);
		for (size_t k = 0; k < n_weights; k++)
			fprintf(out, k ? ",%" PRIu64 : "%" PRIu64, weights[k]);
		fprintf(out, "],\"endValue\":%" PRIu64 "}", total);
		i = end;
	}
	fputs("],\n\"shared\":{\"frames\":[", out);
	for (size_t k = 0; k < fr.n; k++) {
		fputs(k ? (k % 8 ? ",{\"name\":" : ",\n{\"name\":") : "{\"name\":", out);
		out_json_str(out, fr.names[k]);
		fputc('}', out);
	}
	fputs("]}}\n", out);
	free(names);
	free(hide);
	free(weights);
	name_index_free(&fr);
	if (!rc && ferror(out))
		rc = -EIO;
	return rc;
}
