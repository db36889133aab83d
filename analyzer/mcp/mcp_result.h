/* One tool result as the server serves it: the command's text cleaned
 * (mcp_sanitize.h) inside a fence labelled untrusted, and its JSON
 * cleaned, each within the call's token budget (bytes / 4, as `summary`
 * counts): the text is cut at a line with a cursor to continue from, the
 * JSON's longest arrays halved until it fits (what was trimmed is listed
 * in budget.trimmed).  Not for running anything (mcp_tools.c). */
#ifndef FLIGHTREC_MCP_RESULT_H
#define FLIGHTREC_MCP_RESULT_H

#include <stddef.h>

struct mj;

/* text (may be NULL) from offset cursor, data (taken; may be NULL) ->
 * a CallToolResult; NULL when memory runs out. */
struct mj *mcp_result(const char *tool, const char *text, size_t cursor, struct mj *data,
		      unsigned max_tokens, int structured);
/* A tool error: isError with text (cleaned, at most 1000 bytes). */
struct mj *mcp_error_result(const char *tool, const char *text, int structured);

#endif
