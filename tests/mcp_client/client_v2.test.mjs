// The v2 official TypeScript client (@modelcontextprotocol/client, pinned
// by package-lock.json), which speaks both protocol eras: the legacy
// initialize handshake, the stateless 2026-07-28 revision pinned, and
// 'auto' (it probes with server/discover).  In each mode it lists the
// tools and calls every one, validating each structuredContent against
// the tool's outputSchema itself; the negotiated version is the era's.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const BIN = process.env.FLIGHTREC_ANALYZE;
const ROOT = process.env.FLIGHTREC_MCP_ROOT;

const calls = [
  ["list_traces", {}],
  ["open_traces", { traces: ["rich.frec"] }],
  ["get_summary", { traces: ["rich.frec"] }],
  ["list_findings", { traces: ["rich.frec"] }],
  ["hot_paths", { traces: ["rich.frec"], kind: "mem-alloc" }],
  ["explain", { traces: ["rich.frec"], function: "work_a" }],
  ["get_report", { traces: ["rich.frec"], section: "rdma" }],
  ["diff", { before: ["healthy.frec"], after: ["launch_bound.frec"] }],
  ["query_events", { traces: ["rich.frec"], types: "cuda", name: "Malloc" }],
];

for (const [mode, want] of [["legacy", "2025-11-25"], [{ pin: "2026-07-28" }, "2026-07-28"],
  ["auto", "2026-07-28"]]) {
  test(`v2 client, versionNegotiation ${JSON.stringify(mode)}`, async () => {
    const client = new Client({ name: "flightrec-test", version: "0" },
      { versionNegotiation: { mode } });
    await client.connect(new StdioClientTransport({ command: BIN, args: ["mcp", ROOT],
      stderr: "pipe" }));
    try {
      assert.equal(client.getNegotiatedProtocolVersion(), want);
      const { tools } = await client.listTools();
      assert.equal(tools.length, 9);
      for (const [name, args] of calls) {
        const r = await client.callTool({ name, arguments: args });
        assert.notEqual(r.isError, true, `${name}: ${r.content?.[0]?.text}`);
        assert.equal(r.structuredContent.tool, name);
      }
      const bad = await client.callTool({ name: "get_summary", arguments: { traces: ["/etc/shadow"] } });
      assert.equal(bad.isError, true);
    } finally {
      await client.close();
    }
  });
}
