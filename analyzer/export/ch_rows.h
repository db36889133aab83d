/* The rows of the ClickHouse export (tables: analyzer/CLICKHOUSE.md), each
 * from a model's result, never from raw events, so the export says what
 * the CLI says: findings from `findings`, stragglers, collectives and
 * steps from `stragglers`, connections from `rdma`, failed allocations
 * from `memory`, stacks from `flame --format folded`.  Not for the
 * transport (ch_batch.c) nor the order of the export (cmd_export.c). */
#ifndef FLIGHTREC_CH_ROWS_H
#define FLIGHTREC_CH_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "ch_batch.h"

struct trace_set;
struct findings_result;
struct stragglers_result;
struct rdma_result;
struct mem_result;
struct flame_tree;

#define CH_ID_LEN 32  /* hex digits of a recording or job id */

/* What every row of one export shares. */
struct ch_export {
	struct ch_target *t;
	struct trace_set *ts;
	char (*rec_ids)[CH_ID_LEN + 1];  /* per file of ts */
	const char **rec_id_list;        /* the same as strings, for arrays */
	size_t n_files;
	char job_id[CH_ID_LEN + 1];      /* of the set: its recording ids, sorted */
	uint64_t exported_at_s;
};

/* The recording id of a file: sha256 of its 128-byte header (host,
 * recorder pid, start anchors, header crc), first 32 hex digits: the same
 * trace always gets the same id, wherever it is copied or archived. */
void ch_recording_id(const void *hdr, size_t len, char out[CH_ID_LEN + 1]);
/* The job id: sha256 of the sorted recording ids. */
void ch_job_id(const char *const *ids, size_t n, char out[CH_ID_LEN + 1]);
/* Each returns 0, or -1 with x->t->err set. */
int ch_put_recordings(const struct ch_export *x);
int ch_put_job_recordings(const struct ch_export *x);
int ch_put_findings(const struct ch_export *x, const struct findings_result *r);
int ch_put_stragglers(const struct ch_export *x, const struct stragglers_result *r);
int ch_put_rdma(const struct ch_export *x, const struct rdma_result *r);
int ch_put_failed_allocations(const struct ch_export *x, const struct mem_result *r);
/* The folded lines of tree (exactly flame_write_folded's) as rows of
 * stacks for file index file of x. */
int ch_put_stacks(const struct ch_export *x, uint32_t file, const char *kind, const char *unit,
		  const struct flame_tree *tree);

#endif
