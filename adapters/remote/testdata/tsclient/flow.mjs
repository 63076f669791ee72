// Drives one official TypeScript MCP client through a whole flow against
// the real "tool-runner mcp --http": node flow.mjs v1|v2 URL RUN_ID. The
// token is in MCP_TOKEN (never an argument). It calls inspect_inputs,
// analyze with the digest inspect gave, verify_result, then reads the
// run's result.json as a resource, and prints one JSON object of what it
// saw. Started by cmd/tool-runner's TestTheTypeScriptClientsRunAFlowOverHTTP.
const [which, url, runId] = process.argv.slice(2);
const token = process.env.MCP_TOKEN;

async function load() {
  if (which === "v1") {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
    return { Client, StreamableHTTPClientTransport, options: {} };
  }
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
  return { Client, StreamableHTTPClientTransport, options: { versionNegotiation: { mode: { pin: "2026-07-28" } } } };
}

const { Client, StreamableHTTPClientTransport, options } = await load();
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: `ts-flow-${which}`, version: "0.0.0" }, options);
await client.connect(transport);

const out = { client: which, protocolVersion: null, calls: [], resource: null };
out.protocolVersion = transport.protocolVersion ?? client.getNegotiatedProtocolVersion?.() ?? null;

async function call(name, args) {
  const res = await client.callTool({ name, arguments: args });
  const response = JSON.parse(res.content[0].text);
  out.calls.push({ name, isError: res.isError ?? false, response });
  return response;
}

const inspected = await call("inspect_inputs", {});
await call("analyze", { expected_source_digest: inspected.result.source_digest, run_id: runId });
await call("verify_result", { run_id: runId });
const read = await client.readResource({ uri: `metricproof://runs/${runId}/result.json` });
out.resource = read.contents[0].text;
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
