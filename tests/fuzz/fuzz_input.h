/* Input handling the trace fuzz targets share: the input as a file descriptor,
 * and every CRC in it repaired.  Random mutations almost never keep a CRC
 * valid, so the targets run each input a second time repaired to get past
 * the checksums into decompression and record decoding. */
#ifndef FLIGHTREC_FUZZ_INPUT_H
#define FLIGHTREC_FUZZ_INPUT_H

#include "frec_reader.h"

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

/* An unlinked file (memfd, else /tmp) holding data; -1 on failure. */
int fuzz_input_fd(const uint8_t *data, size_t size);
/* Walks the input as the writer lays it out and recomputes the file header
 * CRC and each chunk's payload and header CRCs (bounded by the input). */
void fuzz_repair_crcs(uint8_t *d, size_t n);
/* A FILE that accepts and drops everything: the writers run in full
 * without the cost of a real file. */
FILE *fuzz_null_stream(void);

#endif
