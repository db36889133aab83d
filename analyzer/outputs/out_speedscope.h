/* A stack profile as speedscope's file format (www.speedscope.app/
 * file-format-schema.json): one sampled profile per process (file, pid),
 * each stack root first with its weight in the profile's unit
 * (nanoseconds, bytes), the frames shared.  Frame names are the ones
 * every flame output shows. */
#ifndef FLIGHTREC_OUT_SPEEDSCOPE_H
#define FLIGHTREC_OUT_SPEEDSCOPE_H

#include <stdio.h>

struct stack_profile;
struct trace_set;
struct py_hide;

struct speedscope_opts {
	const struct stack_profile *prof; /* sorted */
	struct trace_set *ts;
	const char *name;                 /* the file's name: the graph's title */
	const struct py_hide *hide;       /* non-NULL: py_hide_mask each stack */
};

/* 0, or -ENOMEM / -EIO. */
int out_speedscope_write(const struct speedscope_opts *o, FILE *out);

#endif
