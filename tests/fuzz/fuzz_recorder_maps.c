/* libFuzzer target: the recorder's /proc/PID/maps line parser
 * (recorder/inspect/proc_maps.c).  The kernel writes the fields, but the path at
 * the end is a name the traced process chose.  Each input is a maps file:
 * split into lines as the recorder reads them (getline) and parsed; the
 * checks catch a path that leaves its line or a range that runs backwards. */
#include "inspect/proc_maps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
		/* a copy of exactly the line: ASan reports any read past it */
		char *line = malloc(len ? len : 1);
		if (!line)
			return 0;
		memcpy(line, p, len);
		struct proc_maps_entry e;
		if (proc_maps_parse_line(line, len, &e) == 0) {
			if (e.start > e.end || e.path_len > PROC_MAPS_PATH_MAX ||
			    e.path < line || e.path + e.path_len > line + len ||
			    memchr(e.path, '\n', e.path_len) || memchr(e.path, 0, e.path_len) ||
			    strnlen(e.perms, sizeof(e.perms)) != 4) {
				fprintf(stderr, "fuzz_recorder_maps: bad entry\n");
				abort();
			}
		}
		free(line);
		p += len;
	}
	return 0;
}
