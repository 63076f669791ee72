// Drives one official TypeScript MCP client against the remote front:
// node client.mjs v1|v2 URL. The token is in MCP_TOKEN (never an
// argument). It connects with the token, lists the tools, calls
// inspect_inputs and analyze, then tries to connect without a token, and
// prints one JSON object of what it saw. Started by adapters/remote's
// TestTheTypeScriptClients.
const [which, url] = process.argv.slice(2);
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
const out = { client: which, tools: [], calls: [], protocolVersion: null, unauthorized: null };

function open(bearer) {
  const headers = bearer ? { Authorization: `Bearer ${bearer}` } : {};
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  return { transport, client: new Client({ name: `ts-${which}`, version: "0.0.0" }, options) };
}

const { transport, client } = open(token);
await client.connect(transport);
out.protocolVersion = transport.protocolVersion ?? client.getNegotiatedProtocolVersion?.() ?? null;
out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
for (const name of ["inspect_inputs", "analyze"]) {
  const res = await client.callTool({ name, arguments: {} });
  out.calls.push({ name, isError: res.isError ?? false, text: res.content[0].text });
}
await client.close();

const bare = open("");
try {
  await bare.client.connect(bare.transport);
  out.unauthorized = "connected";
} catch (e) {
  out.unauthorized = String(e && (e.message || e));
}
process.stdout.write(JSON.stringify(out) + "\n");
