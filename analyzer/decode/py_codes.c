/* The Python code objects of one trace file (FR_REC_PYCODE; see
 * py_codes.h). */
#include "py_codes.h"
#include "hmap.h"

#include <stdlib.h>
#include <string.h>

struct py_table {
	struct py_code *codes;
	size_t n, cap;
	struct hmap latest; /* (pid, code) -> index of the latest record */
};

struct py_table *py_table_new(void)
{
	struct py_table *t = calloc(1, sizeof(*t));
	if (t)
		hmap_init(&t->latest);
	return t;
}

void py_table_free(struct py_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++) {
		free(t->codes[i].qualname);
		free(t->codes[i].filename);
		free(t->codes[i].linetable);
	}
	free(t->codes);
	hmap_free(&t->latest);
	free(t);
}

size_t py_table_count(const struct py_table *t)
{
	return t ? t->n : 0;
}

static char *printable_copy(const char *s, size_t len)
{
	char *out = malloc(len + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		out[i] = ch < 0x20 || ch == 0x7f || ch == ';' ? '?' : (char)ch;
	}
	out[len] = '\0';
	return out;
}

int py_table_add(struct py_table *t, uint32_t pid, uint64_t code, uint64_t seq,
		 uint16_t py_version, uint32_t firstlineno, const char *qualname,
		 size_t qualname_len, const char *filename, size_t filename_len,
		 const uint8_t *linetable, size_t linetable_len)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct py_code *grown = realloc(t->codes, cap * sizeof(*grown));
		if (!grown)
			return -1;
		t->codes = grown;
		t->cap = cap;
	}
	struct py_code c = {
		.pid = pid, .py_version = py_version, .code = code, .seq = seq,
		.firstlineno = firstlineno, .older = -1,
		.qualname = printable_copy(qualname, qualname_len),
		.filename = printable_copy(filename, filename_len),
		.linetable = malloc(linetable_len ? linetable_len : 1),
		.linetable_len = (uint32_t)linetable_len,
	};
	int created;
	uint64_t *slot = c.qualname && c.filename && c.linetable && linetable_len <= UINT32_MAX
		? hmap_slot(&t->latest, pid, code, &created) : NULL;
	if (!slot) {
		free(c.qualname);
		free(c.filename);
		free(c.linetable);
		return -1;
	}
	if (linetable_len)
		memcpy(c.linetable, linetable, linetable_len);
	if (!created)
		c.older = (int64_t)*slot;
	*slot = t->n;
	t->codes[t->n++] = c;
	return 0;
}

static const struct py_code *find_among(const struct py_table *t, uint64_t latest,
					 uint64_t seq, int32_t fingerprint)
{
	const struct py_code *after = NULL;
	for (int64_t k = (int64_t)latest; k >= 0 && (size_t)k < t->n; k = t->codes[k].older) {
		const struct py_code *c = &t->codes[k];
		if (fingerprint < 0 || (c->firstlineno & 0xffff) == (uint32_t)fingerprint) {
			if (c->seq <= seq)
				return c;
			after = c;
		}
		if (c->older >= k)
			break; /* never loops: older records have smaller indexes */
	}
	return after;
}

const struct py_code *py_table_find(const struct py_table *t, uint32_t pid, uint64_t code,
				    uint64_t seq, int32_t fingerprint)
{
	uint64_t i;
	if (!t || !hmap_get(&t->latest, pid, code, &i) || i >= t->n)
		return NULL;
	const struct py_code *c = fingerprint >= 0 ? find_among(t, i, seq, fingerprint) : NULL;
	return c ? c : find_among(t, i, seq, -1);
}

