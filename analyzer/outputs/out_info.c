/* What a trace holds, as text and JSON (see out_info.h). */
#include "out_info.h"
#include "model_syscalls.h"
#include "out_common.h"
#include "out_identity.h"
#include "out_file_json.h"
#include "syscall_names.h"
#include "trace_set.h"
#include "ts_archive.h"
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *const chunk_kind_names[TS_CHUNK_KINDS] = {
	"schema", "events", "meta", "index", "end", "unknown",
};
static const char *const codec_names[4] = { "none", "zstd", "zlib", "unknown" };

/* What was lost, per probe and reason, and when: an event lost whole, or
 * an event kept without its stack. */
static void info_losses_text(const struct trace_file *f, FILE *out)
{
	uint32_t n = 0;
	const struct fr_drop_count *d = trace_file_drops(f, &n);
	if (!d)
		return;
	fprintf(out, "\n  losses:\n");
	fprintf(out, "    %-16s %-12s %12s  %-6s %s\n", "PROBE", "REASON", "COUNT", "LOST", "WHEN");
	for (uint32_t i = 0; i < n; i++) {
		char when[64] = "unknown";
		double first, last;
		if (trace_file_drop_window(f, &d[i], &first, &last))
			snprintf(when, sizeof(when), "%.3f-%.3f s", first, last);
		fprintf(out, "    %-16.16s %-12s %12" PRIu64 "  %-6s %s\n", d[i].probe,
			fr_drop_reason_name(d[i].reason), d[i].count, out_drop_unit(&d[i]), when);
	}
}

static const char *syscall_label(uint32_t nr, char *buf, size_t len);

/* The syscalls family's ring-full losses by call number: with the calls
 * recorded, how many of one kind the job made, exactly. */
static void info_syscall_drops_text(const struct trace_file *f, FILE *out)
{
	uint32_t n = 0;
	const struct fr_syscall_drop *d = trace_file_syscall_drops(f, &n);
	if (!d)
		return;
	fprintf(out, "\n  syscalls lost to a full ring, by call:\n");
	for (uint32_t i = 0; i < n; i++) {
		char lbl[40];
		fprintf(out, "    %-24s %12" PRIu64 "\n", syscall_label(d[i].nr, lbl, sizeof(lbl)),
			d[i].count);
	}
}

static void info_syscall_drops_json(const struct trace_file *f, FILE *out)
{
	uint32_t n = 0;
	const struct fr_syscall_drop *d = trace_file_syscall_drops(f, &n);
	fprintf(out, ",\"syscall_drops\":");
	if (!f->has_syscall_drops) {
		fprintf(out, "null");
		return;
	}
	fputc('[', out);
	for (uint32_t i = 0; d && i < n; i++) {
		char lbl[40];
		fprintf(out, "%s{\"nr\":%u,\"name\":", i ? "," : "", d[i].nr);
		out_json_str(out, syscall_label(d[i].nr, lbl, sizeof(lbl)));
		fprintf(out, ",\"count\":%" PRIu64 "}", d[i].count);
	}
	fputc(']', out);
}

static const char *syscall_label(uint32_t nr, char *buf, size_t len)
{
	const char *name = nr < SYSCALLS_MAX_NR ? syscall_name(nr) : NULL;
	if (name)
		return name;
	if (nr >= SYSCALLS_MAX_NR)
		snprintf(buf, len, "(nr >= %u)", SYSCALLS_MAX_NR);
	else
		snprintf(buf, len, "syscall_%u", nr);
	return buf;
}

/* A flight-recorder snapshot: what wrote it and which events it holds. */
static void info_snapshot_text(const struct trace_file *f, FILE *out)
{
	const struct fr_rec_snapshot *s = &f->snapshot;
	uint64_t t0 = f->hdr.start_mono_ns;
	char b1[64], b2[64], b3[64];
	fprintf(out, "  snapshot:      #%u, %s at +%s: %s\n", s->number,
		out_snapshot_trigger_name(s->trigger),
		out_duration(s->trigger_ns > t0 ? s->trigger_ns - t0 : 0, b1, sizeof(b1)),
		f->snapshot_detail && f->snapshot_detail[0] ? f->snapshot_detail : "-");
	if (s->window_first_ns)
		fprintf(out, "  window:        events from +%s to +%s held by the ring; %" PRIu64
			" older records had left it\n",
			out_duration(s->window_first_ns > t0 ? s->window_first_ns - t0 : 0, b1, sizeof(b1)),
			out_duration(s->window_last_ns > t0 ? s->window_last_ns - t0 : 0, b2, sizeof(b2)),
			(uint64_t)s->evicted_records);
	if (s->carried_allocs)
		fprintf(out, "  carried:       %u allocation%s live at the window's start (%s of device "
			"memory), written ahead of its events\n", s->carried_allocs,
			s->carried_allocs == 1 ? "" : "s", out_bytes(s->carried_bytes, b3, sizeof(b3)));
	const char *retry = out_snapshot_retry_text(s->oom_retry);
	if (retry)
		fprintf(out, "  OOM retry:     %s\n", retry);
	if (s->suppressed)
		fprintf(out, "  suppressed:    %u trigger%s since the previous snapshot (rate limit, caps, "
			"or while this one was pending)\n", s->suppressed, s->suppressed == 1 ? "" : "s");
}

void out_info_text(struct trace_file *f, uint32_t file_index, const void *syscalls,
		      FILE *out)
{
	char b1[64], b2[64], b3[64];
	fprintf(out, "%s\n", f->path);
	fprintf(out, "  size:          %s (%" PRIu64 " bytes)\n",
		out_bytes(f->size_bytes, b1, sizeof(b1)), f->size_bytes);
	fprintf(out, "  host:          %s (%u CPUs)\n", f->hdr.host[0] ? f->hdr.host : "?",
		f->hdr.n_cpus);
	fprintf(out, "  kernel:        %s\n", f->hdr.kernel_release[0] ? f->hdr.kernel_release : "?");
	if (f->hdr.flags & FR_FILE_USTACK_DIRECT)
		fprintf(out, "  stack copies:  straight into the ring (one copy, kernel dynptr read)\n");
	fprintf(out, "  command:       %s\n", f->cmdline[0] ? f->cmdline : "(none recorded)");
	fprintf(out, "  recorder pid:  %u\n", f->hdr.recorder_pid);
	fprintf(out, "  format:        v%u.%u\n", f->hdr.version_major, f->hdr.version_minor);
	fprintf(out, "  start:         %s\n", out_iso_time(f->hdr.start_real_ns, b1, sizeof(b1)));
	int exact;
	uint64_t duration_ns = trace_file_duration_ns(f, &exact);
	fprintf(out, "  duration:      %s%s\n", out_duration(duration_ns, b1, sizeof(b1)),
		exact ? "" : " (to the last event; recording incomplete)");
	if (f->events)
		fprintf(out, "  events:        %" PRIu64 " from +%s to +%s\n", f->events,
			out_duration(f->first_event_ns > f->hdr.start_mono_ns ?
				     f->first_event_ns - f->hdr.start_mono_ns : 0, b1, sizeof(b1)),
			out_duration(f->last_event_ns > f->hdr.start_mono_ns ?
				     f->last_event_ns - f->hdr.start_mono_ns : 0, b2, sizeof(b2)));
	else
		fprintf(out, "  events:        none\n");
	char trouble[512];
	trace_file_trouble(f, trouble, sizeof(trouble));
	fprintf(out, "  status:        %s\n", trouble[0] ? trouble : "intact");

	if (f->has_snapshot)
		info_snapshot_text(f, out);

	struct out_file_probes pr;
	out_file_probes_get(f, &pr);
	if (pr.source) {
		uint64_t cpu_ns = pr.cpu_user_ns + pr.cpu_sys_ns;
		fprintf(out, "  recorder CPU:  user %s, sys %s", out_duration(pr.cpu_user_ns, b1, sizeof(b1)),
			out_duration(pr.cpu_sys_ns, b2, sizeof(b2)));
		if (duration_ns)
			fprintf(out, " (%.2f%% of one CPU)", 100.0 * (double)cpu_ns / (double)duration_ns);
		fprintf(out, "\n");
	}

	fprintf(out, "\n  processes: %zu\n", f->n_procs);
	if (f->n_procs) {
		fprintf(out, "    %-8s %-8s %-7s %-16s %s\n", "PID", "PPID", "THREADS", "COMM", "CMDLINE");
		for (size_t i = 0; i < f->n_procs; i++) {
			const struct ts_process *p = &f->procs[i];
			fprintf(out, "    %-8u %-8u %-7u %-16s %s\n", p->pid, p->ppid, p->threads,
				p->comm, p->cmdline);
			char where[256];
			if (out_identity_text(f, p->pid, where, sizeof(where)))
				fprintf(out, "             ran in %s\n", where);
		}
	}

	fprintf(out, "\n  records by type: %" PRIu64 "\n", f->records);
	for (uint32_t t = 0; t < 65536; t++) {
		uint64_t n = trace_file_records_of_type(f, (uint16_t)t);
		if (!n)
			continue;
		const char *name = trace_file_type_name(f, (uint16_t)t);
		if (name && rec_type_name((uint16_t)t))
			snprintf(b1, sizeof(b1), "%s", name);
		else if (name)
			snprintf(b1, sizeof(b1), "%.24s (0x%x, unknown; named by schema)", name, t);
		else
			snprintf(b1, sizeof(b1), "unknown type 0x%x", t);
		fprintf(out, "    %-24s %12" PRIu64 "\n", b1, n);
	}

	if (pr.source) {
		fprintf(out, "\n  probes (from %s):\n", pr.source);
		fprintf(out, "    %-16s %14s %12s\n", "PROBE", "EVENTS", "DROPS");
		for (uint32_t i = 0; i < pr.n; i++)
			fprintf(out, "    %-16s %14" PRIu64 " %12" PRIu64 "\n", pr.probes[i].name,
				pr.probes[i].events, pr.probes[i].drops);
	} else {
		fprintf(out, "\n  probes: no counters recorded (no end record, no stats record)\n");
	}
	free(pr.probes);
	info_losses_text(f, out);
	info_syscall_drops_text(f, out);

	struct syscall_stat top[INFO_TOP_SYSCALLS];
	size_t n_top = syscalls ? model_syscalls_top(syscalls, file_index, top, INFO_TOP_SYSCALLS) : 0;
	if (n_top) {
		fprintf(out, "\n  top syscalls (by total time):\n");
		fprintf(out, "    %-20s %10s %12s %12s %12s %8s\n", "SYSCALL", "COUNT", "TOTAL",
			"MEAN", "MAX", "FAILED");
		for (size_t i = 0; i < n_top; i++) {
			char lbl[40];
			fprintf(out, "    %-20s %10" PRIu64 " %12s %12s %12s %8" PRIu64 "\n",
				syscall_label(top[i].nr, lbl, sizeof(lbl)), top[i].count,
				out_duration(top[i].total_ns, b1, sizeof(b1)),
				out_duration(top[i].total_ns / top[i].count, b2, sizeof(b2)),
				out_duration(top[i].max_ns, b3, sizeof(b3)), top[i].failed);
		}
	}

	fprintf(out, "\n  chunks: %" PRIu64 " (", f->chunks);
	int first = 1;
	for (int k = 0; k < TS_CHUNK_KINDS; k++) {
		if (!f->chunks_by_kind[k])
			continue;
		fprintf(out, "%s%s %" PRIu64, first ? "" : ", ", chunk_kind_names[k], f->chunks_by_kind[k]);
		first = 0;
	}
	fprintf(out, ")\n    codec:");
	first = 1;
	for (int c = 0; c < 4; c++) {
		if (!f->chunks_by_codec[c])
			continue;
		fprintf(out, "%s %s %" PRIu64, first ? "" : ",", codec_names[c], f->chunks_by_codec[c]);
		first = 0;
	}
	fprintf(out, "%s\n", first ? " -" : "");
	fprintf(out, "    payload: %s raw, %s stored", out_bytes(f->raw_bytes, b1, sizeof(b1)),
		out_bytes(f->stored_bytes, b2, sizeof(b2)));
	if (f->stored_bytes)
		fprintf(out, " (ratio %.2f)", (double)f->raw_bytes / (double)f->stored_bytes);
	fprintf(out, "\n");

	size_t n_damage = f->reader ? frec_damage_count(f->reader) : 0;
	if (n_damage) {
		fprintf(out, "\n  damaged regions: %zu\n", n_damage);
		for (size_t i = 0; i < n_damage; i++) {
			const struct frec_damage *d = frec_damage_at(f->reader, i);
			fprintf(out, "    offset %" PRIu64 ", %" PRIu64 " bytes: %.160s\n", d->offset,
				d->length, d->what);
		}
	}
	uint64_t missing = f->reader ? frec_chunks_missing(f->reader) : 0;
	if (missing)
		fprintf(out, "\n  missing: %" PRIu64 " chunk%s listed in the index not found\n", missing,
			missing == 1 ? "" : "s");
	if (f->n_problems) {
		fprintf(out, "\n  malformed records: %" PRIu64 "\n", f->n_problems);
		for (uint64_t i = 0; i < f->n_problems && i < TS_MAX_PROBLEMS_KEPT; i++)
			fprintf(out, "    chunk at offset %" PRIu64 ", record +%" PRIu64 ": %s\n",
				f->problems[i].chunk_offset, f->problems[i].rec_offset, f->problems[i].what);
		if (f->n_problems > TS_MAX_PROBLEMS_KEPT)
			fprintf(out, "    ... and %" PRIu64 " more\n", f->n_problems - TS_MAX_PROBLEMS_KEPT);
	}
	if (f->io_failed)
		fprintf(out, "\n  read error: offset %lld: %s\n", (long long)f->io_err.offset, f->io_err.what);
	if (!trace_file_complete(f) && !f->io_failed)
		fprintf(out, "\n  incomplete: no end record (recorder killed?)\n");
}

void out_info_json(struct trace_file *f, uint32_t file_index, const void *syscalls,
		      FILE *out)
{
	int exact;
	uint64_t duration_ns = trace_file_duration_ns(f, &exact);
	char b1[64];
	fprintf(out, "{\"path\":");
	out_json_str(out, f->path);
	fprintf(out, ",\"size_bytes\":%" PRIu64 ",\"host\":", f->size_bytes);
	out_json_str(out, f->hdr.host);
	fprintf(out, ",\"n_cpus\":%u,\"ustack_direct\":%s,\"kernel\":", f->hdr.n_cpus,
		f->hdr.flags & FR_FILE_USTACK_DIRECT ? "true" : "false");
	out_json_str(out, f->hdr.kernel_release);
	fprintf(out, ",\"command\":");
	out_json_str(out, f->cmdline);
	fprintf(out, ",\"format_version\":\"%u.%u\",\"start\":\"%s\",\"start_real_ns\":%" PRIu64
		",\"duration_ns\":%" PRIu64 ",\"complete\":%s,\"status\":",
		f->hdr.version_major, f->hdr.version_minor,
		out_iso_time(f->hdr.start_real_ns, b1, sizeof(b1)), f->hdr.start_real_ns,
		duration_ns, trace_file_complete(f) ? "true" : "false");
	out_file_status_json(out, f);
	fprintf(out, ",\"snapshot\":");
	out_file_snapshot_json(out, f);

	fprintf(out, ",\"processes\":[");
	for (size_t i = 0; i < f->n_procs; i++) {
		const struct ts_process *p = &f->procs[i];
		fprintf(out, "%s{\"pid\":%u,\"ppid\":%u,\"threads\":%u,\"comm\":", i ? "," : "",
			p->pid, p->ppid, p->threads);
		out_json_str(out, p->comm);
		fprintf(out, ",\"cmdline\":");
		out_json_str(out, p->cmdline);
		out_identity_json(out, f, p->pid);
		fprintf(out, "}");
	}
	fprintf(out, "],\"records\":%" PRIu64 ",\"events\":%" PRIu64 ",\"records_by_type\":[",
		f->records, f->events);
	int first = 1;
	for (uint32_t t = 0; t < 65536; t++) {
		uint64_t n = trace_file_records_of_type(f, (uint16_t)t);
		if (!n)
			continue;
		const char *name = trace_file_type_name(f, (uint16_t)t);
		fprintf(out, "%s{\"type\":%u,\"name\":", first ? "" : ",", t);
		if (name)
			out_json_str(out, name);
		else
			fprintf(out, "null");
		fprintf(out, ",\"known\":%s,\"count\":%" PRIu64 "}",
			rec_type_name((uint16_t)t) ? "true" : "false", n);
		first = 0;
	}
	struct out_file_probes pr;
	out_file_probes_get(f, &pr);
	fprintf(out, "],\"probes_source\":");
	if (pr.source)
		out_json_str(out, pr.from_end ? "end" : "stats");
	else
		fprintf(out, "null");
	fprintf(out, ",\"probes\":");
	out_file_probes_json(out, &pr, "name");
	uint64_t drops = 0;
	for (uint32_t i = 0; i < pr.n; i++)
		drops += pr.probes[i].drops;
	fprintf(out, ",\"drops\":%" PRIu64 ",\"losses\":", drops);
	out_json_losses(out, f);
	info_syscall_drops_json(f, out);
	fprintf(out, ",\"recorder_cpu_user_ns\":%" PRIu64 ",\"recorder_cpu_sys_ns\":%" PRIu64,
		pr.cpu_user_ns, pr.cpu_sys_ns);
	free(pr.probes);

	struct syscall_stat top[INFO_TOP_SYSCALLS];
	size_t n_top = syscalls ? model_syscalls_top(syscalls, file_index, top, INFO_TOP_SYSCALLS) : 0;
	fprintf(out, ",\"top_syscalls\":[");
	for (size_t i = 0; i < n_top; i++) {
		char lbl[40];
		fprintf(out, "%s{\"nr\":%u,\"name\":", i ? "," : "", top[i].nr);
		out_json_str(out, syscall_label(top[i].nr, lbl, sizeof(lbl)));
		fprintf(out, ",\"count\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64
			",\"failed\":%" PRIu64 "}", top[i].count, top[i].total_ns, top[i].max_ns,
			top[i].failed);
	}
	fprintf(out, "],\"chunks\":{\"total\":%" PRIu64, f->chunks);
	for (int k = 0; k < TS_CHUNK_KINDS; k++)
		fprintf(out, ",\"%s\":%" PRIu64, chunk_kind_names[k], f->chunks_by_kind[k]);
	fprintf(out, ",\"codecs\":{");
	for (int c = 0; c < 4; c++)
		fprintf(out, "%s\"%s\":%" PRIu64, c ? "," : "", codec_names[c], f->chunks_by_codec[c]);
	fprintf(out, "},\"raw_bytes\":%" PRIu64 ",\"stored_bytes\":%" PRIu64 "}", f->raw_bytes,
		f->stored_bytes);
	fprintf(out, ",\"damaged_regions\":");
	out_file_damage_json(out, f, SIZE_MAX);
	fprintf(out, ",\"chunks_missing\":%" PRIu64 ",\"malformed_records\":%" PRIu64 "}",
		f->reader ? frec_chunks_missing(f->reader) : 0, f->n_problems);
}

