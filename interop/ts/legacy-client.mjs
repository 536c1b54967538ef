// A 2025-11-25 client on the TypeScript SDK v1 line, driven against
// `tern serve` by crates/tern-cli/tests/api/interop.rs.
//
//   node legacy-client.mjs stdio <command> [args...]
//   node legacy-client.mjs http <url>
//
// It declares form elicitation, roots and sampling in `initialize`, answers
// the server's requests as a person and a model would, runs the reference
// workload, and prints one JSON object with what it saw.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [mode, ...rest] = process.argv.slice(2);
const transport =
  mode === "stdio"
    ? new StdioClientTransport({ command: rest[0], args: rest.slice(1), stderr: "ignore" })
    : new StreamableHTTPClientTransport(new URL(rest[0]));

const client = new Client(
  { name: "interop-ts", version: "1.32.2" },
  { capabilities: { elicitation: {}, roots: { listChanged: true }, sampling: {} } },
);

let decline = false;
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  asked.push(`elicitation/create: ${req.params.message}`);
  return decline ? { action: "decline" } : { action: "accept", content: { approved: true } };
});
client.setRequestHandler(ListRootsRequestSchema, async () => {
  asked.push("roots/list");
  return { roots: [{ uri: "file:///tmp", name: "tmp" }] };
});
client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
  asked.push("sampling/createMessage");
  return {
    role: "assistant",
    content: { type: "text", text: "42" },
    model: "interop-model",
    stopReason: "endTurn",
  };
});

const text = (r) => r.content.map((c) => c.text ?? "").join("");
const out = {};
try {
  await client.connect(transport);
  out.server = client.getServerVersion();
  out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
  out.echo = text(await client.callTool({ name: "echo", arguments: { text: "hello" } }));
  out.deploy = text(await client.callTool({ name: "deploy", arguments: { environment: "staging" } }));
  out.ask_model = text(await client.callTool({ name: "ask_model", arguments: { question: "6 x 7?" } }));
  decline = true;
  const declined = await client.callTool({ name: "deploy", arguments: { environment: "prod" } });
  out.declined = { text: text(declined), isError: declined.isError === true };
  out.asked = asked;
} catch (e) {
  out.error = String(e && e.message ? e.message : e);
}
await client.close().catch(() => {});
console.log(JSON.stringify(out));
process.exit(out.error ? 1 : 0);
