//go:build linux

package agentclients

import "testing"

// TestCodex_CollieHook_D1 runs the real Codex CLI (codex exec) with the
// hooks collie setup codex writes and trusts, and a real durable agent:
// the card names the tool and its input, yes lets it run (a PreToolUse
// hook cannot allow; it does not object), no blocks it with the reason,
// and no answer, a frozen or absent agent, a missing or crashing collie
// block it (Codex runs the tool when a hook fails; the command's
// "|| exit 2" blocks instead). The row without the hook is the control.
func TestCodex_CollieHook_D1(t *testing.T) {
	Require(t, Codex)
	deny := "Denied by the user on a paired device through Collie: not on a Friday"
	rows := []collieRow{
		{name: "control: no hook, bypass runs the tool", mode: "bypass", act: "none", wantRan: true},
		{name: "yes runs it", mode: "bypass", hook: true, act: "yes", wantRan: true},
		{name: "no, bypass", mode: "bypass", hook: true, act: "no", wantInRes: deny},
		{name: "no, workspace-write", mode: "workspace-write", hook: true, act: "no", wantInRes: deny},
		{name: "no answer denies at the timeout", mode: "bypass", hook: true, act: "none", wantInRes: "No answer from the user within 5s; Collie denies by default"},
		{name: "agent frozen after asking", mode: "bypass", hook: true, act: "freeze", wantInRes: "Collie denies by default"},
		{name: "agent down", mode: "bypass", hook: true, act: "down", wantInRes: "cannot reach the agent"},
		{name: "collie missing", mode: "bypass", hook: true, act: "missing", wantInRes: "blocked"},
		{name: "collie crashes", mode: "bypass", hook: true, act: "crash", wantInRes: "blocked"},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			runCollieRow(t, tc, Codex)
		})
	}
}
