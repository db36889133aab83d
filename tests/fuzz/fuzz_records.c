/* libFuzzer target for the record decoders: the input is a list of records
 * (fuzz_trace.h), written into a valid trace, so every mutation reaches a
 * record's fields instead of the framing and checksums the reader guards
 * (fuzz_reader and fuzz_analyzer fuzz those).  Runs the decode pipeline with
 * every model (metadata pass, align, events pass, dwarf unwinding of
 * USTACK records against UNWIND images, Python frames from PYCODE line
 * tables, each model's finish), symbolizes every stack (DSO symbol tables,
 * demangling), then `dump` (every record's fields by the schema),
 * `info --json`, `info` and `check`.  Besides the sanitizers, the outputs
 * are checked (fuzz_check.h): dump is JSON Lines, info --json is JSON, the
 * text has no control characters a terminal would act on. */
#include "commands.h"
#include "fuzz_check.h"
#include "fuzz_input.h"
#include "fuzz_pipeline.h"
#include "fuzz_trace.h"
#include "model.h"
#include "symbolize.h"
#include "trace_set.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

typedef int (*cmd_fn)(int, char **, FILE *, FILE *);

enum oracle { JSON, JSONL, TEXT };

/* Runs one command into memory and applies its oracle to what it wrote. */
static void run(cmd_fn cmd, int argc, char **argv, enum oracle oracle)
{
	static int verbose = -1;
	if (verbose < 0)
		verbose = getenv("FUZZ_VERBOSE") != NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	if (!out)
		return;
	int rc = cmd(argc, argv, out, verbose ? stderr : fuzz_null_stream());
	fclose(out);
	char what[64];
	snprintf(what, sizeof(what), "%s%s", argv[0], argc > 2 ? " (with options)" : "");
	/* a command that failed may have stopped in the middle of its output */
	if (oracle == TEXT)
		fuzz_check_text(buf, len, what);
	else if (oracle == JSONL)
		fuzz_check_jsonl(buf, len, what);
	else if (rc == 0 && len)
		fuzz_check_json(buf, len, what);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = fuzz_trace_build(data, size);
	if (fd < 0)
		return 0;
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	sink += fuzz_pipeline(path);
	char *dump[] = { "dump", path };
	char *info_json[] = { "info", "--json", path };
	char *info[] = { "info", path };
	char *check[] = { "check", path };
	run(cmd_dump, 2, dump, JSONL);
	run(cmd_info, 3, info_json, JSON);
	run(cmd_info, 2, info, TEXT);
	run(cmd_check, 2, check, TEXT);
	close(fd);
	return 0;
}
