/* GPU memory, as text and JSON: the layout of `memory`'s text and --json, over the
 * model's result; the command only asks for the model and picks one. */
#ifndef FLIGHTREC_OUT_MEMORY_H
#define FLIGHTREC_OUT_MEMORY_H

#include <stdio.h>

#include "model_mem.h"
#include "trace_set.h"

void out_memory_text(struct trace_set *ts, const struct mem_result *r, unsigned rows, FILE *out);
void out_memory_json(struct trace_set *ts, const struct mem_result *r, FILE *out);

#endif
