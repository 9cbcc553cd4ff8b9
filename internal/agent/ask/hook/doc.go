// Package hook is the coding agents' hook adapter: it reads a client's
// hook input (Claude Code's PreToolUse, Codex's, Gemini CLI's BeforeTool,
// collie's OpenCode plugin's), asks the user through a durable agent, and
// prints the client's decision, a deny on any failure (D1). One row per
// client (Adapters) holds every difference between them. collie ask
// --hook and the hook program, cmd/collie-hook, both run it; so do
// collie ask's questions, through the same client of the agent's socket.
//
// The hook program starts once per tool call, so this package links
// little: it speaks HTTP/1.1 to the agent's socket itself (http1.go), not
// through net/http, and leaves collie ask's command line, collie setup's
// file formats and the bridge's HTTPS to the ask package.
package hook
