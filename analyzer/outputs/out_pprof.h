/* A stack profile as pprof's profile.proto (github.com/google/pprof,
 * proto/profile.proto), gzip'd: what `go tool pprof`, Pyroscope, Parca and
 * speedscope read.  Functions carry the names every flame output shows
 * (so `go tool pprof -raw` lists the same stacks as `flame --format
 * folded`), locations the addresses and mappings the file, offsets and
 * build id of the code; samples carry pid, thread, process, rank and host
 * as string labels (a number label 0 would be dropped by pprof's reader,
 * and Pyroscope refuses keys that are not Prometheus label names). */
#ifndef FLIGHTREC_OUT_PPROF_H
#define FLIGHTREC_OUT_PPROF_H

#include <stdint.h>
#include <stdio.h>

struct stack_profile;
struct trace_set;
struct py_hide;

struct pprof_opts {
	const struct stack_profile *prof; /* sorted (stack_profile_sort) */
	struct trace_set *ts;             /* after trace_set_run */
	const char *comment;              /* NULL: none; e.g. the graph's title */
	const struct py_hide *hide;       /* non-NULL: py_hide_mask each stack */
};

/* 0, or -ENOMEM / -EIO (the stream's error). */
int out_pprof_write(const struct pprof_opts *o, FILE *out);

#endif
