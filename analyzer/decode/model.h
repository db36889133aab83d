/* The model interface: what every analysis (cpu profile, syscalls, and later
 * memory, cuda, stragglers, rdma) implements so the decoder can feed it
 * without knowing it.  A new analysis is a new model_*.c file plus one line
 * in analyzer_models[] (models.c).  Not for output formats: writers read a
 * model's result, never events. */
#ifndef FLIGHTREC_MODEL_H
#define FLIGHTREC_MODEL_H

#include <stddef.h> /* frec_error.h needs size_t */
#include <stdint.h>
#include "frec_error.h"
#include "events.h"

struct trace_set;

/* Options every model may read; each ignores what does not concern it. */
struct model_opts {
	int filter_pid;     /* nonzero: only events of pid */
	uint32_t pid;
};

struct model_ops {
	const char *name; /* "cpu", "syscalls" */
	void *(*create)(const struct model_opts *opts);
	/* One kernel event (type < 0x100) of file file_index.  The decoder has
	 * checked that rec->size covers the fixed part of every type it knows;
	 * the record may be longer (newer writer) and may be unaligned, so
	 * models memcpy it into a local struct.  Returns 0, or -1 when memory
	 * runs out. */
	int (*feed)(void *state, uint32_t file_index, const struct fr_rec_hdr *rec);
	/* After the pass over every file: resolve and build the result. */
	int (*finish)(void *state, struct trace_set *ts, struct frec_error *err);
	void (*destroy)(void *state);
};

/* Every model the analyzer knows, NULL-terminated. */
extern const struct model_ops *const analyzer_models[];
const struct model_ops *model_find(const char *name);

#endif
