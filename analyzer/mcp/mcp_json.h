/* The MCP server's JSON: a parser for what clients send and for the
 * commands' own --json output (so its strings can be normalised before
 * they are served), and a writer.  Bounded: depth MJ_MAX_DEPTH, input as
 * long as the caller allows; invalid UTF-8, duplicate keys, trailing bytes
 * and lone surrogates are errors.  Not a general JSON library: no
 * streaming, no editing beyond what mcp_tools.c does. */
#ifndef FLIGHTREC_MCP_JSON_H
#define FLIGHTREC_MCP_JSON_H

#include <stddef.h>
#include <stdio.h>

#define MJ_MAX_DEPTH 64

enum mj_type { MJ_NULL, MJ_BOOL, MJ_NUM, MJ_STR, MJ_ARR, MJ_OBJ };

struct mj {
	enum mj_type type;
	int boolean;
	double num;
	char *str;          /* MJ_STR: UTF-8, NUL-terminated (may hold NUL: len) */
	size_t len;
	char *raw;          /* MJ_NUM: the number as written (ids are echoed exactly) */
	struct mj **items;  /* MJ_ARR, MJ_OBJ values */
	char **keys;        /* MJ_OBJ */
	size_t n, cap;
};

/* NULL with err set ("unexpected character at byte 12") on bad input or
 * when memory runs out. */
struct mj *mj_parse(const char *s, size_t len, char *err, size_t errlen);
void mj_free(struct mj *v);

const struct mj *mj_get(const struct mj *obj, const char *key);
/* The string of obj[key], or NULL when absent or not a string. */
const char *mj_str(const struct mj *obj, const char *key);

/* Builders for results (NULL when memory runs out; adding to NULL is a
 * no-op that keeps NULL, so a chain fails once at the end). */
struct mj *mj_new(enum mj_type t);
struct mj *mj_string(const char *s);
struct mj *mj_number(double v);
struct mj *mj_add(struct mj *obj, const char *key, struct mj *v); /* key NULL: array */

/* Compact JSON, every string through out_json_str (ASCII, HTML-safe). */
void mj_write(FILE *out, const struct mj *v);

#endif
