//go:build linux

package agentclients

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/testkit/fakemodel"
)

// hostileText is tool input meant to fool the human reading the card: a
// terminal escape that colours text, bidi overrides that reverse it, and
// zero-width characters that hide in it.
const hostileText = "esc \x1b[31mRED\x1b[0m bidi \u202eevil\u202c zw a\u200bb\u200dc\ufeff end"

// hostileFor is the hostile line and the command's size for c. Claude
// Code refuses a Bash command with a control character itself, before
// any hook ("command contains control characters that would be hidden in
// the approval dialog"), so its line has no escape; Codex 0.169 cannot
// start a command of 100 KB (exec_command fails with E2BIG), so its
// command is 60 KB, still far past what a card shows.
func hostileFor(c Client) (line string, size int) {
	switch c {
	case Claude:
		return strings.ReplaceAll(hostileText, "\x1b", ""), 100 << 10
	case Codex:
		return hostileText, 60 << 10
	}
	return hostileText, 100 << 10
}

// hostileRunes are the characters of hostileText no card may show as is.
var hostileRunes = []string{"\x1b", "\u202e", "\u202c", "\u200b", "\u200d", "\ufeff"}

// TestBridge_HostileToolInput_X2_X3 has each real client's model call its
// shell tool with a command that is hostile on its first line and over
// 100 KB long, its last line appending "hidden-tail" to MARK. On the
// device API the card is cleaned (no escape, bidi or zero-width
// character), marked shortened, shows the tail in its rationale and its
// detail, and a yes runs the command exactly as the model gave it: the
// hostile bytes reach the file they are written to unchanged, and the
// tail runs.
func TestBridge_HostileToolInput_X2_X3(t *testing.T) {
	var clients []Client
	for _, c := range []Client{Claude, Codex, Gemini} {
		if Installed(c) {
			clients = append(clients, c)
		}
	}
	if len(clients) == 0 {
		Require(t, Claude)
	}
	b := newBridge(t)
	for _, c := range clients {
		t.Run(string(c), func(t *testing.T) {
			t.Parallel()
			runHostile(t, b.For(t), c)
		})
	}
}

func runHostile(t *testing.T, b *Bridge, c Client) {
	s := New(t)
	s.Env = append(s.Env, b.Env()...)
	collie := installCollie(t, s)
	mark := filepath.Join(s.Project, "MARK")
	out := filepath.Join(s.Project, "OUT")
	line, size := hostileFor(c)
	var cmd strings.Builder
	cmd.WriteString("printf '%s\\n' '" + line + "' > " + out + "\n")
	filler := ": " + strings.Repeat("x", 70) + "\n"
	for cmd.Len() < size {
		cmd.WriteString(filler)
	}
	cmd.WriteString("echo hidden-tail >> " + mark)
	call := callFor(c, "shell", mark)
	setCommand(call.turn.Call, c, cmd.String())
	api := fakemodel.Start([]fakemodel.Turn{call.turn, fakemodel.Say("all done")})
	defer api.Close()
	prepareClient(t, s, c, api.URL)
	setup(t, s, collie, string(c), hookWait)

	argv, env := clientArgv(c, api.URL, shellBypass[c], "make a mark")
	run := startClient(t, s, argv, env)
	tail := "echo hidden-tail >> " + mark
	card, ok := b.Card(tail, run.done)
	if !ok {
		var results []fakemodel.ToolResult
		if loop := api.TurnRequests(); len(loop) > 1 {
			results = loop[1].ToolResults()
		}
		t.Fatalf("the client ended before the card reached the device; the model got %.2000v\n%v", results, run.res)
	}
	for _, f := range []struct{ name, text string }{{"title", card.Title}, {"rationale", card.Rationale}, {"detail", card.Detail}} {
		for _, r := range hostileRunes {
			if strings.Contains(f.text, r) {
				t.Errorf("the card's %s shows %+q as is", f.name, r)
			}
		}
	}
	if !strings.Contains(card.Title, "Run: printf") || !strings.Contains(card.Title, "RED") {
		t.Errorf("the card's title %q does not name the command", card.Title)
	}
	if !card.Shortened {
		t.Errorf("the card is not marked shortened")
	}
	if !strings.Contains(card.Rationale, tail) || !strings.Contains(card.Rationale, "bytes not shown") {
		t.Errorf("the card's rationale does not show the tail after a cut mark: …%q", card.Rationale[max(0, len(card.Rationale)-300):])
	}
	if !strings.Contains(card.Detail, tail) || len(card.Detail) < size {
		t.Errorf("the card's detail (%d bytes) does not hold the whole command to its tail", len(card.Detail))
	}
	if status := b.Device.Answer(card, "yes", "", nil); status != 200 {
		t.Fatalf("the tap yes: %d", status)
	}
	res := run.wait()
	if got, err := os.ReadFile(out); err != nil || string(got) != line+"\n" {
		t.Errorf("the command's first line wrote %+q (%v), want %+q exactly\n%v", got, err, line+"\n", res)
	}
	if got, err := os.ReadFile(mark); err != nil || string(got) != "hidden-tail\n" {
		t.Errorf("the command's tail wrote %q (%v), want it run\n%v", got, err, res)
	}
}
