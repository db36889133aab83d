/* The fields of a record type, parsed from its schema description
 * ("name:type,..."; types u8 u16 u32 u64 s32 s64, T[N] arrays, char[N]
 * strings and a trailing var part): names, offsets and sizes, so a generic
 * printer (the analyzer's dump) and the layout checks of the tests read
 * every record type from its descriptor alone. */
#ifndef FLIGHTREC_FR_FIELDS_H
#define FLIGHTREC_FR_FIELDS_H

#include <stddef.h>
#include <stdint.h>

enum fr_field_kind {
	FR_FIELD_UNSIGNED,
	FR_FIELD_SIGNED,
	FR_FIELD_CHARS,   /* char[N]: a NUL-padded string */
	FR_FIELD_BYTES,   /* u8[N] */
	FR_FIELD_ARRAY,   /* u16/u32/u64[N] */
	FR_FIELD_VAR,     /* the variable part after the fixed one */
};

struct fr_field {
	char name[24];
	enum fr_field_kind kind;
	uint32_t offset;  /* from the start of the record (header included) */
	uint32_t size;    /* bytes of the whole field (0 for var) */
	uint32_t elem;    /* bytes of one element */
};

#define FR_FIELDS_MAX 48

/* Parses desc; fields start after the 8-byte record header.  Returns the
 * number of fields, or -1 when desc is malformed or has more than max. */
int fr_fields_parse(const char *desc, struct fr_field *out, size_t max);
/* The field named name, or NULL. */
const struct fr_field *fr_field_find(const struct fr_field *f, int n, const char *name);
/* The value of an integer field of rec (little-endian, read with memcpy). */
uint64_t fr_field_u64(const void *rec, const struct fr_field *f);
int64_t fr_field_s64(const void *rec, const struct fr_field *f);

#endif
