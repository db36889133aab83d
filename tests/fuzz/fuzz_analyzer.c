/* libFuzzer target for the whole analyzer: the input is one trace file, run
 * through everything flightrec-analyze does with a stranger's trace —
 * trace_set_open, every model of analyzer_models[], trace_set_run (decode,
 * dwarf unwinding, Python frame merging, each model's finish), the
 * symbolizer over every stack, then the commands' writers (info, check,
 * flame cpu/mem-inuse/mem-alloc folded, memory, cuda, stragglers, rdma,
 * dump, timeline, report, explain and diff) into a stream that discards
 * what it is given.
 * Sanitizers catch bad reads and leaks; -timeout and -rss_limit_mb catch
 * hangs and over-allocation.
 *
 * As in fuzz_reader.c, each input runs twice: as given, and with every CRC
 * repaired, or mutations would almost never get past the checksums into the
 * records the analyzer decodes. */
#include "commands.h"
#include "frec_crc32c.h"
#include "fuzz_input.h"
#include "fuzz_pipeline.h"
#include "frec_reader.h"
#include "model.h"
#include "symbolize.h"
#include "trace_set.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A FILE that accepts and drops everything: the writers run in full
 * without the cost of a real file. */
static volatile uint64_t sink;

static void commands(const char *path)
{
	FILE *null = fuzz_null_stream();
	if (!null)
		return;
	/* FUZZ_ANALYZER_VERBOSE=1: diagnostics to stderr, to see what an input
	 * does (replay one file with fuzz_analyzer_replay). */
	static int verbose = -1;
	if (verbose < 0)
		verbose = getenv("FUZZ_ANALYZER_VERBOSE") != NULL;
	FILE *errout = verbose ? stderr : null;
	char *p = (char *)path;
	char *info[] = { "info", p }, *info_json[] = { "info", "--json", p };
	char *check[] = { "check", p };
	char *flame_cpu[] = { "flame", p, "--kind", "cpu", "--format", "folded" };
	char *flame_inuse[] = { "flame", p, "--kind", "mem-inuse", "--format", "folded" };
	char *flame_alloc[] = { "flame", p, "--kind", "mem-alloc", "--format", "folded" };
	char *memory[] = { "memory", p, "--json" };
	char *cuda[] = { "cuda", p, "--json" };
	char *stragglers[] = { "stragglers", p, "--json" };
	char *rdma[] = { "rdma", p, "--json" };
	char *dump[] = { "dump", p };
	char *timeline[] = { "timeline", p, "-o", "-" };
	char *report[] = { "report", p, "-o", "-" };
	char *explain[] = { "explain", "main", p, "--json" };
	char *explain_text[] = { "explain", "forward", p };
	char *diff[] = { "diff", p, "--", p, "--json" };
#define RUN(cmd, argv) cmd((int)(sizeof(argv) / sizeof(argv[0])), argv, null, errout)
	RUN(cmd_info, info);
	RUN(cmd_info, info_json);
	RUN(cmd_check, check);
	RUN(cmd_flame, flame_cpu);
	RUN(cmd_flame, flame_inuse);
	RUN(cmd_flame, flame_alloc);
	RUN(cmd_memory, memory);
	RUN(cmd_cuda, cuda);
	RUN(cmd_stragglers, stragglers);
	RUN(cmd_rdma, rdma);
	RUN(cmd_dump, dump);
	RUN(cmd_timeline, timeline);
	RUN(cmd_report, report);
	RUN(cmd_explain, explain);
	RUN(cmd_explain, explain_text);
	RUN(cmd_diff, diff);
#undef RUN
	fflush(null);
}

static void analyze(const uint8_t *data, size_t size)
{
	int fd = fuzz_input_fd(data, size);
	if (fd < 0)
		return;
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	sink += fuzz_pipeline(path);
	commands(path);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	analyze(data, size);
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	fuzz_repair_crcs(copy, size);
	/* Unchanged when every CRC already held: no need to run it again. */
	if (memcmp(copy, data, size) != 0)
		analyze(copy, size);
	free(copy);
	return 0;
}
