/* Trace archives as inputs of a trace set: trace_set_open hands every path
 * to ts_inputs_expand, which passes a trace file through and expands an
 * archive (what `flightrec-analyze archive` writes, or any tar of traces)
 * into its members.  Each member whose name ends in .frec is copied
 * straight from the compressed stream into an anonymous file (util/
 * anon_file.h: O_TMPFILE in $TMPDIR, else a memfd) and read from there as
 * a seekable trace named ARCHIVE:MEMBER in every message.  Nothing is ever
 * written under a member's name, so names cannot reach outside, and
 * nothing is left behind, even after SIGKILL.  A command that reads a trace
 * twice (report's memory snapshots, dump's event pass) re-reads that
 * anonymous copy (trace_set_reopen, trace_file_fd), never the compressed
 * stream.
 *
 * Accepted: tar (ustar, pax, GNU), plain or compressed with gzip or zstd,
 * recognised by their magic bytes; other archive or compression formats
 * (zip, 7z, xz, bzip2, lz4) are refused with one line naming the format.
 * Only libarchive's own gzip and zstd decoders are enabled: no external
 * decompression program is ever run on a stranger's file.
 *
 * Archives come from strangers.  Members that are not regular files (hard
 * and symbolic links, devices, fifos, sockets), names that are absolute, climb
 * out with "..", carry control characters or repeat an earlier member's name,
 * and regular files not named *.frec are skipped with a warning (at most
 * TS_ARCHIVE_MAX_WARNINGS lines per archive; the rest are counted in one
 * more); MANIFEST.json and directories are skipped silently.  Fatal, with
 * one error line naming the archive and the member: more than
 * TS_ARCHIVE_MAX_MEMBERS members, a member over the size cap, a truncated or
 * corrupt stream, an anonymous file that cannot be written (disk full), an
 * archive without a trace.
 *
 * Not for writing archives (archive/bundle_write.c) nor for the manifest
 * (archive/manifest.c): the reader trusts no manifest and needs none. */
#ifndef FLIGHTREC_TS_ARCHIVE_H
#define FLIGHTREC_TS_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>
#include "frec_error.h"

/* Members (of every kind, skipped ones included) one archive may hold. */
#define TS_ARCHIVE_MAX_MEMBERS 4096
/* What one member may decompress to, in MiB, unless
 * FLIGHTREC_ARCHIVE_MAX_MEMBER_MB says otherwise (16 GiB). */
#define TS_ARCHIVE_DEFAULT_MAX_MEMBER_MB 16384
#define TS_ARCHIVE_ENV_MAX_MEMBER_MB "FLIGHTREC_ARCHIVE_MAX_MEMBER_MB"
/* Warning lines about skipped members, per archive. */
#define TS_ARCHIVE_MAX_WARNINGS 10
/* The limits as text, for help texts: TS_ARCHIVE_STR(TS_ARCHIVE_MAX_MEMBERS) */
#define TS_ARCHIVE_STR_(x) #x
#define TS_ARCHIVE_STR(x) TS_ARCHIVE_STR_(x)

/* One input of a trace set, archives expanded. */
struct ts_input {
	char *name;        /* what messages call it: PATH, or ARCHIVE:MEMBER */
	size_t member_at;  /* where MEMBER starts in name; 0 for a trace file */
	int fd;            /* the member's anonymous copy (owned), or -1: open name */
};

struct ts_inputs {
	struct ts_input *v;
	size_t n, cap;
	char **warnings;   /* one line each: "ARCHIVE: MEMBER: skipped: ..." */
	size_t n_warnings, cap_warnings;
};

/* The inputs paths[0..n) stand for, in order: a trace file (or anything
 * that is not an archive: frec_open judges it) as itself, an archive as its
 * .frec members in archive order.  0, or -1 with err naming the archive
 * (where) and the member (start of what); *in is then empty. */
int ts_inputs_expand(const char *const *paths, size_t n, struct ts_inputs *in,
		     struct frec_error *err);

/* Appends one input; name is copied, fd (may be -1) is owned from now on
 * (closed on failure).  0, or -1 when memory runs out. */
int ts_inputs_add(struct ts_inputs *in, const char *name, size_t member_at, int fd);

/* Closes the descriptors still owned and frees everything. */
void ts_inputs_free(struct ts_inputs *in);

/* The member cap in bytes: FLIGHTREC_ARCHIVE_MAX_MEMBER_MB MiB, or the
 * default.  0, or -1 with err saying the variable's value is not a number
 * of MiB. */
int ts_archive_max_member_bytes(uint64_t *bytes, struct frec_error *err);

#endif
