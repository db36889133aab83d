/* `mcp --redact`: the MCP server serves what `archive --redact` would
 * show.  Every trace a tool reads is replaced by a redacted copy (redact.h;
 * an archive by the archive command's own redacted copy of it), made once
 * per file while it stays the same (device, inode, size, mtime) and kept
 * open, unlinked, for the server's life (named only while it is written,
 * in a private directory, mode 0700, in $TMPDIR: nothing is left behind,
 * even after SIGKILL, but for that moment).  One
 * redactor for the server, so a value gets the same token in every .frec
 * file and every call (diff compares like with like).  The commands'
 * outputs name a copy by the client's own name for the trace (mcp_shown),
 * never by "/proc/self/fd/N".  Not for the tools themselves (mcp_tools.c). */
#ifndef FLIGHTREC_MCP_REDACT_H
#define FLIGHTREC_MCP_REDACT_H

#include <stddef.h>

struct mcp_roots;
struct mcp_redact;

/* all: --redact-all's settings too.  NULL with a message in err. */
struct mcp_redact *mcp_redact_new(const struct mcp_roots *roots, int all, char *err,
				  size_t errlen);
/* Removes the copies and their directory. */
void mcp_redact_free(struct mcp_redact *m);

/* The redacted copies of real (a path mcp_resolve gave): a .frec's one, an
 * archive's one per .frec member; *n paths, owned by m and valid until the
 * next call.  NULL with a message in err when they cannot be made. */
const char *const *mcp_redact_copy(struct mcp_redact *m, const char *real, size_t *n, char *err,
				   size_t errlen);

/* text (len bytes; NUL-terminated) with every copy's path replaced by the
 * client's name for the trace, JSON-escaped when json: a new string (and
 * *out_len), or NULL when memory runs out. */
char *mcp_redact_names(const struct mcp_redact *m, const char *text, size_t len, int json,
		       size_t *out_len);

#endif
