/* The members of a new archive, one per trace of a run set: each one's
 * name in the archive, the bytes it will hold (the trace itself, from its
 * file or an input archive's member's copy, or a redacted copy) as an open
 * descriptor, and their size and SHA-256 for the manifest.  Not for the
 * tar (bundle_write.c) nor the manifest's text (manifest.c). */
#ifndef FLIGHTREC_MEMBERS_H
#define FLIGHTREC_MEMBERS_H

#include <stddef.h>
#include <stdint.h>
#include "frec_error.h"
#include "manifest.h"
#include "redact.h"

struct trace_set;

struct members {
	size_t n;
	char **names;                 /* unique; see members_open */
	int *fds;                     /* the bytes to archive, read with pread */
	struct manifest_member *m;    /* names, digests, sizes: filled by members_hash */
	struct trace_set *facts;      /* what the manifest describes: the input set,
					 or the redacted copies' set (owned) */
	struct trace_set *input;
	struct redact_counts counts;  /* with redaction */
};

/* The members for the files of ts (run), named by their base names (a
 * member of an input archive by its own), control characters as '_', .frec
 * added when missing; base names that occur more than once are prefixed
 * with their position among the traces and a dash ("2-run.frec").  Without
 * redaction each holds its trace's bytes.  0, or -1 with err. */
int members_open(struct members *ms, struct trace_set *ts, struct frec_error *err);

/* Replaces every member's bytes by a redacted copy (redact.h) and opens
 * the copies as ms->facts, run; a copy is named ARCHIVE:NAME (archive:
 * the output's path) in messages.  redact_trace writes to a path and never
 * through a link (so not to /proc/self/fd/N): each copy is written into a
 * private directory (mode 0700) in $TMPDIR, opened and unlinked at once,
 * and the directory removed; only while one trace is being redacted does a
 * named file exist.  0, or -1 with err. */
int members_redact(struct members *ms, int all, const char *archive, struct frec_error *err);

/* Size and SHA-256 of every member's bytes into ms->m. */
int members_hash(struct members *ms, struct frec_error *err);

void members_free(struct members *ms);

#endif
