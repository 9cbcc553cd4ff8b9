// The MCP SDK for TypeScript's client driving `collie mcp` over stdio, for
// TestMCPTypeScriptSDK_D1 (mcp_tssdk_test.go): a second implementation of
// the protocol against the Go SDK's server.
//
//   node tsclient.mjs SDK_DIR COLLIE CWD [NAME=VALUE...]
//
// SDK_DIR is the package's folder (node_modules/@modelcontextprotocol/sdk);
// COLLIE is run as `COLLIE mcp` in CWD with the SDK's default environment
// plus the NAME=VALUE pairs. It connects (initialize), then prints one JSON
// line per event on stdout and takes one JSON command per line on stdin:
//
//   {"op":"list"}                                  -> {"ev":"tools","tools":[...]}
//   {"op":"call","name":N,"arguments":A,
//    "progress":true,"timeoutMs":T,
//    "resetTimeoutOnProgress":true}                -> {"ev":"progress",...}* then
//                                                     {"ev":"result","result":R} or
//                                                     {"ev":"error","code":C,"message":M}
//   {"op":"close"}                                 -> {"ev":"closed"}, and exits
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import path from "node:path";

const [sdkDir, collie, cwd, ...pairs] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(sdkDir, "dist/esm", p)).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");

const out = (v) => process.stdout.write(JSON.stringify(v) + "\n");
const env = {};
for (const p of pairs) {
  const i = p.indexOf("=");
  env[p.slice(0, i)] = p.slice(i + 1);
}

const transport = new StdioClientTransport({ command: collie, args: ["mcp"], cwd, env, stderr: "pipe" });
let stderr = "";
transport.stderr?.on("data", (d) => { stderr += d; });
const client = new Client({ name: "ts-sdk-client", version: "1.32.2" });
try {
  await client.connect(transport);
} catch (e) {
  out({ ev: "connect-failed", message: String(e?.message ?? e), stderr });
  process.exit(0);
}
out({ ev: "init", server: client.getServerVersion(), capabilities: client.getServerCapabilities(),
  instructions: client.getInstructions(), protocol: transport.protocolVersion ?? null });

const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  const cmd = JSON.parse(line);
  if (cmd.op === "list") {
    const { tools } = await client.listTools();
    out({ ev: "tools", tools });
  } else if (cmd.op === "call") {
    const opts = {};
    if (cmd.progress) opts.onprogress = (p) => out({ ev: "progress", progress: p });
    if (cmd.timeoutMs) opts.timeout = cmd.timeoutMs;
    if (cmd.resetTimeoutOnProgress) opts.resetTimeoutOnProgress = true;
    try {
      const result = await client.callTool({ name: cmd.name, arguments: cmd.arguments }, undefined, opts);
      out({ ev: "result", result });
    } catch (e) {
      out({ ev: "error", code: e?.code ?? null, message: String(e?.message ?? e) });
    }
  } else if (cmd.op === "close") {
    await client.close();
    out({ ev: "closed", stderr });
    break;
  }
}
process.exit(0);
