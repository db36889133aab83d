/* Strings from traces are hostile (symbol names, command lines and paths
 * come from strangers' jobs): everything the MCP server serves passes
 * here.  Normalised: invalid UTF-8 becomes U+FFFD; C0 and C1 controls,
 * DEL, zero-width and bidi controls (U+200B-200F, U+202A-202E,
 * U+2060-2064, U+2066-2069, U+FEFF), variation selectors (U+FE00-FE0F)
 * and all of U+E0000-E0FFF (tag characters, "ASCII smuggling", and the
 * supplementary variation selectors that hide bytes behind an emoji) are
 * dropped, since no symbol, path or command line needs an invisible
 * character; newline, return and tab inside a string become the visible
 * "\n", "\r", "\t".  Capped: MCP_STRING_CAP bytes, then
 * "...[+N B]".  Counted: strings holding a phrase prompt injections use
 * ("ignore previous", "system:", "<|" ...), reported, never acted on. */
#ifndef FLIGHTREC_MCP_SANITIZE_H
#define FLIGHTREC_MCP_SANITIZE_H

#include <stddef.h>

#define MCP_STRING_CAP 512

struct mj;

struct mcp_clean_stats {
	size_t strings, changed, capped, suspicious;
};

/* s (len bytes) cleaned into a new string (NULL when memory runs out);
 * keep_newlines: a text block, whose lines are capped one by one. */
char *mcp_clean(const char *s, size_t len, int keep_newlines, struct mcp_clean_stats *st);

/* Every string of v cleaned in place; -1 when memory runs out. */
int mcp_clean_tree(struct mj *v, struct mcp_clean_stats *st);

#endif
