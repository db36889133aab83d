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

const char *out_snapshot_trigger_name(unsigned trigger)
{
	switch (trigger) {
	case FR_TRIGGER_SIGNAL: return "signal";
	case FR_TRIGGER_OOM: return "oom";
	case FR_TRIGGER_NCCL_ERROR: return "nccl-error";
	case FR_TRIGGER_HANG: return "hang";
	case FR_TRIGGER_EXIT: return "exit";
	}
	return "unknown";
}

const char *out_snapshot_retry_text(unsigned oom_retry)
{
	switch (oom_retry) {
	case FR_OOM_RETRY_UNSEEN: return "not seen (the thread allocated nothing more before the snapshot)";
	case FR_OOM_RETRY_OK: return "succeeded (the next allocation of that thread worked)";
	case FR_OOM_RETRY_FAILED: return "failed (the next allocation of that thread failed too)";
	}
	return NULL;
}

static double rel_s(const struct trace_file *f, uint64_t t)
{
	return t > f->hdr.start_mono_ns ? (double)(t - f->hdr.start_mono_ns) / 1e9 : 0.0;
}

void out_file_snapshot_json(FILE *out, const struct trace_file *f)
{
	if (!f->has_snapshot) {
		fputs("null", out);
		return;
	}
	const struct fr_rec_snapshot *s = &f->snapshot;
	fprintf(out, "{\"number\":%u,\"trigger\":", s->number);
	out_json_str(out, out_snapshot_trigger_name(s->trigger));
	fprintf(out, ",\"detail\":");
	out_json_str(out, f->snapshot_detail ? f->snapshot_detail : "");
	fprintf(out, ",\"trigger_s\":%.6f,\"window_s\":[%.6f,%.6f],\"pid\":%u,"
		"\"evicted_records\":%" PRIu64 ",\"carried_allocations\":%u,"
		"\"carried_bytes\":%" PRIu64 ",\"suppressed_triggers\":%u,\"oom_retry\":",
		rel_s(f, s->trigger_ns), rel_s(f, s->window_first_ns), rel_s(f, s->window_last_ns),
		s->pid, (uint64_t)s->evicted_records, s->carried_allocs, (uint64_t)s->carried_bytes,
		s->suppressed);
	static const char *const retry[] = { "null", "\"unseen\"", "\"succeeded\"", "\"failed\"" };
	fputs(s->oom_retry < 4 ? retry[s->oom_retry] : "null", out);
	fputc('}', out);
}
