// A deploy-like tool on the TypeScript SDK v2 line (@modelcontextprotocol/server
// 2.4.0, pinned in package.json), served over stdio for `tern probe`
// (crates/tern-cli/tests/api/probe.rs).
//
//   node deploy-server.mjs
//
// One round asks a form (an approval) and the client's roots, as the
// reference workload's deploy does. The state is sealed with the SDK's own
// codec (HMAC, a ten-minute lifetime), bound to the method, as its
// documentation recommends.
import { randomBytes } from "node:crypto";
import {
  McpServer,
  acceptedContent,
  createRequestStateCodec,
  inputRequired,
  inputResponse,
} from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import * as z from "zod";

const codec = createRequestStateCodec({
  key: randomBytes(32),
  bind: (ctx) => ctx.mcpReq.method,
});
const approval = z.object({ approved: z.boolean() });

function build() {
  const mcp = new McpServer(
    { name: "ts-deploy", version: "2.4.0" },
    { requestState: { verify: codec.verify } },
  );
  mcp.registerTool(
    "deploy",
    {
      description: "Deploys to an environment after a person approves",
      inputSchema: z.object({ environment: z.string() }),
    },
    async ({ environment }, ctx) => {
      const responses = ctx.mcpReq.inputResponses;
      const approved = acceptedContent(responses, "deployment_approval", approval);
      const roots = inputResponse(responses, "workspace_roots");
      if (approved === undefined || roots.kind !== "roots") {
        return inputRequired({
          inputRequests: {
            deployment_approval: inputRequired.elicit({
              message: `Approve deployment to ${environment}?`,
              requestedSchema: approval,
            }),
            workspace_roots: inputRequired.listRoots(),
          },
          requestState: await codec.mint({ environment }, ctx),
        });
      }
      const text = approved.approved
        ? `deployed to ${environment} with ${roots.roots.length} workspace root(s)`
        : `deployment to ${environment} was not approved`;
      return { content: [{ type: "text", text }] };
    },
  );
  return mcp;
}

serveStdio(build);
