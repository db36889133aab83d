/* One entry of a trace's schema: name, fixed size and field list of a record
 * type.  The writer puts the table it is given (frec_writer_opts.schema; the
 * recorder's is bpf/families/records.c) in the SCHEMA chunk of every file
 * (format/SPEC.md section 6) so an older analyzer can name, and skip,
 * record types it does not know. */
#ifndef FLIGHTREC_SCHEMA_H
#define FLIGHTREC_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

struct frec_schema_entry {
	uint16_t rec_type;   /* enum fr_rec_type */
	uint16_t version;    /* bumped when fields are appended */
	uint32_t fixed_size; /* sizeof the struct, fr_rec_hdr included */
	const char *name;    /* < 24 chars */
	const char *desc;    /* "field:type,..." after the fr_rec_hdr */
};

#endif
