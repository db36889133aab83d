/* MANIFEST.json from a run trace set (see manifest.h).  Every fact comes
 * from the decoder and the helpers info and check use, so the manifest and
 * those commands never disagree. */
#include "manifest.h"
#include "out_common.h"
#include "out_file_json.h"
#include "out_identity.h"
#include "proc_identity.h"
#include "trace_set.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MANIFEST_IDS_MAX 64 /* distinct values listed per kind */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* v[0..n) sorted, each value once: "[1,2,3]" */
static void json_set(FILE *out, int64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_i64);
	fputc('[', out);
	for (size_t i = 0, shown = 0; i < n; i++) {
		if (i && v[i] == v[i - 1])
			continue;
		fprintf(out, "%s%" PRId64, shown++ ? "," : "", v[i]);
	}
	fputc(']', out);
}

/* ,"KEY":["a","b"]: the distinct values of one identity field over the
 * file's processes (which member of struct proc_identity: at). */
static void identity_set(FILE *out, const struct trace_file *f, const char *key, size_t at)
{
	char seen[MANIFEST_IDS_MAX][PROC_ID_CONTAINER_MAX];
	size_t n = out_identity_distinct(f, at, seen, MANIFEST_IDS_MAX);
	fprintf(out, ",\"%s\":[", key);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', out);
		out_json_str(out, seen[i]);
	}
	fputc(']', out);
}

static int one_trace(FILE *out, const struct trace_file *f, const struct manifest_member *m)
{
	char b1[64];
	int exact;
	int64_t *v = calloc(f->n_procs ? f->n_procs : 1, sizeof(*v));
	if (!v)
		return -1;
	fprintf(out, "{\"name\":");
	out_json_str(out, m->name);
	fprintf(out, ",\"sha256\":\"%s\",\"bytes\":%" PRIu64 ",\"hosts\":[", m->sha256, m->bytes);
	if (f->hdr.host[0])
		out_json_str(out, f->hdr.host);
	fprintf(out, "],\"ranks\":");
	size_t n = 0;
	for (size_t i = 0; i < f->n_procs; i++)
		if (f->procs[i].rank >= 0)
			v[n++] = f->procs[i].rank;
	json_set(out, v, n);
	fprintf(out, ",\"pids\":");
	for (size_t i = 0; i < f->n_procs; i++)
		v[i] = f->procs[i].pid;
	json_set(out, v, f->n_procs);
	free(v);
	/* where it ran: what --redact replaces, as it does host names */
	identity_set(out, f, "containers", offsetof(struct proc_identity, container_id));
	identity_set(out, f, "pods", offsetof(struct proc_identity, pod_uid));
	identity_set(out, f, "pod_namespaces", offsetof(struct proc_identity, pod_namespace));
	identity_set(out, f, "slurm_jobs", offsetof(struct proc_identity, slurm_job));
	uint64_t start = f->hdr.start_real_ns;
	fprintf(out, ",\"start\":\"%s\"", out_iso_time(start, b1, sizeof(b1)));
	fprintf(out, ",\"end\":\"%s\",\"status\":\"%s\"",
		out_iso_time(start + trace_file_duration_ns(f, &exact), b1, sizeof(b1)),
		trace_file_verdict(f));
	struct out_file_probes pr;
	out_file_probes_get(f, &pr);
	uint64_t drops = 0;
	for (uint32_t i = 0; i < pr.n; i++)
		drops += pr.probes[i].drops;
	free(pr.probes);
	fprintf(out, ",\"drops\":%" PRIu64 "}", drops);
	return 0;
}

char *manifest_json(struct trace_set *ts, const struct manifest_member *m, size_t n,
		    const char *created_by, size_t *len)
{
	char *text = NULL;
	FILE *out = open_memstream(&text, len);
	if (!out)
		return NULL;
	fprintf(out, "{\"format\":%d,\"created_by\":", MANIFEST_FORMAT);
	out_json_str(out, created_by);
	fprintf(out, ",\"traces\":[");
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		fprintf(out, "%s\n  ", i ? "," : "");
		rc = one_trace(out, trace_set_file(ts, i), &m[i]);
	}
	fprintf(out, "\n]}\n");
	if (fclose(out) || rc) {
		free(text);
		return NULL;
	}
	return text;
}
