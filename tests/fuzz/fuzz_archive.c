/* libFuzzer target for the archive reader (decode/ts_archive.c): the input
 * is one file given where a command takes FILE — a tar, tar.gz or tar.zst
 * of traces, or anything else — run through trace_set_open (the magic-byte
 * test, the walk over the members with their checks, the bounded copies
 * into anonymous files, each member opened as a trace), trace_set_run and
 * trace_set_reopen, then the commands info, info --json and check on it.
 * FLIGHTREC_ARCHIVE_MAX_MEMBER_MB is 4 so that a small input that
 * decompresses to a lot stops at the cap quickly.  Sanitizers catch bad
 * reads and leaks; -timeout and -rss_limit_mb catch hangs and
 * over-allocation.  The members' traces get no CRC repair: fuzz_analyzer
 * fuzzes the traces, this target the archive around them. */
#include "commands.h"
#include "fuzz_input.h"
#include "trace_set.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

static void open_twice(const char *path)
{
	struct trace_set *ts = NULL, *again = NULL;
	struct frec_error err = { .offset = -1 };
	if (trace_set_open(&path, 1, &ts, &err))
		return;
	for (size_t i = 0; i < trace_set_warning_count(ts); i++)
		sink += trace_set_warning(ts, i)[0];
	if (!trace_set_run(ts, &err) && !trace_set_reopen(ts, &again, &err))
		sink += trace_set_count(again);
	trace_set_free(again);
	trace_set_free(ts);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	setenv("FLIGHTREC_ARCHIVE_MAX_MEMBER_MB", "4", 1);
	int fd = fuzz_input_fd(data, size);
	FILE *null = fuzz_null_stream();
	if (fd < 0 || !null) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	open_twice(path);
	FILE *errout = getenv("FUZZ_ARCHIVE_VERBOSE") ? stderr : null;
	char *info[] = { "info", path }, *info_json[] = { "info", "--json", path };
	char *check[] = { "check", path };
	cmd_info(2, info, null, errout);
	cmd_info(3, info_json, null, errout);
	cmd_check(2, check, null, errout);
	fflush(null);
	close(fd);
	return 0;
}
