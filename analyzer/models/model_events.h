/* The event stream model: every kernel event once, for the outputs that
 * show events one by one (SQLite's event tables, the timeline's slices).
 * It decodes what every such output needs the same way — the time on the
 * common clock (final before the first event: align.h), the duration, the
 * function's name from its family's descriptor, the canonical stack id —
 * and hands each event to its subscribers, in file order.  Outputs
 * subscribe instead of registering themselves with the decoder, so models
 * stay the only readers of the decoder's records.
 *
 * Not for analyses: a model that needs more than one event at a time reads
 * the decoder itself (model.h). */
#ifndef FLIGHTREC_MODEL_EVENTS_H
#define FLIGHTREC_MODEL_EVENTS_H

#include <stdint.h>
#include "model.h"
#include "fr_family.h"

extern const struct model_ops model_events_ops;

struct ev_item {
	uint32_t file;
	uint16_t type;                 /* enum fr_rec_type */
	const struct fr_family *family; /* NULL for a type this build lacks */
	uint32_t pid, tid;
	uint64_t ts_ns;                /* the file's CLOCK_MONOTONIC */
	int64_t start_ns;              /* on the common clock */
	uint64_t duration_ns;          /* 0 when the record has none */
	int func;                      /* the family's function id, -1 when none */
	const char *func_name;         /* NULL when none or unknown */
	uint32_t stack_id;             /* canonical; 0 when none */
	const struct fr_rec_hdr *rec;  /* the whole record: unaligned, memcpy it */
};

/* Returns nonzero to stop the pass (as out of memory would). */
typedef int (*ev_fn)(void *ctx, const struct ev_item *e);
/* Adds a subscriber (before trace_set_run) to the model ts runs; -1 when
 * memory runs out. */
struct trace_set;
int model_events_subscribe(void *state, struct trace_set *ts, ev_fn fn, void *ctx);

#endif
