#!/bin/sh
# ctest's mcp.client: the test traces into a fresh root, the pinned client
# library installed from the lock file when missing, node's test runner.
# Exit 77 (skipped) without node.
set -eu
BIN=$1 MAKE=$2 ROOT=$3
command -v node >/dev/null 2>&1 || { echo "SKIP: no node"; exit 77; }
cd "$(dirname "$0")"
if [ ! -d node_modules/@modelcontextprotocol/sdk ] || [ ! -d node_modules/@modelcontextprotocol/client ]; then
	npm ci --no-audit --no-fund >/dev/null
fi
rm -rf "$ROOT"
"$MAKE" "$ROOT"
FLIGHTREC_ANALYZE=$BIN FLIGHTREC_MCP_ROOT=$ROOT exec node --test client.test.mjs client_v2.test.mjs
