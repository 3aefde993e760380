// The official TypeScript SDK's OAuth client against a Vigil MCP endpoint, as a host built on
// it signs in: `node ts_oauth_client.mjs MCP_URL CALLBACK_URL [DOCUMENT_URL]`. It prints "authorize URL" where
// a host would open the browser, reads the URL its callback received on stdin, finishes the
// sign-in and prints one JSON object of what it then got. tests/e2e/test_oauth_clients.py runs
// it, answers for the person in Chromium, and judges.
import { createRequire } from "node:module";
import path from "node:path";
import readline from "node:readline";

const require = createRequire(path.join(process.env.VIGIL_NODE_TOOLS, "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { UnauthorizedError } = require("@modelcontextprotocol/sdk/client/auth.js");

// A third argument: the client's metadata document URL, its client_id (no registration).
const [url, callback, documentUrl] = process.argv.slice(2);

const kept = {};
const provider = {
  clientMetadataUrl: documentUrl,
  get redirectUrl() {
    return callback;
  },
  get clientMetadata() {
    return {
      client_name: "TypeScript SDK host",
      redirect_uris: [callback],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  },
  clientInformation: () => kept.client,
  saveClientInformation: (client) => {
    kept.client = client;
  },
  tokens: () => kept.tokens,
  saveTokens: (tokens) => {
    kept.tokens = tokens;
  },
  redirectToAuthorization: (authorizationUrl) => {
    process.stdout.write(`authorize ${authorizationUrl.href}\n`);
  },
  saveCodeVerifier: (verifier) => {
    kept.verifier = verifier;
  },
  codeVerifier: () => kept.verifier,
};

async function connect() {
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  const client = new Client({ name: "vigil-e2e-oauth", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
}

// Connecting needs no credential: the sign-in starts at the first call, refused with 401.
async function callOrSignIn() {
  const { client, transport } = await connect();
  try {
    return { client, whoami: await client.callTool({ name: "whoami", arguments: {} }) };
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
    const lines = readline.createInterface({ input: process.stdin });
    const answered = new URL((await lines[Symbol.asyncIterator]().next()).value);
    lines.close();
    await transport.finishAuth(answered.searchParams.get("code"));
    const again = await connect();
    return { client: again.client, whoami: await again.client.callTool({ name: "whoami", arguments: {} }) };
  }
}

const { client, whoami } = await callOrSignIn();
const tools = (await client.listTools()).tools.map((tool) => tool.name);
process.stdout.write(`${JSON.stringify({ whoami, tools, clientId: kept.client?.client_id })}\n`);
process.exit(0);
