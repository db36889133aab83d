/* Opening files that traced processes name, as root, without letting them
 * choose what is opened.  A path read from /proc or from a perf record is
 * only a name: by the time the recorder opens it, the process may have put
 * a symbolic link, a FIFO or a device node there (opening /dev/watchdog
 * arms it; opening a FIFO blocks).  safe_open_regular resolves the name
 * without opening anything (O_PATH), accepts only a regular file, and then
 * opens that very inode through /proc/self/fd.  It does not decide whether
 * the file is the one a process mapped: dso_table.c compares identities. */
#ifndef FLIGHTREC_SAFE_OPEN_H
#define FLIGHTREC_SAFE_OPEN_H

#include <sys/stat.h>

/* Refuse symbolic links: every component where openat2 exists (Linux 5.6),
 * the last one only where it does not. */
#define SAFE_OPEN_NOFOLLOW 1u
/* dirfd is a process's root (/proc/PID/root): absolute links and ".."
 * resolve inside it (openat2 RESOLVE_IN_ROOT), not in the recorder's. */
#define SAFE_OPEN_IN_ROOT 2u

/* An O_RDONLY|O_CLOEXEC fd to the regular file path names (relative to
 * dirfd unless absolute; with SAFE_OPEN_IN_ROOT always relative), its
 * fstat in *st (may be NULL); -1 with errno otherwise: EINVAL when path
 * names something else than a regular file, ELOOP or EXDEV for a link
 * refused. */
int safe_open_regular(int dirfd, const char *path, unsigned flags, struct stat *st);

#endif
