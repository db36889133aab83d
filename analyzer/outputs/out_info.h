/* What a trace holds, as text and JSON: the layout of `info`'s text and --json, over the
 * model's result; the command only asks for the model and picks one. */
#ifndef FLIGHTREC_OUT_INFO_H
#define FLIGHTREC_OUT_INFO_H

#include <stdio.h>

#include "trace_set.h"

#define INFO_TOP_SYSCALLS 10

void out_info_text(struct trace_file *f, uint32_t file_index, const void *syscalls,
		      FILE *out);
void out_info_json(struct trace_file *f, uint32_t file_index, const void *syscalls,
		      FILE *out);

#endif
