/* The MCP server's tools: each runs the CLI's own command (cmd_*.c, text
 * and --json) into memory, so the server and the CLI cannot drift, then
 * serves both through mcp_result.c (normalised, fenced, budgeted).  The
 * table of names, descriptions and schemas is compiled in: nothing a trace
 * holds reaches a description.  Read-only: no tool writes a file, runs a
 * program or opens a path outside the roots. */
#ifndef FLIGHTREC_MCP_TOOLS_H
#define FLIGHTREC_MCP_TOOLS_H

#include <stdio.h>
#include "mcp_paths.h"

struct mj;

struct mcp_ctx {
	const struct mcp_roots *roots;
	unsigned cap_tokens;     /* the server's --max-tokens (at most 8000) */
	int structured;          /* the client's era has structuredContent */
	struct mcp_redact *redact; /* --redact: the copies served, or NULL */
};

#define MCP_DEFAULT_TOKENS 2000
#define MCP_MAX_TOKENS 8000

/* The tools array, in a fixed order (with_output_schema: 2025-06-18 on). */
void mcp_tools_write(FILE *out, int with_output_schema);

/* Runs tool name with args (an object or NULL): a CallToolResult in
 * *result (isError for bad arguments or a failed command), 0; 1 when no
 * tool has that name; -1 when memory runs out. */
int mcp_tool_call(const struct mcp_ctx *c, const char *name, const struct mj *args,
		  struct mj **result);

#endif
