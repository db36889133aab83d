// The official TypeScript MCP client library (@modelcontextprotocol/sdk,
// pinned by package-lock.json) drives `flightrec-analyze mcp` over stdio:
// it lists the tools, calls every one on the test traces (run.sh writes
// them with make_mcp_traces), and validates each structured result
// against the tool's outputSchema itself (callTool throws on a mismatch or
// on a missing structuredContent).  Also: bad arguments and paths outside
// the root come back as isError; the hostile trace through every tool
// comes back normalised (no bidi, zero-width, tag, variation-selector or
// escape characters), with the untrusted fence intact and within the token
// budget.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const BIN = process.env.FLIGHTREC_ANALYZE;
const ROOT = process.env.FLIGHTREC_MCP_ROOT;
const TOOLS = ["list_traces", "open_traces", "get_summary", "list_findings", "hot_paths",
  "explain", "get_report", "diff", "query_events"];

async function connect() {
  const client = new Client({ name: "flightrec-test", version: "0" });
  const transport = new StdioClientTransport({ command: BIN, args: ["mcp", ROOT], stderr: "pipe" });
  await client.connect(transport);
  return client;
}

function calls(trace) {
  return [
    ["list_traces", {}],
    ["open_traces", { traces: [trace] }],
    ["get_summary", { traces: [trace] }],
    ["list_findings", { traces: [trace] }],
    ["hot_paths", { traces: [trace], kind: "cpu", limit: 5 }],
    ["hot_paths", { traces: [trace], kind: "mem-inuse" }],
    ["explain", { traces: [trace], function: "main" }],
    ["get_report", { traces: [trace], section: "memory" }],
    ["get_report", { traces: [trace], section: "cuda", limit: 3 }],
    ["diff", { before: ["healthy.frec"], after: [trace] }],
    ["query_events", { traces: [trace], types: "cuda", limit: 5 }],
  ];
}

function text(r) {
  assert.equal(r.content.length, 1);
  assert.equal(r.content[0].type, "text");
  return r.content[0].text;
}

test("lists every tool with schemas and calls each on the rich trace", async () => {
  const client = await connect();
  try {
    assert.equal(client.getServerVersion().name, "flightrec-analyze");
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), TOOLS);
    for (const t of tools) {
      assert.equal(t.inputSchema.type, "object");
      assert.equal(t.outputSchema.type, "object");
      assert.equal(t.annotations.readOnlyHint, true);
    }
    const seen = new Set();
    for (const [name, args] of calls("rich.frec")) {
      const r = await client.callTool({ name, arguments: args });
      assert.notEqual(r.isError, true, `${name}: ${text(r)}`);
      assert.equal(r.structuredContent.tool, name);
      const budget = r.structuredContent.budget;
      assert.ok(budget.est_tokens <= budget.max_tokens, `${name} over budget`);
      assert.ok(text(r).length / 4 <= budget.max_tokens, `${name} text over budget`);
      seen.add(name);
    }
    const one = await client.callTool({ name: "list_findings",
      arguments: { traces: ["rich.frec"], number: 1 } });
    assert.equal(one.structuredContent.data.number, 1);
    assert.equal(typeof one.structuredContent.data.finding.kind, "string");
    assert.deepEqual([...seen].sort(), [...TOOLS].sort());
  } finally {
    await client.close();
  }
});

test("diff finds launch_bound new, explain agrees with the JSON it serves", async () => {
  const client = await connect();
  try {
    const d = await client.callTool({ name: "diff",
      arguments: { before: ["healthy.frec"], after: ["launch_bound.frec"] } });
    const lb = d.structuredContent.data.findings.find((f) => f.kind === "launch_bound");
    assert.equal(lb.status, "new");
    assert.equal(d.structuredContent.data.functions.cuda_ms[0].function, "train_step");
    const e = await client.callTool({ name: "explain",
      arguments: { traces: ["launch_bound.frec"], function: "train_step" } });
    assert.equal(e.structuredContent.data.function, "train_step");
    assert.ok(e.structuredContent.data.cuda.calls > 0);
  } finally {
    await client.close();
  }
});

test("bad arguments and paths outside the root are tool errors", async () => {
  const client = await connect();
  try {
    const cases = [
      ["get_summary", { traces: ["/etc/passwd"] }],
      ["get_summary", { traces: ["../../../etc/passwd"] }],
      ["get_summary", { traces: ["rich.frec"], colour: "red" }],
      ["get_report", { traces: ["rich.frec"], section: "disk" }],
      ["explain", { traces: ["rich.frec"] }],
      ["explain", { traces: ["rich.frec"], function: "no_such_function" }],
      ["get_summary", { traces: ["rich.frec"], max_tokens: 9 }],
    ];
    for (const [name, args] of cases) {
      const r = await client.callTool({ name, arguments: args });
      assert.equal(r.isError, true, `${name} ${JSON.stringify(args)}`);
      assert.ok(!text(r).includes("root:x:0:0"), "file bytes leaked");
    }
    await assert.rejects(client.callTool({ name: "no_such_tool", arguments: {} }));
  } finally {
    await client.close();
  }
});

test("the hostile trace through every tool: normalised, fenced, capped", async () => {
  const client = await connect();
  try {
    await client.listTools();
    for (const [name, args] of calls("hostile.frec")) {
      const r = await client.callTool({ name, arguments: args });
      const t = text(r);
      const all = t + JSON.stringify(r.structuredContent ?? {});
      assert.ok(!/[\u202e\u200b\u001b\ufe0f\u{E0041}\u{E0100}]/u.test(all), `${name}: a hostile character came through`);
      if (!r.isError) {
        const fences = t.split("\n").filter((l) => l.startsWith("```"));
        assert.deepEqual(fences, ["```untrusted", "```"], `${name}: fence broken`);
        for (const s of JSON.stringify(r.structuredContent).match(/"(?:[^"\\]|\\.)*"/g))
          assert.ok(s.length < 2400, `${name}: a string over the cap`);
        assert.ok(t.length / 4 <= 2000, `${name}: over budget`);
      }
    }
    const s = await client.callTool({ name: "get_summary", arguments: { traces: ["hostile.frec"] } });
    assert.ok(s.structuredContent.suspicious_strings > 0);
  } finally {
    await client.close();
  }
});
