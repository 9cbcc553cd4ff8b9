// Collie's OpenCode plugin (collie-plugin 1), written by `collie setup opencode`.
//
// Before OpenCode runs a tool that changes something or reaches out (a
// shell command, a file edit or write, a patch, a web fetch or search, an
// MCP tool), the plugin asks you on your phone through collie, and only a
// "yes" lets the tool run. Anything else denies the tool: a "no", no
// answer in time, collie missing, crashing or saying nothing, the agent
// down. OpenCode's own prompts for these tools ("permission": "ask" in
// opencode.json) are switched off while this plugin is loaded, so that
// your phone is asked instead; without the plugin OpenCode asks itself.
//
// Run `collie setup opencode` again rather than editing this file.
import { spawn } from "node:child_process";

const COLLIE = __COLLIE__;
const WAIT_SECONDS = __WAIT_SECONDS__;
// collie denies by itself WAIT_SECONDS + 3 s after it starts; the plugin
// stops waiting for it later still, and then denies too.
const DEADLINE_MS = __DEADLINE_MS__;
// The permissions this plugin answers in OpenCode's stead.
const GATED_PERMISSIONS = ["bash", "edit", "webfetch", "websearch"];
// Tools that only read, plan or delegate: they run without a question (a
// subagent's own tool calls come through this plugin one by one).
const UNGATED = new Set(["read", "glob", "grep", "list", "lsp", "todoread", "todowrite", "task", "skill",
  "question", "plan_enter", "plan_exit", "invalid", "list_mcp_resources", "list_mcp_resource_templates",
  "read_mcp_resource"]);

function askCollie(input, args, directory) {
  return new Promise((resolve) => {
    let settled = false;
    let timer;
    const done = (allow, reason) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ allow, reason });
    };
    let child;
    try {
      child = spawn(COLLIE, ["ask", "--hook", "opencode", "--timeout", WAIT_SECONDS + "s"],
        { stdio: ["pipe", "pipe", "pipe"] });
    } catch (err) {
      done(false, `Collie could not start ${COLLIE} (${err && err.message}); denied by default: run collie setup opencode again`);
      return;
    }
    timer = setTimeout(() => {
      try { child.kill("SIGKILL"); } catch {}
      done(false, `No decision from collie within ${DEADLINE_MS / 1000}s; denied by default`);
    }, DEADLINE_MS);
    let out = "";
    let errText = "";
    child.stdout.on("data", (d) => { if (out.length < 65536) out += d; });
    child.stderr.on("data", (d) => { if (errText.length < 4096) errText += d; });
    child.on("error", (err) => done(false, `Collie could not run ${COLLIE} (${err && err.message}); denied by default: run collie setup opencode again`));
    child.on("close", (code, signal) => {
      let v = null;
      try { v = JSON.parse(out.trim().split("\n").pop()); } catch {}
      if (code === 0 && v && v.decision === "allow") {
        done(true, String(v.reason || ""));
      } else if (v && typeof v.reason === "string" && v.reason !== "") {
        done(false, v.reason);
      } else {
        const how = signal ? "killed by " + signal : "exit status " + code;
        done(false, `collie ended without a decision (${how}${errText ? ": " + errText.trim() : ""}); denied by default`);
      }
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify({
      hook_event_name: "tool.execute.before",
      session_id: input.sessionID,
      tool_name: input.tool,
      tool_use_id: input.callID,
      tool_input: args ?? {},
      cwd: directory,
    }));
  });
}

export const CollieGate = async ({ directory }) => ({
  config: async (cfg) => {
    const answer = (p) => {
      if (!p || typeof p !== "object") return;
      for (const k of GATED_PERMISSIONS) {
        if (p[k] === "ask") {
          p[k] = "allow";
        } else if (p[k] && typeof p[k] === "object") {
          for (const pattern of Object.keys(p[k])) if (p[k][pattern] === "ask") p[k][pattern] = "allow";
        }
      }
    };
    if (!cfg) return;
    answer(cfg.permission);
    for (const a of Object.values(cfg.agent || {})) if (a) answer(a.permission);
  },
  "tool.execute.before": async (input, output) => {
    if (UNGATED.has(input.tool)) return;
    const v = await askCollie(input, output && output.args, directory);
    if (!v.allow) throw new Error(v.reason);
  },
});
