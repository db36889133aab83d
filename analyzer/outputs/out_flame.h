/* The `flame` command's output: a graph's title and subtitle from what the
 * model found, the notes a reader needs beside it, and the graph in the
 * format asked for (folded, svg, html from the flame tree; pprof and
 * speedscope from the stack profile), to a file or a stream.  Not the
 * command's options (cmd_flame.c) nor the renderers (flame_render.c,
 * out_pprof.c, out_speedscope.c). */
#ifndef FLIGHTREC_OUT_FLAME_H
#define FLIGHTREC_OUT_FLAME_H

#include <stdint.h>
#include <stdio.h>

struct trace_set;
struct model_cpu_result;
struct mem_result;
struct call_time_result;

/* What the command was asked. */
struct flame_request {
	const char *kind;     /* cpu, mem-inuse, mem-alloc, cuda, syscalls */
	const char *format;   /* folded, svg, html, pprof, speedscope */
	const char *output;   /* NULL or "-": the stream */
	int filter_pid;
	uint32_t pid;
	const char *at;       /* mem-inuse: as given; NULL: the peak */
	int at_time;
	uint64_t at_ns;
	int hide_interpreter; /* py_hide.h */
};

/* Nonzero when format needs the models' stack profile (model_opts.profile). */
int out_flame_wants_profile(const char *format);

/* Each writes the graph and returns 0, or -1 after saying why on errout. */
int out_flame_cpu(const struct flame_request *q, const struct model_cpu_result *r,
		  struct trace_set *ts, FILE *out, FILE *errout);
int out_flame_mem(const struct flame_request *q, const struct mem_result *r,
		  struct trace_set *ts, FILE *out, FILE *errout);
int out_flame_calls(const struct flame_request *q, const struct call_time_result *r,
		    struct trace_set *ts, FILE *out, FILE *errout);

#endif
