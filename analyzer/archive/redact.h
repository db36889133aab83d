/* Redaction of trace files for `archive --redact`: a copy of a trace with
 * the secrets of the machine and the job replaced by stable tokens, and
 * everything the analyses need left as it was, so the copy gives the same
 * answers.  What is replaced, and what is not, is redact_help_text
 * (redact.c); how a record is re-framed is redact_records.c; the copy of
 * a whole file (reader to writer, END kept or left out) is
 * redact_trace.c.  Not for the archive's tar or manifest (the archive
 * command's own files). */
#ifndef FLIGHTREC_REDACT_H
#define FLIGHTREC_REDACT_H

#include <stdint.h>

#include "frec_error.h"

struct redactor;
/* all: also redact the behaviour-explaining settings (--redact-all). NULL when out of memory
 * (or when the system gives no random bytes for the secret).
 * Tokens are keyed with a random secret per redactor, so one archive's
 * files agree (same value -> same token) but tokens cannot be reversed by
 * hashing guesses. */
struct redactor *redactor_new(int all);
/* The same with a chosen secret, for tests that compare token text. */
struct redactor *redactor_new_keyed(int all, const uint8_t key[32]);
void redactor_free(struct redactor *r);
/* Writes a redacted copy of the trace at in_path (any path frec_open takes,
 * e.g. /proc/self/fd/N) to out_path (created, mode 0600 is fine), same
 * chunks, same records in the same order, events untouched. 0, or -1 with err. */
int redact_trace(struct redactor *r, const char *in_path, const char *out_path, struct frec_error *err);
/* The same into out_fd, an empty file open for writing at offset 0 (an
 * anonymous one: nothing named is ever written), which stays the caller's;
 * out_name is what errors call it. */
int redact_trace_fd(struct redactor *r, const char *in_path, int out_fd, const char *out_name,
		    struct frec_error *err);
/* Counts of what was replaced so far (for the archive's log line and the manifest):
 * distinct values, each counted once however often it occurs. */
struct redact_counts { uint64_t cmdlines, env_values, hosts, paths, users; };
void redactor_counts(const struct redactor *r, struct redact_counts *out);
/* One-paragraph text of exactly what is and is not redacted, for --help. */
extern const char redact_help_text[];

#endif
