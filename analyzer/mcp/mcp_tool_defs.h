/* The shape of the MCP server's tool table (mcp_tools.c): each tool's
 * arguments, from which its inputSchema is written (so the schema and the
 * checks cannot disagree).  Not for handlers. */
#ifndef FLIGHTREC_MCP_TOOL_DEFS_H
#define FLIGHTREC_MCP_TOOL_DEFS_H

enum arg_type { ARG_STR, ARG_INT, ARG_BOOL, ARG_PATHS };

struct arg_def {
	const char *name;
	enum arg_type type;
	int required;
	double min, max;         /* ARG_INT */
	const char *choices;     /* ARG_STR: "|a|b|c|", NULL: any */
	const char *expect;      /* for error texts: "an array of trace paths" */
	const char *description;
};

#define MAX_TOOL_ARGS 12

struct call;
struct mj;

struct tool_def {
	const char *name, *title, *description;
	const char *arg_list;    /* "traces, max_tokens, cursor" for error texts */
	struct arg_def args[MAX_TOOL_ARGS]; /* name NULL ends */
	struct mj *(*run)(struct call *k);
};

#endif
