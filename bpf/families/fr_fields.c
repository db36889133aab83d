/* Parsing schema descriptions into field layouts (see fr_fields.h). */
#include "fr_fields.h"

#include <stdlib.h>
#include <string.h>

static int scalar(const char *t, size_t len, enum fr_field_kind *kind, uint32_t *size)
{
	static const struct { const char *name; enum fr_field_kind kind; uint32_t size; } types[] = {
		{ "u8", FR_FIELD_UNSIGNED, 1 },  { "u16", FR_FIELD_UNSIGNED, 2 },
		{ "u32", FR_FIELD_UNSIGNED, 4 }, { "u64", FR_FIELD_UNSIGNED, 8 },
		{ "s8", FR_FIELD_SIGNED, 1 },    { "s16", FR_FIELD_SIGNED, 2 },
		{ "s32", FR_FIELD_SIGNED, 4 },   { "s64", FR_FIELD_SIGNED, 8 },
		{ "char", FR_FIELD_CHARS, 1 },
	};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strlen(types[i].name) == len && !memcmp(types[i].name, t, len)) {
			*kind = types[i].kind;
			*size = types[i].size;
			return 0;
		}
	return -1;
}

int fr_fields_parse(const char *desc, struct fr_field *out, size_t max)
{
	uint32_t off = 8;
	size_t n = 0;
	const char *p = desc;
	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *colon = memchr(p, ':', len);
		if (!colon || colon == p || n == max || (size_t)(colon - p) >= sizeof(out[0].name))
			return -1;
		struct fr_field *f = &out[n];
		memset(f, 0, sizeof(*f));
		memcpy(f->name, p, (size_t)(colon - p));
		const char *t = colon + 1;
		size_t tlen = len - (size_t)(t - p);
		const char *br = memchr(t, '[', tlen);
		if (tlen == 3 && !memcmp(t, "var", 3)) {
			if (end)
				return -1; /* the variable part comes last */
			f->kind = FR_FIELD_VAR;
			f->offset = off;
		} else {
			if (scalar(t, br ? (size_t)(br - t) : tlen, &f->kind, &f->elem))
				return -1;
			uint32_t count = 1;
			if (br) {
				char *stop;
				unsigned long c = strtoul(br + 1, &stop, 10);
				if (stop != t + tlen - 1 || *stop != ']' || c == 0 || c > 4096)
					return -1;
				count = (uint32_t)c;
				if (f->kind != FR_FIELD_CHARS)
					f->kind = f->elem == 1 ? FR_FIELD_BYTES : FR_FIELD_ARRAY;
			} else if (f->kind == FR_FIELD_CHARS) {
				return -1;
			}
			f->offset = off;
			f->size = f->elem * count;
			off += f->size;
		}
		n++;
		p = end ? end + 1 : NULL;
	}
	return (int)n;
}

const struct fr_field *fr_field_find(const struct fr_field *f, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(f[i].name, name))
			return &f[i];
	return NULL;
}

uint64_t fr_field_u64(const void *rec, const struct fr_field *f)
{
	uint64_t v = 0;
	if (f->size <= 8)
		memcpy(&v, (const uint8_t *)rec + f->offset, f->size); /* little-endian */
	return v;
}

int64_t fr_field_s64(const void *rec, const struct fr_field *f)
{
	uint64_t v = fr_field_u64(rec, f);
	if (f->size && f->size < 8 && (v >> (f->size * 8 - 1)) & 1)
		v |= ~0ull << (f->size * 8); /* sign-extend */
	return (int64_t)v;
}
