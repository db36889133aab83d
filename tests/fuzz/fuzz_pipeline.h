/* The decode pass of the trace at path with every model, then every stack
 * symbolized: what the fuzz targets that build a whole trace run before
 * the commands.  Returns a sum of the strings' lengths, for the caller to
 * keep (so nothing is optimized away); 0 when the trace does not open. */
#ifndef FLIGHTREC_FUZZ_PIPELINE_H
#define FLIGHTREC_FUZZ_PIPELINE_H

#include <stdint.h>

uint64_t fuzz_pipeline(const char *path);

#endif
