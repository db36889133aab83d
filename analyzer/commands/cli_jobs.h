/* `--jobs N`, the option of the commands that read many trace files
 * (stragglers, report, sqlite): how many threads decompress the files
 * ahead of the pass (trace_set_set_jobs).  Taken out of argv before the
 * command parses the rest, so each command's own parser stays as it is.
 * Not for anything the threads do (decode/ts_prefetch.c). */
#ifndef FLIGHTREC_CLI_JOBS_H
#define FLIGHTREC_CLI_JOBS_H

#include <stdio.h>

/* The default: the CPUs online, at most CLI_JOBS_DEFAULT_MAX. */
#define CLI_JOBS_DEFAULT_MAX 8
#define CLI_JOBS_MAX 256
unsigned cli_default_jobs(void);

/* The help text's line for --jobs. */
#define CLI_JOBS_HELP \
	"  --jobs N             threads that read and decompress the files ahead of\n" \
	"                       the analysis (default: the CPUs, at most 8; 1: none);\n" \
	"                       the output is the same for every N\n"

/* Removes every "--jobs N" / "--jobs=N" before "--" from argv (*argc
 * lowered), the last one setting *jobs (else the default).  0, or
 * CLI_USAGE after a one-line message. */
int cli_take_jobs(int *argc, char **argv, const char *cmd, unsigned *jobs, FILE *errout);

#endif
