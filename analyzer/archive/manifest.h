/* MANIFEST.json, the first member of a trace archive: what each trace is
 * (name, digest, size) and what it holds (hosts, ranks, pids, time range,
 * integrity verdict, events lost), so a reader of a bug report knows what
 * arrived before opening anything.  Written by the archive command; the
 * archive reader (decode/ts_archive.c) never trusts nor needs it.  Not for
 * the tar itself (bundle_write.c).
 *
 *   {"format":1,"created_by":"flightrec-analyze 0.1.0","traces":[
 *    {"name":"node0.frec","sha256":"<64 hex>","bytes":N,"hosts":["node-a"],
 *     "ranks":[0,1],"pids":[1000,1001],"start":"2024-05-01T12:00:00.000Z",
 *     "end":"2024-05-01T12:00:03.210Z","status":"intact","drops":0}]}
 *
 * start and end are ISO 8601 UTC with milliseconds, as `info` prints them
 * (end: the end record's time, else the last event of an incomplete
 * recording); status is `check`'s verdict (intact, incomplete, damaged,
 * stopped early, unusable); drops is every event the probes lost, as
 * `info --json` counts them; ranks and pids are sorted, each once. */
#ifndef FLIGHTREC_MANIFEST_H
#define FLIGHTREC_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#define MANIFEST_NAME "MANIFEST.json"
#define MANIFEST_FORMAT 1

struct trace_set;

struct manifest_member {
	const char *name;   /* its name in the archive */
	char sha256[65];    /* of its bytes, lowercase hex */
	uint64_t bytes;
};

/* The manifest of the members m[i], one per file i of ts (already run:
 * trace_set_run), as a malloc'd JSON text of *len bytes ending in a
 * newline; NULL when memory runs out. */
char *manifest_json(struct trace_set *ts, const struct manifest_member *m, size_t n,
		    const char *created_by, size_t *len);

#endif
