/* make_mcp_traces DIR: the MCP server tests' traces (test_analyzer_mcp_traces.h)
 * into DIR, for tests/mcp_client. */
#include "test_analyzer_mcp_traces.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: make_mcp_traces DIR\n");
		return 2;
	}
	return mcp_traces_write(argv[1]) ? 1 : 0;
}
