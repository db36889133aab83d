/* The MCP server's protocol: newline-delimited JSON-RPC 2.0 on two file
 * descriptors, both eras (the initialize handshake of 2025-03-26,
 * 2025-06-18 and 2025-11-25; the stateless 2026-07-28 revision, whose
 * requests carry their protocol version in _meta), one request at a time.
 * Not for tools (mcp_tools.c). */
#ifndef FLIGHTREC_MCP_SERVER_H
#define FLIGHTREC_MCP_SERVER_H

#include "mcp_tools.h"

/* A line longer than this is answered -32600 and skipped to its newline. */
#define MCP_MAX_LINE (1u << 20)

/* Serves requests from in_fd until end of input; answers on out_fd.
 * 0 at end of input, -1 when writing fails or memory runs out. */
int mcp_serve(int in_fd, int out_fd, const struct mcp_ctx *ctx);

#endif
