/* The MCP server's file system: only what lies under the roots named on
 * its command line, resolved with realpath() (so no "..", no symbolic link
 * out of a root), regular files only.  An error never tells a path outside
 * the roots from one that does not exist.  Not for reading traces: the
 * commands open what this resolved. */
#ifndef FLIGHTREC_MCP_PATHS_H
#define FLIGHTREC_MCP_PATHS_H

#include <stddef.h>

struct mcp_roots {
	char **dirs;   /* realpath of each root (a directory, or a file's directory) */
	char **files;  /* a root that is one file: its realpath, else NULL */
	size_t n;
};

/* -1 with a message in err when a root cannot be resolved. */
int mcp_roots_init(struct mcp_roots *r, const char *const *paths, size_t n, char *err,
		   size_t errlen);
void mcp_roots_free(struct mcp_roots *r);

/* The realpath of a trace path a client gave (relative to a root, or
 * absolute inside one); NULL when it is not a regular file under a root
 * (malloc'd). */
char *mcp_resolve(const struct mcp_roots *r, const char *path);

/* The name a client sees for a resolved path: relative to its root. */
const char *mcp_shown(const struct mcp_roots *r, const char *real);

/* Trace files (.frec, .tar, .tar.gz, .tar.zst) under the roots, at most
 * four directories deep, sorted: names as mcp_shown gives them, with their
 * sizes and kinds.  Returns how many (the arrays malloc'd), -1 on memory. */
struct mcp_listing {
	char *name;
	unsigned long long bytes;
	const char *kind;  /* "frec" or "archive" */
};
long mcp_list(const struct mcp_roots *r, struct mcp_listing **out);
void mcp_listing_free(struct mcp_listing *v, long n);

#endif
