/* What `info` and the report's summary both say about one trace file,
 * read and written once for both: the probe counters (the end record's,
 * else the latest stats record's), the status line, and the damaged
 * regions as JSON.  Each caller keeps its own keys around these pieces
 * (`info --json` and the page's data are read by different consumers).
 * Not for what a model computes. */
#ifndef FLIGHTREC_OUT_FILE_JSON_H
#define FLIGHTREC_OUT_FILE_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct trace_file;
struct ts_probe;

/* Probe counters: from END when present, else the latest STATS record. */
struct out_file_probes {
	const char *source;      /* "end record", "last stats record; ..."; NULL: none */
	int from_end;
	uint32_t n;
	struct ts_probe *probes; /* owned: free() */
	uint64_t cpu_user_ns, cpu_sys_ns;
};

void out_file_probes_get(const struct trace_file *f, struct out_file_probes *p);
/* [{"<name_key>":NAME,"events":N,"drops":N},...] */
void out_file_probes_json(FILE *out, const struct out_file_probes *p, const char *name_key);
/* The file's trouble (trace_file_trouble) as a JSON string, "intact" when none. */
void out_file_status_json(FILE *out, const struct trace_file *f);
/* A snapshot's trigger, time and window (seconds from the file's start),
 * or null for a recording. */
void out_file_snapshot_json(FILE *out, const struct trace_file *f);
/* Its name as --trigger says it, and what followed an OOM in words. */
const char *out_snapshot_trigger_name(unsigned trigger);
const char *out_snapshot_retry_text(unsigned oom_retry);
/* The first max damaged regions: [{"offset":N,"length":N,"what":TEXT},...],
 * each what cut at 160 bytes. */
void out_file_damage_json(FILE *out, const struct trace_file *f, size_t max);

#endif
