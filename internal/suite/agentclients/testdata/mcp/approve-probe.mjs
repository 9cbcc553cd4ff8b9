// A stand-in permission prompt server for TestClaudeCode_PermissionPromptTool:
// an MCP server (the TypeScript SDK's) with one tool, approve, that answers
// every call the way MODE says, so the test can see what Claude Code does
// with each kind of answer a prompt server could give.
//
//   node approve-probe.mjs SDK_DIR MODE
import { pathToFileURL } from "node:url";
import path from "node:path";

const [sdkDir, mode] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(sdkDir, "dist/esm", p)).href);
const { Server } = await load("server/index.js");
const { StdioServerTransport } = await load("server/stdio.js");
const { ListToolsRequestSchema, CallToolRequestSchema } = await load("types.js");

const text = (t, isError) => ({ content: [{ type: "text", text: t }], ...(isError ? { isError: true } : {}) });
const answers = {
  "allow": (a) => text(JSON.stringify({ behavior: "allow", updatedInput: a.input })),
  "deny": () => text(JSON.stringify({ behavior: "deny", message: "PROBE-DENY" })),
  "tool-error": () => text("PROBE-TOOL-ERROR", true),
  "tool-error-allow": (a) => text(JSON.stringify({ behavior: "allow", updatedInput: a.input }), true),
  "not-json": () => text("PROBE-NOT-JSON"),
  "allow-no-input": () => text(JSON.stringify({ behavior: "allow" })),
  "empty": () => ({ content: [] }),
};

const server = new Server({ name: "probe", version: "1" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [{ name: "approve", description: "probe", inputSchema: { type: "object" } }],
}));
server.setRequestHandler(CallToolRequestSchema, async (req) => {
  if (mode === "rpc-error") throw new Error("PROBE-RPC-ERROR");
  if (mode === "exit") process.exit(3);
  return answers[mode](req.params.arguments ?? {});
});
await server.connect(new StdioServerTransport());
