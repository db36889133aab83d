/* The decode stage's own view of a trace set, shared by its parts and
 * nothing else: trace_set.c (the set, its files and lookups), ts_meta.c
 * (metadata records), stacks/ustack_intern.c (dwarf-mode stacks into canonical ones)
 * and trace_run.c (the two passes and the models).  Everything else goes
 * through trace_set.h. */
#ifndef FLIGHTREC_TRACE_SET_IMPL_H
#define FLIGHTREC_TRACE_SET_IMPL_H

#include "trace_set.h"

#include <stddef.h>
#include <stdint.h>

struct ts_model {
	const struct model_ops *ops;
	void *state;
};

struct trace_set {
	struct trace_file *files;
	size_t n_files;
	struct ts_model *models;
	size_t n_models;
	int clocks_final; /* the files' offsets no longer change (align_pass.c) */
	unsigned jobs;    /* threads decompressing ahead of the passes; <= 1: none */
	/* what later stages hang on the set (trace_set_put_slot) */
	struct ts_slot_entry {
		void *p;
		void (*free_fn)(void *);
	} slots[TS_SLOTS];
	/* dwarf-mode resolution during pass 2: the pool the resolved names
	 * live in (until trace_set_free), and a buffer for events patched with
	 * canonical stack ids */
	struct strpool *names;
	uint8_t *scratch;
	size_t scratch_cap;
	/* what opening skipped (archive members), one line each */
	char **warnings;
	size_t n_warnings;
};

/* One record chunk pass 2 reads: an EVENTS chunk (every record), or a
 * metadata chunk holding events or USTACK records (those only). */
struct ts_chunk_ref {
	uint64_t offset;
	uint32_t ordinal;   /* chunk order in the file: the high half of seq */
	uint16_t late_only;
	uint16_t damaged;   /* a pass found it damaged (the reader recorded it
			     * then): the later passes do not read it again */
};

/* Pass state of one file. */
struct ts_pass {
	struct ts_chunk_ref *refs;
	size_t n_refs, cap_refs;
	size_t n_read;      /* refs the events pass got through (all but those
			     * after an I/O error): a second look reads these */
	/* DSO, UNWIND and PYCODE records found in EVENTS chunks: applied after
	 * pass 2 (the resolver's symbolizer and caches point into those tables) */
	uint8_t *late;
	size_t late_len, late_cap;
};

#define TS_N_TYPES 65536u

/* Where the record being decoded is, for problems. */
struct ts_where {
	struct trace_file *f;
	uint64_t chunk_offset;
	uint64_t rec_offset;
	uint64_t seq;
};

#define PROBLEM(w, ...) ts_problem((w)->f, (w)->chunk_offset, (w)->rec_offset, __VA_ARGS__)

void ts_problem(struct trace_file *f, uint64_t chunk_offset, uint64_t rec_offset,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* err set to "out of memory while decoding" at w; returns -1 */
int ts_oom(struct frec_error *err, const struct ts_where *w);
/* A copy of len bytes with control characters as '?' and NULs as sep. */
char *ts_strndup_printable(const char *s, size_t len, char sep_for_nul);

/* ts_identity.c: a process's FR_REC_PROC_CGROUP path and the identity
 * variables of its FR_REC_PROC_ENV, kept for trace_file_identity; -1 out of
 * memory.  ts_identity_free with the file. */
int ts_identity_note_cgroup(struct trace_file *f, uint32_t pid, const char *path, size_t len);
int ts_identity_note_env(struct trace_file *f, uint32_t pid, const char *env, size_t len);
void ts_identity_free(struct trace_file *f);
/* A NUL-terminated, printable copy of a 16-byte comm. */
void ts_copy_comm(char dst[17], const char src[16]);

/* Raw dwarf-mode stack id -> canonical id (0 keys are never stored). */
int ts_idmap_get(const struct ts_idmap *m, uint32_t key, uint32_t *value);
/* Inserts key (not present, nonzero) -> value; -1 when memory runs out. */
int ts_idmap_put(struct ts_idmap *m, uint32_t key, uint32_t value);

/* ts_meta.c: one metadata record (a type >= 0x100 other than USTACK, its
 * fixed part checked).  0, or -1 when memory runs out. */
int ts_decode_meta(const struct ts_where *w, uint16_t type, const uint8_t *p, uint32_t size,
		   struct frec_error *err);

/* stacks/ustack_intern.c: one FR_REC_USTACK, unwound, named, merged and interned into
 * a canonical stack of its file.  0, or -1 when memory runs out. */
int ts_decode_ustack(struct trace_set *ts, uint32_t file_index, const struct ts_where *w,
		     const uint8_t *p, uint32_t size, struct frec_error *err);

/* An event as the models get it (trace_run.c): the stored record, or a
 * copy in ts->scratch carrying the canonical id when its stack_id names a
 * raw dwarf-mode stack.  NULL when memory runs out. */
const struct fr_rec_hdr *ts_event_as_fed(struct trace_set *ts, const struct trace_file *f,
					 const uint8_t *p, uint16_t type, uint32_t size);

/* 1 when type is in the 0-terminated list types (a model's align_types,
 * revisit_types). */
static inline int ts_type_in(const uint16_t *types, uint16_t type)
{
	for (; *types; types++)
		if (*types == type)
			return 1;
	return 0;
}

struct ts_progress;
/* revisit_pass.c: model model_index's second look (model_ops.revisit_*),
 * when it has one and wants it; 0, or -1 with err set. */
int trace_set_revisit(struct trace_set *ts, size_t model_index, struct ts_progress *pg,
		      struct frec_error *err);

/* ts_prefetch.c: workers that read and decompress the noted chunks of the
 * files in file order ahead of a pass (ts->jobs of them); NULL for the
 * serial path (jobs <= 1, or no thread could start).  events_only: the
 * align pass's chunks (refs not late_only), else every ref. */
struct ts_prefetch;
struct ts_prefetch *ts_prefetch_start(struct trace_set *ts, int events_only);
/* The chunk of ref index ref of the file, asked for in the order of the
 * refs (those the pass reads): 1 with *out valid until the next call for
 * that file, 0 when the pass must read it itself (frec_read_chunk_at on
 * the file's reader: damage and I/O errors are found there, as without
 * workers).  pf NULL: always 0. */
int ts_prefetch_get(struct ts_prefetch *pf, uint32_t file_index, size_t ref,
		    struct frec_chunk *out);
/* The pass is done with the file (at its end or after an error). */
void ts_prefetch_file_done(struct ts_prefetch *pf, uint32_t file_index);
/* Stops and joins the workers, frees what they queued. */
void ts_prefetch_stop(struct ts_prefetch *pf);

#endif
