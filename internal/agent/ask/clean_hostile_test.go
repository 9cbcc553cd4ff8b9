package ask

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/protocol/sanitize"
	"github.com/collie-linux/collie/internal/testkit/hostiletest"
)

const pwn = hostiletest.Pwn

// serveHostile answers every request on a private socket with reply.
func serveHostile(t *testing.T, reply string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ask-") // short: a socket path has 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "desk", "evil.sock")
	hostiletest.Serve(t, path, func(string) string { return reply })
	return path
}

// TestAskHostileAgentX1: what a hostile agent answers (its status line,
// its error body, the answer it relays, a broken JSON key) reaches the
// output of collie ask clean (X1).
func TestAskHostileAgentX1(t *testing.T) {
	answered := `{"question":"q1","conversation":"c","status":"answered","text":"yes` + `\u001b]0;pwned\u0007\u202e\nsecond=line","reason":"because \u001b[2J\u202e","optionIds":["yes"],"values":{"f":"v\u001b[31m\nf=forged"}}`
	tests := []struct {
		name, reply string
		args        []string
		exit        int
	}{
		{"X1_status_line", hostiletest.Reply("500 "+pwn, "", ""), []string{"--yes-no", "t"}, ExitError},
		{"X1_error_json", hostiletest.Reply("403 "+pwn, "", `{"error":{"code":"caller-refused","message":"no \u001b]0;pwned\u0007\u202e"}}`), []string{"--yes-no", "t"}, ExitError},
		{"X1_bad_json_key", hostiletest.Reply("200 OK", "", `{"status":"answered","\u001b]0;pwned\u0007\u202e":1}`), []string{"--yes-no", "t"}, ExitError},
		{"X1_header_line", "HTTP/1.1 200 OK\r\n" + pwn + "\r\n\r\n", []string{"--yes-no", "t"}, ExitError},
		{"X1_line_answer", hostiletest.Reply("200 OK", "", answered), []string{"--line", "t"}, ExitYes},
		{"X1_line_answer_json", hostiletest.Reply("200 OK", "", answered), []string{"--line", "--json", "t"}, ExitYes},
		{"X1_form_values", hostiletest.Reply("200 OK", "", answered), []string{"--form", "f=F", "t"}, ExitYes},
		{"X1_yes_no_reason", hostiletest.Reply("200 OK", "", answered), []string{"--yes-no", "t"}, ExitYes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := serveHostile(t, tt.reply)
			var out, errb bytes.Buffer
			code := Main(context.Background(), append([]string{"--socket", path}, tt.args...), Env{
				Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, Prog: "collie ask"})
			if code != tt.exit {
				t.Fatalf("exit %d, want %d\nstdout: %q\nstderr: %q", code, tt.exit, out.String(), errb.String())
			}
			for what, s := range map[string]string{"stdout": out.String(), "stderr": errb.String()} {
				if sanitize.Terminal(s) != s || strings.Contains(s, "pwned\x07") {
					t.Errorf("%s is not terminal-safe: %q", what, s)
				}
			}
			for _, l := range strings.Split(out.String(), "\n") {
				if strings.HasPrefix(l, "f=forged") || strings.HasPrefix(l, "second=line") {
					t.Errorf("a value forged an output line: %q", out.String())
				}
			}
		})
	}
}
