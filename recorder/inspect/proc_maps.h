/* One line of /proc/PID/maps, parsed.  The kernel writes these lines, but
 * the path at the end is a file name the traced process chose: it may hold
 * spaces, look like another mapping, or be longer than any buffer.  The
 * parser is strict about the fields the kernel writes and takes the path
 * as the rest of the line, bounded by the line's length (no NUL needed).
 * Reading whole lines (getline, not a fixed buffer) is the caller's part:
 * a line cut at a buffer's end would make the rest of a crafted name parse
 * as a mapping of a file the process never mapped. */
#ifndef FLIGHTREC_PROC_MAPS_H
#define FLIGHTREC_PROC_MAPS_H

#include <stddef.h>
#include <stdint.h>

/* The longest path a mapping record carries (its path_len is 16 bits and
 * the recorder's buffers are PATH_MAX): longer ones are skipped whole,
 * never cut (a cut path names another file). */
#define PROC_MAPS_PATH_MAX 4095

struct proc_maps_entry {
	uint64_t start, end, offset;
	char perms[5];          /* "r-xp", NUL-terminated */
	uint32_t dev_major, dev_minor;
	uint64_t ino;
	const char *path;       /* into the line, not NUL-terminated; "" when anonymous */
	size_t path_len;
};

/* Parses line[0..len) (a trailing '\n' is allowed); 0, or -1 when it is not
 * a well-formed maps line, start > end, or the path is longer than
 * PROC_MAPS_PATH_MAX or holds a NUL. */
int proc_maps_parse_line(const char *line, size_t len, struct proc_maps_entry *out);

#endif
