// Package agent is the group of the durable-agent side: the runtime a
// durable agent is built on and the local programs that ask one. Nothing
// here links the bridge (internal/bridge/...), so an agent built on it
// carries no bridge code with it.
//
//   - durable: the agent side of the protocol (socket activation, hello,
//     snapshot, ETags, the caller and token gates, the writes handed to an
//     App); durable/board is the reference agent's state, durable/grants
//     its "always allow" grants
//   - callercheck: the caller check (SO_PEERCRED, pidfds, the parent walk,
//     the agent's cgroup)
//   - runcmd: belt and starter commands in their own process groups
//   - ask: collie ask, the coding agents' clients (one row per client)
//     and the settings collie setup writes; ask/hook is the hook adapter
//     itself, which collie ask --hook and the hook program (cmd/collie-hook)
//     both run: it links neither collie ask's command line nor setup's
//     file formats, so the program that starts once per tool call stays
//     small
//   - mcpserver: collie mcp, whose tools ask over an agent's socket
//   - runagent, runrecord: collie run's agent and the note it keeps for
//     collie doctor
package agent
