// The official TypeScript SDK's client against a Vigil MCP endpoint, as the hosts built on it
// connect: `node ts_client.mjs URL SECRET`. Prints one JSON object saying what each step got;
// tests/e2e/test_mcp_clients.py runs it and judges. The SDK comes from VIGIL_NODE_TOOLS (the
// Makefile's .tools/node), where it is installed at the version package-lock.json pins.
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.env.VIGIL_NODE_TOOLS, "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");

const [url, secret] = process.argv.slice(2);

async function connect(credential) {
  const headers = credential ? { Authorization: `Bearer ${credential}` } : {};
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const client = new Client({ name: "vigil-e2e", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

// What a step threw, as the SDK reports it: an HTTP status (StreamableHTTPError) or a
// JSON-RPC error code, and the message.
async function attempt(step) {
  try {
    return { ok: await step() };
  } catch (error) {
    const code = typeof error.code === "number" ? error.code : null;
    return { thrown: { code, message: String(error.message) } };
  }
}

const report = {};
const client = await connect(secret);
report.protocolVersion = client.transport.protocolVersion ?? null;
report.ping = await attempt(() => client.ping());
report.tools = await attempt(async () => (await client.listTools()).tools.map((tool) => tool.name));
report.whoami = await attempt(() => client.callTool({ name: "whoami", arguments: {} }));
report.refusal = await attempt(() =>
  client.callTool({ name: "register", arguments: { kind: "agent", name: 42 } }),
);
await client.close();

const anonymous = await connect(null);
report.anonymousTools = await attempt(async () => (await anonymous.listTools()).tools.length);
report.anonymousCall = await attempt(() => anonymous.callTool({ name: "whoami", arguments: {} }));
await anonymous.close();

report.badSecret = await attempt(async () => {
  await (await connect("vgl.local.per_aaaaaaaaaaaaaaaa.nope")).close();
  return "connected";
});

process.stdout.write(JSON.stringify(report));
