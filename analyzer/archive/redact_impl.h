/* The redactor's parts, shared by redact.c (tokens, the rules for one
 * string: a path, an environment entry, a command line), redact_records.c
 * (re-framing one record around its redacted strings) and redact_trace.c
 * (the copy of a whole file) and nothing else; everything else goes
 * through redact.h. */
#ifndef FLIGHTREC_REDACT_IMPL_H
#define FLIGHTREC_REDACT_IMPL_H

#include "redact.h"

#include <stddef.h>
#include <stdint.h>

/* What a token stands for: the letter in "<K:xxxxxxxx>", and the counter
 * it adds to. */
enum rd_kind {
	RD_HOST,    /* h: a host name (file header, MASTER_ADDR ...) */
	RD_CMDLINE, /* c: one command-line argument */
	RD_ENV,     /* e: an environment value */
	RD_PATH,    /* p: a path, or the directory part of one */
	RD_USER,    /* u: a user name (USER, LOGNAME) */
	RD_KINDS,
};

/* Ids of the distinct values seen, per counter: an open-addressing set of
 * 64-bit keyed hashes (0 marks a free slot). */
struct rd_seen {
	uint64_t *slots;
	size_t cap, count;
};

/* The counters of struct redact_counts, in its order. */
enum rd_counter { RD_N_CMDLINES, RD_N_ENV, RD_N_HOSTS, RD_N_PATHS, RD_N_USERS, RD_COUNTERS };

struct redactor {
	int all;
	uint8_t key[32];
	struct rd_seen seen[RD_COUNTERS];
	int oom; /* a distinct value could not be remembered: counts are low */
};

/* A growable byte buffer: one output record, one redacted string. */
struct rd_buf {
	uint8_t *p;
	size_t len, cap;
};

int rd_put(struct rd_buf *b, const void *data, size_t n);
int rd_zeros(struct rd_buf *b, size_t n);
void rd_buf_free(struct rd_buf *b);

/* Each appends the redacted form of the n bytes at s to out and returns 0,
 * or -1 out of memory.  s need not be NUL-terminated. */
int rd_token(struct redactor *r, enum rd_kind kind, const char *s, size_t n, struct rd_buf *out);
int rd_path(struct redactor *r, const char *s, size_t n, struct rd_buf *out);
/* "path: reason" of an attach record. */
int rd_attach_text(struct redactor *r, const char *s, size_t n, struct rd_buf *out);
/* One "KEY=VALUE" string. */
int rd_env(struct redactor *r, const char *s, size_t n, struct rd_buf *out);
/* n bytes of NUL-terminated argv (a process record's cmdline): every
 * argument a token, the NULs kept. */
int rd_argv(struct redactor *r, const char *s, size_t n, struct rd_buf *out);
/* The file header's argv, the recorder's own command line: its options
 * that explain the recording (--freq ...) stay, the rest are tokens. */
int rd_header_argv(struct redactor *r, const char *s, size_t n, struct rd_buf *out);
/* Counts a whole command line once (its arguments are tokens already). */
int rd_count_cmdline(struct redactor *r, const char *s, size_t n);

/* redact_records.c: the redacted copy of one record (size bytes at rec,
 * framed and checked by the reader) into out (replaced).  Types that hold
 * no secret are copied unchanged.  0, or -1 out of memory. */
int rd_record(struct redactor *r, const uint8_t *rec, uint32_t size, struct rd_buf *out);
/* 1 when the record type's strings are redacted (its layout must be the
 * one this build knows). */
int rd_record_redacted(uint16_t type, uint32_t *fixed_size);

#endif
