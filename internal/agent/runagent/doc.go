// Package runagent is collie run's durable agent: Collie's reference
// runtime (internal/agent/durable with a board) served in collie run's own
// process, with a private socket of its own, and the supervision of the
// command it runs (the coding agent) as its child.
//
// The agent runs in the same process as collie run, and the command is
// that process's child, so every tool the coding agent runs descends from
// the process that runs the caller check (C2): it refuses their answers
// with 403 caller-refused. Before the check is made the process moves
// into a cgroup of its own (see Contain), so a tool that double-forks is
// still told apart by its cgroup; and it is the child subreaper of its
// descendants, so such a tool is re-parented to it and stays in the
// family even where no cgroup could be had.
//
// What still escapes: a tool that asks the user manager for a unit of
// its own (systemd-run --user) is started by the manager, outside both
// the family and the cgroup; and the socket keeps no process of the user
// from asking (only answering is refused), nor from reaching the user's
// other doors (the bridge's control socket, collie pair). Child.Sandbox
// (collie run --sandbox) hides the user manager, other agents and the
// control socket from the command; see collie(1).
package runagent
