/* Anonymous files: a regular, seekable file with no name anywhere, gone
 * when its last descriptor closes, so nothing is left behind even when the
 * process is killed.  The archive reader copies each trace member into one
 * (decode/ts_archive.c), the archive command each redacted copy
 * (commands/cmd_archive.c).  Not for files a user should see. */
#ifndef FLIGHTREC_ANON_FILE_H
#define FLIGHTREC_ANON_FILE_H

#include <stddef.h>

/* A new anonymous file open for reading and writing: O_TMPFILE in $TMPDIR
 * (default /tmp), else (no such directory, a file system without
 * O_TMPFILE) memfd_create.  The descriptor, or -1 with errno set. */
int anon_file_create(void);

/* Where anon_file_create puts its files, for messages: $TMPDIR or "/tmp". */
const char *anon_file_dir(void);

/* Writes all n bytes at the current offset, retrying short writes and
 * EINTR.  0, or -1 with errno (ENOSPC: the disk is full). */
int anon_file_write(int fd, const void *buf, size_t n);

#endif
