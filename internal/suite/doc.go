// Package suite is the group of tests over the whole tree: end to end
// under a real systemd user manager (e2e), the real coding-agent clients
// (agentclients), the layering and the user-text rules (deps) and the
// cancel rule (cancelrule). Nothing imports them.
package suite
