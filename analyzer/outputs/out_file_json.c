/* A trace file's counters, status and damage for info and the report; see
 * out_file_json.h. */
#include "out_file_json.h"
#include "out_common.h"
#include "trace_set.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void out_file_probes_get(const struct trace_file *f, struct out_file_probes *p)
{
	memset(p, 0, sizeof(*p));
	const struct fr_end *end = f->reader ? frec_end(f->reader) : NULL;
	if (end) {
		uint32_t n = 0;
		const struct fr_probe_stats *ps = frec_end_probes(f->reader, &n);
		p->source = "end record";
		p->from_end = 1;
		p->cpu_user_ns = end->cpu_user_ns;
		p->cpu_sys_ns = end->cpu_sys_ns;
		p->probes = calloc(n ? n : 1, sizeof(*p->probes));
		if (!p->probes || !ps)
			return;
		for (uint32_t i = 0; i < n; i++) {
			memcpy(p->probes[i].name, ps[i].name, sizeof(ps[i].name));
			p->probes[i].name[16] = '\0';
			p->probes[i].events = ps[i].events;
			p->probes[i].drops = ps[i].drops;
		}
		p->n = n;
		return;
	}
	if (f->has_stats) {
		p->source = "last stats record; recording incomplete";
		p->cpu_user_ns = f->stats_cpu_user_ns;
		p->cpu_sys_ns = f->stats_cpu_sys_ns;
		p->probes = calloc(f->n_stats_probes ? f->n_stats_probes : 1, sizeof(*p->probes));
		if (!p->probes)
			return;
		memcpy(p->probes, f->stats_probes, f->n_stats_probes * sizeof(*p->probes));
		p->n = f->n_stats_probes;
	}
}

void out_file_probes_json(FILE *out, const struct out_file_probes *p, const char *name_key)
{
	fputc('[', out);
	for (uint32_t i = 0; i < p->n; i++) {
		fprintf(out, "%s{\"%s\":", i ? "," : "", name_key);
		out_json_str(out, p->probes[i].name);
		fprintf(out, ",\"events\":%" PRIu64 ",\"drops\":%" PRIu64 "}", p->probes[i].events,
			p->probes[i].drops);
	}
	fputc(']', out);
}

void out_file_status_json(FILE *out, const struct trace_file *f)
{
	char trouble[512];
	trace_file_trouble(f, trouble, sizeof(trouble));
	out_json_str(out, trouble[0] ? trouble : "intact");
}

void out_file_damage_json(FILE *out, const struct trace_file *f, size_t max)
{
	size_t n = f->reader ? frec_damage_count(f->reader) : 0;
	fputc('[', out);
	for (size_t i = 0; i < n && i < max; i++) {
		const struct frec_damage *d = frec_damage_at(f->reader, i);
		char what[161];
		snprintf(what, sizeof(what), "%.160s", d->what);
		fprintf(out, "%s{\"offset\":%" PRIu64 ",\"length\":%" PRIu64 ",\"what\":", i ? "," : "",
			d->offset, d->length);
		out_json_str(out, what);
		fputc('}', out);
	}
	fputc(']', out);
}
