//go:build linux

package agentclients

import (
	"testing"
)

// TestGemini_CollieHook_D1 runs the real Gemini CLI (yolo mode: every
// tool runs without asking; in the other modes gemini -p does not offer
// the shell tool at all) with the hook collie setup gemini writes and
// a real durable agent: the card names the tool and its input, yes runs
// it, no blocks it with the reason, and no answer, a frozen or absent
// agent, a missing or crashing collie block it, before Gemini's own hook
// timeout (which would let it run). The row without the hook is the
// control.
func TestGemini_CollieHook_D1(t *testing.T) {
	Require(t, Gemini)
	deny := "Denied by the user on a paired device through Collie: not on a Friday"
	rows := []collieRow{
		{name: "control: no hook, yolo runs the tool", mode: "yolo", act: "none", wantRan: true},
		{name: "yes runs it", mode: "yolo", hook: true, act: "yes", wantRan: true},
		{name: "no, yolo", mode: "yolo", hook: true, act: "no", wantInRes: deny},
		{name: "no answer denies at the timeout", mode: "yolo", hook: true, act: "none", wantInRes: "No answer from the user within 5s; Collie denies by default"},
		{name: "agent frozen after asking", mode: "yolo", hook: true, act: "freeze", wantInRes: "Collie denies by default"},
		{name: "agent down", mode: "yolo", hook: true, act: "down", wantInRes: "cannot reach the agent"},
		{name: "collie missing", mode: "yolo", hook: true, act: "missing", wantInRes: "Tool execution blocked"},
		// Gemini runs the tool when a hook dies of a signal; the command
		// setup writes ends in "|| exit 2", so the shell blocks instead.
		{name: "collie crashes", mode: "yolo", hook: true, act: "crash", wantInRes: "Tool execution blocked"},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			runCollieRow(t, tc, Gemini)
		})
	}
}
