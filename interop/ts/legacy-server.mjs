// A 2025-11-25 server on the TypeScript SDK v1 line, driven by `tern call`
// and `tern discover` in crates/tern-cli/tests/api/legacy_server.rs.
//
//   node legacy-server.mjs stdio
//   node legacy-server.mjs http <port>     (0 picks a free port)
//
// Over HTTP it serves /mcp with stateful sessions, one transport per
// Mcp-Session-Id, and prints `listening <port>` on stdout once ready.
// Its tools ask the client for a form, a model completion and the roots,
// so a client has to answer server requests the 2025-11-25 way.
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import * as z from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";

const text = (t) => ({ content: [{ type: "text", text: t }] });

// One McpServer per connection: an McpServer holds a single transport.
function build() {
  const mcp = new McpServer({ name: "interop-ts-server", version: "1.32.2" });

  mcp.registerTool(
    "echo",
    { description: "Echo the text back", inputSchema: { text: z.string() } },
    async ({ text: t }) => text(t),
  );

  // No capability check here: a client without elicitation gets whatever
  // error the SDK raises by itself.
  mcp.registerTool(
    "confirm_order",
    { description: "Ask how many to order, then order them", inputSchema: { item: z.string() } },
    async ({ item }) => {
      const r = await mcp.server.elicitInput({
        mode: "form",
        message: `Order ${item}?`,
        requestedSchema: {
          type: "object",
          properties: {
            quantity: { type: "integer", minimum: 1 },
            gift: { type: "boolean" },
          },
          required: ["quantity"],
        },
      });
      if (r.action === "accept") {
        const gift = r.content?.gift === true ? " as a gift" : "";
        return text(`ordered ${r.content?.quantity} ${item}${gift}`);
      }
      return text(r.action === "decline" ? "order declined" : "order cancelled");
    },
  );

  mcp.registerTool(
    "summarize",
    { description: "Summarize the text with the client's model", inputSchema: { text: z.string() } },
    async ({ text: t }) => {
      const r = await mcp.server.createMessage({
        messages: [{ role: "user", content: { type: "text", text: `Summarize: ${t}` } }],
        maxTokens: 100,
      });
      // A result may carry one block or, with tools, an array of them.
      const blocks = Array.isArray(r.content) ? r.content : [r.content];
      return text(`summary: ${blocks.map((b) => b.text ?? "").join("")}`);
    },
  );

  mcp.registerTool("list_roots", { description: "List the client's roots" }, async () => {
    const { roots } = await mcp.server.listRoots();
    return text(roots.length ? roots.map((r) => r.uri).join(", ") : "no roots");
  });

  return mcp;
}

const [mode, portArg] = process.argv.slice(2);

if (mode === "stdio") {
  await build().connect(new StdioServerTransport());
} else if (mode === "http") {
  const sessions = new Map();

  const reply = (res, status, code, message) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
  };

  const readJson = async (req) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  };

  const http = createServer(async (req, res) => {
    try {
      if (new URL(req.url, "http://x").pathname !== "/mcp") {
        res.writeHead(404).end();
        return;
      }
      const sid = req.headers["mcp-session-id"];
      const session = sid ? sessions.get(sid) : undefined;

      if (req.method === "POST") {
        let body;
        try {
          body = await readJson(req);
        } catch {
          return reply(res, 400, -32700, "Parse error");
        }
        if (session) return await session.handleRequest(req, res, body);
        if (sid) return reply(res, 404, -32001, "Session not found");
        // As the SDK's own example does: anything but initialize without a
        // session is a plain 400, which a dual-era client reads as legacy.
        if (!isInitializeRequest(body)) {
          return reply(res, 400, -32000, "Bad Request: No valid session ID provided");
        }
        const transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => sessions.set(id, transport),
        });
        transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
        await build().connect(transport);
        return await transport.handleRequest(req, res, body);
      }

      if (req.method === "GET" || req.method === "DELETE") {
        if (!sid) return reply(res, 400, -32000, "Bad Request: Mcp-Session-Id header is required");
        if (!session) return reply(res, 404, -32001, "Session not found");
        return await session.handleRequest(req, res);
      }

      res.writeHead(405, { allow: "GET, POST, DELETE" }).end();
    } catch (e) {
      process.stderr.write(`legacy-server: ${e?.stack ?? e}\n`);
      if (!res.headersSent) reply(res, 500, -32603, "Internal server error");
    }
  });

  http.listen(Number(portArg ?? 0), "127.0.0.1", () => {
    console.log(`listening ${http.address().port}`);
  });
} else {
  process.stderr.write("usage: node legacy-server.mjs stdio | http <port>\n");
  process.exit(2);
}
