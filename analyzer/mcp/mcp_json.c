/* The MCP server's JSON (mcp_json.h): recursive descent over a bounded
 * depth. */
#include "mcp_json.h"
#include "out_common.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct parser {
	const char *s;
	size_t len, at;
	char *err;
	size_t errlen;
	int failed;
};

static void fail(struct parser *p, const char *what)
{
	if (!p->failed)
		snprintf(p->err, p->errlen, "%s at byte %zu", what, p->at);
	p->failed = 1;
}

static void skip_ws(struct parser *p)
{
	while (p->at < p->len && (p->s[p->at] == ' ' || p->s[p->at] == '\t' || p->s[p->at] == '\n' ||
				  p->s[p->at] == '\r'))
		p->at++;
}

struct mj *mj_new(enum mj_type t)
{
	struct mj *v = calloc(1, sizeof(*v));
	if (v)
		v->type = t;
	return v;
}

void mj_free(struct mj *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n; i++) {
		mj_free(v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->str);
	free(v->raw);
	free(v);
}

static int push(struct mj *c, char *key, struct mj *v)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 8;
		struct mj **items = realloc(c->items, cap * sizeof(*items));
		if (!items)
			return -1;
		c->items = items;
		if (c->type == MJ_OBJ) {
			char **keys = realloc(c->keys, cap * sizeof(*keys));
			if (!keys)
				return -1;
			c->keys = keys;
		}
		c->cap = cap;
	}
	c->items[c->n] = v;
	if (c->type == MJ_OBJ)
		c->keys[c->n] = key;
	c->n++;
	return 0;
}

static void put_utf8(char *out, size_t *n, uint32_t cp)
{
	if (cp < 0x80) {
		out[(*n)++] = (char)cp;
	} else if (cp < 0x800) {
		out[(*n)++] = (char)(0xc0 | cp >> 6);
		out[(*n)++] = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		out[(*n)++] = (char)(0xe0 | cp >> 12);
		out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[(*n)++] = (char)(0x80 | (cp & 0x3f));
	} else {
		out[(*n)++] = (char)(0xf0 | cp >> 18);
		out[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
		out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[(*n)++] = (char)(0x80 | (cp & 0x3f));
	}
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	if (s[0] < 0x80)
		return 1;
	size_t k = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
	if (!k || k > n)
		return 0;
	for (size_t i = 1; i < k; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if (k == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0)))
		return 0; /* overlong, surrogate */
	if (k == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)))
		return 0;
	return k;
}

static int hex4(struct parser *p, uint32_t *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p->at < p->len ? p->s[p->at++] : 0;
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (d < 0)
			return -1;
		*v = *v << 4 | (uint32_t)d;
	}
	return 0;
}

static char *parse_string(struct parser *p, size_t *out_len)
{
	p->at++; /* the quote */
	size_t start = p->at, cap = 16;
	(void)start;
	char *out = malloc(cap);
	size_t n = 0;
	if (!out) {
		fail(p, "out of memory");
		return NULL;
	}
	while (!p->failed) {
		if (p->at >= p->len) {
			fail(p, "unterminated string");
			break;
		}
		if (n + 8 > cap) {
			char *grown = realloc(out, cap *= 2);
			if (!grown) {
				fail(p, "out of memory");
				break;
			}
			out = grown;
		}
		unsigned char c = (unsigned char)p->s[p->at];
		if (c == '"') {
			p->at++;
			out[n] = '\0';
			*out_len = n;
			return out;
		}
		if (c < 0x20) {
			fail(p, "control character in string");
			break;
		}
		if (c == '\\') {
			p->at++;
			char e = p->at < p->len ? p->s[p->at++] : 0;
			const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
			const char *k = e ? strchr(from, e) : NULL;
			if (k) {
				out[n++] = to[k - from];
				continue;
			}
			uint32_t cp, lo;
			if (e != 'u' || hex4(p, &cp)) {
				fail(p, "bad escape");
				break;
			}
			if (cp >= 0xd800 && cp < 0xdc00) {
				if (p->at + 1 >= p->len || p->s[p->at] != '\\' || p->s[p->at + 1] != 'u') {
					fail(p, "lone surrogate");
					break;
				}
				p->at += 2;
				if (hex4(p, &lo) || lo < 0xdc00 || lo > 0xdfff) {
					fail(p, "lone surrogate");
					break;
				}
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			} else if (cp >= 0xdc00 && cp < 0xe000) {
				fail(p, "lone surrogate");
				break;
			}
			put_utf8(out, &n, cp);
			continue;
		}
		size_t k = utf8_len((const unsigned char *)p->s + p->at, p->len - p->at);
		if (!k) {
			fail(p, "invalid UTF-8");
			break;
		}
		memcpy(out + n, p->s + p->at, k);
		n += k;
		p->at += k;
	}
	free(out);
	return NULL;
}

static struct mj *parse_value(struct parser *p, int depth);

static struct mj *parse_container(struct parser *p, int depth, int obj)
{
	struct mj *c = mj_new(obj ? MJ_OBJ : MJ_ARR);
	if (!c) {
		fail(p, "out of memory");
		return NULL;
	}
	p->at++;
	skip_ws(p);
	if (p->at < p->len && p->s[p->at] == (obj ? '}' : ']')) {
		p->at++;
		return c;
	}
	while (!p->failed) {
		char *key = NULL;
		if (obj) {
			skip_ws(p);
			size_t klen;
			if (p->at >= p->len || p->s[p->at] != '"' || !(key = parse_string(p, &klen))) {
				fail(p, "expected a key");
				break;
			}
			if (mj_get(c, key)) {
				free(key);
				fail(p, "duplicate key");
				break;
			}
			skip_ws(p);
			if (p->at >= p->len || p->s[p->at] != ':') {
				free(key);
				fail(p, "expected ':'");
				break;
			}
			p->at++;
		}
		struct mj *v = parse_value(p, depth + 1);
		if (!v || push(c, key, v)) {
			free(key);
			mj_free(v);
			fail(p, "out of memory");
			break;
		}
		skip_ws(p);
		char ch = p->at < p->len ? p->s[p->at] : 0;
		p->at++;
		if (ch == ',')
			continue;
		if (ch == (obj ? '}' : ']'))
			return c;
		p->at--;
		fail(p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
	}
	mj_free(c);
	return NULL;
}

static struct mj *parse_value(struct parser *p, int depth)
{
	if (depth > MJ_MAX_DEPTH) {
		fail(p, "nested too deeply");
		return NULL;
	}
	skip_ws(p);
	if (p->at >= p->len) {
		fail(p, "unexpected end");
		return NULL;
	}
	char c = p->s[p->at];
	if (c == '{' || c == '[')
		return parse_container(p, depth, c == '{');
	if (c == '"') {
		struct mj *v = mj_new(MJ_STR);
		if (!v || !(v->str = parse_string(p, &v->len))) {
			mj_free(v);
			fail(p, "bad string");
			return NULL;
		}
		return v;
	}
	static const struct { const char *word; enum mj_type t; int b; } words[] = {
		{ "true", MJ_BOOL, 1 }, { "false", MJ_BOOL, 0 }, { "null", MJ_NULL, 0 },
	};
	for (size_t i = 0; i < 3; i++) {
		size_t n = strlen(words[i].word);
		if (p->len - p->at >= n && !memcmp(p->s + p->at, words[i].word, n)) {
			p->at += n;
			struct mj *v = mj_new(words[i].t);
			if (!v)
				fail(p, "out of memory");
			else
				v->boolean = words[i].b;
			return v;
		}
	}
	size_t start = p->at;
	if (p->s[p->at] == '-')
		p->at++;
	size_t digits = p->at;
	while (p->at < p->len && p->s[p->at] >= '0' && p->s[p->at] <= '9')
		p->at++;
	if (p->at == digits || (p->s[digits] == '0' && p->at - digits > 1)) {
		p->at = start;
		fail(p, "unexpected character");
		return NULL;
	}
	if (p->at < p->len && p->s[p->at] == '.') {
		size_t f = ++p->at;
		while (p->at < p->len && p->s[p->at] >= '0' && p->s[p->at] <= '9')
			p->at++;
		if (p->at == f) {
			fail(p, "bad number");
			return NULL;
		}
	}
	if (p->at < p->len && (p->s[p->at] == 'e' || p->s[p->at] == 'E')) {
		p->at++;
		if (p->at < p->len && (p->s[p->at] == '+' || p->s[p->at] == '-'))
			p->at++;
		size_t e = p->at;
		while (p->at < p->len && p->s[p->at] >= '0' && p->s[p->at] <= '9')
			p->at++;
		if (p->at == e) {
			fail(p, "bad number");
			return NULL;
		}
	}
	struct mj *v = mj_new(MJ_NUM);
	size_t n = p->at - start;
	if (!v || !(v->raw = malloc(n + 1))) {
		mj_free(v);
		fail(p, "out of memory");
		return NULL;
	}
	memcpy(v->raw, p->s + start, n);
	v->raw[n] = '\0';
	v->num = strtod(v->raw, NULL);
	return v;
}

struct mj *mj_parse(const char *s, size_t len, char *err, size_t errlen)
{
	struct parser p = { .s = s, .len = len, .err = err, .errlen = errlen };
	struct mj *v = parse_value(&p, 0);
	skip_ws(&p);
	if (v && p.at != len) {
		fail(&p, "trailing characters");
		mj_free(v);
		return NULL;
	}
	return p.failed ? (mj_free(v), NULL) : v;
}

const struct mj *mj_get(const struct mj *obj, const char *key)
{
	if (!obj || obj->type != MJ_OBJ)
		return NULL;
	for (size_t i = 0; i < obj->n; i++)
		if (!strcmp(obj->keys[i], key))
			return obj->items[i];
	return NULL;
}

const char *mj_str(const struct mj *obj, const char *key)
{
	const struct mj *v = mj_get(obj, key);
	return v && v->type == MJ_STR ? v->str : NULL;
}

struct mj *mj_string(const char *s)
{
	struct mj *v = mj_new(MJ_STR);
	if (v && !(v->str = strdup(s))) {
		free(v);
		return NULL;
	}
	if (v)
		v->len = strlen(s);
	return v;
}

struct mj *mj_number(double x)
{
	struct mj *v = mj_new(MJ_NUM);
	char buf[64];
	if (isfinite(x) && x == floor(x) && fabs(x) < 9e15)
		snprintf(buf, sizeof(buf), "%.0f", x);
	else
		snprintf(buf, sizeof(buf), "%.6g", isfinite(x) ? x : 0);
	if (v && !(v->raw = strdup(buf))) {
		free(v);
		return NULL;
	}
	if (v)
		v->num = x;
	return v;
}

struct mj *mj_add(struct mj *c, const char *key, struct mj *v)
{
	char *k = NULL;
	if (!c || !v || (key && !(k = strdup(key))) || push(c, k, v)) {
		free(k);
		mj_free(v);
		mj_free(c);
		return NULL;
	}
	return c;
}

void mj_write(FILE *out, const struct mj *v)
{
	switch (v->type) {
	case MJ_NULL: fputs("null", out); break;
	case MJ_BOOL: fputs(v->boolean ? "true" : "false", out); break;
	case MJ_NUM: fputs(v->raw ? v->raw : "0", out); break;
	case MJ_STR: out_json_str(out, v->str); break; /* a NUL ends it: never served */
	case MJ_ARR:
	case MJ_OBJ:
		fputc(v->type == MJ_OBJ ? '{' : '[', out);
		for (size_t i = 0; i < v->n; i++) {
			if (i)
				fputc(',', out);
			if (v->type == MJ_OBJ) {
				out_json_str(out, v->keys[i]);
				fputc(':', out);
			}
			mj_write(out, v->items[i]);
		}
		fputc(v->type == MJ_OBJ ? '}' : ']', out);
		break;
	}
}
