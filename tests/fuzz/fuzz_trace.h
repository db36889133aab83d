/* Structured inputs for the record-level fuzz targets (fuzz_records,
 * fuzz_outputs): the input is not a trace file but a list of records, and
 * fuzz_trace_build writes them into a valid trace (file header, chunks,
 * CRCs, SCHEMA, INDEX, END) with the format's own writer, so every mutation
 * lands in a record's fields or strings instead of in framing the reader
 * rejects.  fuzz_reader and fuzz_analyzer fuzz the framing.
 *
 * Layout (little endian):
 *   u64 start_mono_ns, u64 start_real_ns
 *   u16 n, then n bytes: host NUL argv[0] NUL argv[1] ... (the file header's
 *       host and command line; a missing host is "fuzz")
 *   records, each: u8 sel, u8 flags, u16 len, len bytes of the record after
 *       its fr_rec_hdr (zero padded to 8).  The type is fuzz_trace_type(sel);
 *       flags bit 0: a META chunk (else EVENTS), bit 1: seal the chunk after
 *       it, bits 2-7: the record header's flags.  A last record cut short
 *       keeps the bytes there are.
 * make_record_seeds writes real traces in this layout. */
#ifndef FLIGHTREC_FUZZ_TRACE_H
#define FLIGHTREC_FUZZ_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define FUZZ_TRACE_META 1
#define FUZZ_TRACE_FLUSH 2

/* The record type of selector sel: every type the schema table names, the
 * metadata types, and two no reader knows. */
uint16_t fuzz_trace_type(uint8_t sel);
/* The selector of type, or -1 when it has none. */
int fuzz_trace_sel(uint16_t type);

/* The trace of data as an anonymous file (offset 0), or -1 when the input
 * is too short or the writer fails. */
int fuzz_trace_build(const uint8_t *data, size_t size);

#endif
