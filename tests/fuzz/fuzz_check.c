/* Output oracles of the fuzz targets; see fuzz_check.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fuzz_check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct js {
	const unsigned char *p, *end, *start;
	int depth;
};

static void fail(const char *what, const char *why, const char *s, size_t n, size_t at)
{
	size_t from = at > 60 ? at - 60 : 0, to = at + 60 < n ? at + 60 : n;
	fprintf(stderr, "fuzz check failed: %s: %s at byte %zu of %zu, around: ", what, why,
		at, n);
	for (size_t i = from; i < to; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f)
			fputc(c, stderr);
		else
			fprintf(stderr, "\\x%02x", c);
	}
	fputc('\n', stderr);
	abort();
}

static void ws(struct js *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

/* length of one valid UTF-8 sequence at p, 0 when invalid */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
	unsigned char c = p[0];
	size_t n;
	uint32_t cp;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	if ((size_t)(end - p) < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

static const char *string(struct js *j)
{
	j->p++; /* opening quote */
	while (j->p < j->end) {
		unsigned char c = *j->p;
		if (c == '"') {
			j->p++;
			return NULL;
		}
		if (c < 0x20)
			return "control character in a string";
		if (c == '\\') {
			if (++j->p >= j->end)
				return "string ends in an escape";
			c = *j->p++;
			if (c == 'u') {
				for (int i = 0; i < 4; i++, j->p++)
					if (j->p >= j->end || !strchr("0123456789abcdefABCDEF", *j->p) ||
					    !*j->p)
						return "bad \\u escape";
			} else if (!strchr("\"\\/bfnrt", c) || !c) {
				return "bad escape";
			}
			continue;
		}
		size_t n = utf8_len(j->p, j->end);
		if (!n)
			return "invalid UTF-8 in a string";
		j->p += n;
	}
	return "unterminated string";
}

static int digit(const struct js *j)
{
	return j->p < j->end && *j->p >= '0' && *j->p <= '9';
}

static const char *number(struct js *j)
{
	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (!digit(j))
		return "bad number";
	if (*j->p == '0')
		j->p++;
	else
		while (digit(j))
			j->p++;
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (!digit(j))
			return "bad fraction";
		while (digit(j))
			j->p++;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (!digit(j))
			return "bad exponent";
		while (digit(j))
			j->p++;
	}
	return NULL;
}

static const char *value(struct js *j)
{
	ws(j);
	if (j->p >= j->end)
		return "value expected";
	unsigned char c = *j->p;
	const char *why;
	if (c == '{' || c == '[') {
		unsigned char close = c == '{' ? '}' : ']';
		if (++j->depth > 512)
			return "nested too deep";
		j->p++;
		ws(j);
		if (j->p < j->end && *j->p == close) {
			j->p++;
			j->depth--;
			return NULL;
		}
		for (;;) {
			if (c == '{') {
				ws(j);
				if (j->p >= j->end || *j->p != '"')
					return "object key expected";
				if ((why = string(j)))
					return why;
				ws(j);
				if (j->p >= j->end || *j->p != ':')
					return "':' expected";
				j->p++;
			}
			if ((why = value(j)))
				return why;
			ws(j);
			if (j->p < j->end && *j->p == ',') {
				j->p++;
				continue;
			}
			if (j->p < j->end && *j->p == close) {
				j->p++;
				j->depth--;
				return NULL;
			}
			return c == '{' ? "',' or '}' expected" : "',' or ']' expected";
		}
	}
	if (c == '"')
		return string(j);
	if (c == '-' || (c >= '0' && c <= '9'))
		return number(j);
	static const char *const words[] = { "true", "false", "null" };
	for (int i = 0; i < 3; i++) {
		size_t len = strlen(words[i]);
		if ((size_t)(j->end - j->p) >= len && !memcmp(j->p, words[i], len)) {
			j->p += len;
			return NULL;
		}
	}
	return "unexpected character";
}

static void check_json_at(const char *s, size_t n, size_t from, size_t to, const char *what)
{
	struct js j = { (const unsigned char *)s + from, (const unsigned char *)s + to,
			(const unsigned char *)s, 0 };
	const char *why = value(&j);
	if (!why) {
		ws(&j);
		if (j.p != j.end)
			why = "text after the value";
	}
	if (why)
		fail(what, why, s, n, (size_t)(j.p - j.start));
}

void fuzz_check_json(const char *s, size_t n, const char *what)
{
	check_json_at(s, n, 0, n, what);
}

void fuzz_check_jsonl(const char *s, size_t n, const char *what)
{
	for (size_t at = 0; at < n;) {
		const char *nl = memchr(s + at, '\n', n - at);
		size_t end = nl ? (size_t)(nl - s) : n;
		if (end > at)
			check_json_at(s, n, at, end, what);
		at = end + 1;
	}
}

void fuzz_check_text(const char *s, size_t n, const char *what)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
			fail(what, "control character in text output", s, n, i);
	}
}

void fuzz_check_markup(const char *s, size_t n, const char *start, const char *end,
		       const char *what)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x7f || (c < 0x20 && c != '\n' && c != '\t' && c != '\r'))
			fail(what, "byte outside printable ASCII in markup", s, n, i);
	}
	const char *a = memmem(s, n, start, strlen(start));
	if (!a)
		return; /* the writer stopped early (an error said why) */
	size_t from = (size_t)(a - s) + strlen(start);
	const char *b = memmem(s + from, n - from, end, strlen(end));
	if (!b)
		fail(what, "script data not closed", s, n, from);
	check_json_at(s, n, from, (size_t)(b - s), what);
}

/* A varint at s[*at], under 10 bytes; -1 when it runs past end or is longer. */
static int pb_varint(const char *s, size_t end, size_t *at, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 70 && *at < end; shift += 7) {
		unsigned char b = (unsigned char)s[(*at)++];
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

/* The fields of one message in s[from, end); sub names the field numbers
 * whose length-delimited value is itself a message to walk (0-terminated,
 * NULL: none), for depth levels below. */
static void pb_message(const char *s, size_t n, size_t from, size_t end, const int *const *sub,
		       const char *what)
{
	size_t at = from;
	while (at < end) {
		size_t field_at = at;
		uint64_t key, len;
		if (pb_varint(s, end, &at, &key))
			fail(what, "protobuf key runs off its message", s, n, field_at);
		if (key >> 3 == 0)
			fail(what, "protobuf field number 0", s, n, field_at);
		switch (key & 7) {
		case 0:
			if (pb_varint(s, end, &at, &len))
				fail(what, "protobuf varint runs off its message", s, n, field_at);
			break;
		case 1:
		case 5:
			len = (key & 7) == 1 ? 8 : 4;
			if (end - at < len)
				fail(what, "protobuf fixed field runs off its message", s, n, field_at);
			at += len;
			break;
		case 2:
			if (pb_varint(s, end, &at, &len) || end - at < len)
				fail(what, "protobuf length runs off its message", s, n, field_at);
			if (sub && sub[0])
				for (const int *f = sub[0]; *f; f++)
					if ((uint64_t)*f == key >> 3)
						pb_message(s, n, at, at + len, sub + 1, what);
			at += len;
			break;
		default:
			fail(what, "protobuf wire type not written by flightrec", s, n, field_at);
		}
	}
}

void fuzz_check_pftrace(const char *s, size_t n, const char *what)
{
	/* Trace.packet; in TracePacket, track_event, interned_data and
	 * track_descriptor; below them their debug annotations and descriptors */
	static const int packet[] = { 11, 12, 60, 0 }, inner[] = { 3, 4, 8, 0 };
	static const int *const levels[] = { packet, inner, NULL };
	size_t at = 0;
	while (at < n) {
		size_t rec = at;
		uint64_t key, len;
		if (pb_varint(s, n, &at, &key) || key != (1u << 3 | 2))
			fail(what, "not a Trace.packet record", s, n, rec);
		if (pb_varint(s, n, &at, &len) || n - at < len)
			fail(what, "Trace.packet runs off the file", s, n, rec);
		pb_message(s, n, at, at + len, levels, what);
		at += len;
	}
}
