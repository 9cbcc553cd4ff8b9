package sources

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// token is a test secret; no output may contain it.
const token = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

func TestCheckName(t *testing.T) {
	const rule = "use 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit"
	tests := []struct {
		name string
		want string // "" means valid
	}{
		{"desk", ""},
		{"a", ""},
		{"0", ""},
		{"app.v2_beta-1", ""},
		{strings.Repeat("a", 64), ""},
		{"", "a durable agent needs a name; " + rule},
		{strings.Repeat("a", 65), "a durable agent name of 65 bytes is too long; " + rule},
		{"Desk", `the durable agent name "Desk" is not allowed; ` + rule},
		{"-desk", `the durable agent name "-desk" is not allowed; ` + rule},
		{".desk", `the durable agent name ".desk" is not allowed; ` + rule},
		{"_desk", `the durable agent name "_desk" is not allowed; ` + rule},
		{"my desk", `the durable agent name "my desk" is not allowed; ` + rule},
		{"desk/1", `the durable agent name "desk/1" is not allowed; ` + rule},
		{"dé", `the durable agent name "dé" is not allowed; ` + rule},
		{"a\nb", `the durable agent name "a\nb" is not allowed; ` + rule},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("K5_%q", tt.name), func(t *testing.T) {
			checkErr(t, CheckName(tt.name), tt.want)
		})
	}
}

func TestSourceValidate(t *testing.T) {
	tests := []struct {
		name string
		src  Source
		want string
	}{
		{"T1_socket", Source{Name: "desk", Socket: "/run/user/1000/desk/app.sock"}, ""},
		{"K1_url_and_token", Source{Name: "cloud", URL: "https://agent.example.com", Token: token}, ""},
		{"K5_bad_name", Source{Name: "Desk", Socket: "/s"}, `the durable agent name "Desk" is not allowed; use 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit`},
		{"K5_both_transports", Source{Name: "x", Socket: "/s", URL: "https://a"}, "durable agent x has both a socket and a URL; keep one"},
		{"K5_no_transport", Source{Name: "x", Token: token}, "durable agent x has neither a socket nor a URL; give one"},
		{"T2_relative_socket", Source{Name: "x", Socket: "desk/app.sock"}, "durable agent x: the socket path desk/app.sock is not absolute; give the full path"},
		{"T2_nonclean_socket", Source{Name: "x", Socket: "/run/user/1000/x/../desk/a.sock"}, `durable agent x: the socket path /run/user/1000/x/../desk/a.sock is not in clean form; write it without "." or ".." parts and without doubled or trailing slashes, as the agent listens on it`},
		{"T2_trailing_slash_socket", Source{Name: "x", Socket: "/run/user/1000/desk/a.sock/"}, `durable agent x: the socket path /run/user/1000/desk/a.sock/ is not in clean form; write it without "." or ".." parts and without doubled or trailing slashes, as the agent listens on it`},
		{"T1_socket_with_token", Source{Name: "x", Socket: "/s", Token: token}, "durable agent x has a socket and a token, but a socket carries no token; remove the token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, tt.src.Validate(), tt.want)
		})
	}
}

func TestTransport(t *testing.T) {
	if got := (Source{Socket: "/s"}).Transport(); got != "socket" {
		t.Errorf("socket source: Transport() = %q", got)
	}
	if got := (Source{URL: "https://a"}).Transport(); got != "https" {
		t.Errorf("url source: Transport() = %q", got)
	}
}

func TestFileAddRemoveGet(t *testing.T) {
	var f File
	desk := Source{Name: "desk", Socket: "/run/user/1000/desk/app.sock"}
	cloud := Source{Name: "cloud", URL: "https://agent.example.com", Token: token}
	for _, s := range []Source{desk, cloud} {
		if err := f.Add(s); err != nil {
			t.Fatalf("Add(%v): %v", s, err)
		}
	}
	checkErr(t, f.Add(Source{Name: "desk", Socket: "/other"}),
		"a durable agent named desk is already attached; detach it first with: collie durable detach desk")
	checkErr(t, f.Add(Source{Name: "bad name", Socket: "/s"}),
		`the durable agent name "bad name" is not allowed; use 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit`)

	if got, ok := f.Get("cloud"); !ok || got != cloud {
		t.Errorf("Get(cloud) = %v, %v", got, ok)
	}
	if _, ok := f.Get("nope"); ok {
		t.Error("Get(nope) found something")
	}

	checkErr(t, f.Remove("nope"), "no durable agent named nope is attached; see: collie durable list")
	checkErr(t, f.Remove("desk"), "")
	if _, ok := f.Get("desk"); ok {
		t.Error("desk still attached after Remove")
	}
	if len(f.Sources) != 1 || f.Sources[0] != cloud {
		t.Errorf("after Remove: %v", f.Sources)
	}
}

// TestTokenNeverPrinted prints a Source every way Go offers and checks that
// the token never shows (K5).
func TestTokenNeverPrinted(t *testing.T) {
	s := Source{Name: "cloud", URL: "https://agent.example.com", Token: token}
	f := File{Version: Version, Sources: []Source{s, {Name: "desk", Socket: "/run/d/s"}}}
	type wrapper struct{ Src Source }

	outputs := map[string]string{
		"String":       s.String(),
		"GoString":     s.GoString(),
		"%v":           fmt.Sprintf("%v", s),
		"%+v":          fmt.Sprintf("%+v", s),
		"%#v":          fmt.Sprintf("%#v", s),
		"%s":           fmt.Sprintf("%s", s),
		"%q":           fmt.Sprintf("%q", s),
		"%x":           fmt.Sprintf("%x", s),
		"%X":           fmt.Sprintf("%X", s),
		"%d":           fmt.Sprintf("%d", s),
		"%80s":         fmt.Sprintf("%80s", s),
		"%v pointer":   fmt.Sprintf("%v", &s),
		"%+v pointer":  fmt.Sprintf("%+v", &s),
		"%#v pointer":  fmt.Sprintf("%#v", &s),
		"Sprint":       fmt.Sprint(s),
		"Sprintln":     fmt.Sprintln(s, &s),
		"%v slice":     fmt.Sprintf("%v", f.Sources),
		"%+v file":     fmt.Sprintf("%+v", f),
		"%#v file":     fmt.Sprintf("%#v", f),
		"%v file ptr":  fmt.Sprintf("%v", &f),
		"%+v wrapper":  fmt.Sprintf("%+v", wrapper{s}),
		"%#v wrapper":  fmt.Sprintf("%#v", wrapper{s}),
		"%v map":       fmt.Sprintf("%v", map[string]Source{"k": s}),
		"%v any":       fmt.Sprintf("%v", []any{s}),
		"error %w":     fmt.Errorf("attach %v: %w", s, errors.New("x")).Error(),
		"slog text":    logLine(slog.NewTextHandler, s),
		"slog json":    logLine(slog.NewJSONHandler, s),
		"Validate err": Source{Name: "x", Socket: "/s", Token: token}.Validate().Error(),
	}
	hexToken := hex.EncodeToString([]byte(token))
	for how, out := range outputs {
		low := strings.ToLower(out)
		if strings.Contains(out, token) || strings.Contains(low, hexToken) || strings.Contains(out, token[:16]) {
			t.Errorf("K5_token_never_printed: %s shows the token: %s", how, out)
		}
	}

	for how, want := range map[string]string{
		"String": "cloud: https://agent.example.com (token set)",
		"%v":     "cloud: https://agent.example.com (token set)",
		"%+v":    "{Name:cloud Socket: URL:https://agent.example.com Token:(token set)}",
		"%#v":    `sources.Source{Name:"cloud", Socket:"", URL:"https://agent.example.com", Token:(token set)}`,
		"%q":     `"cloud: https://agent.example.com (token set)"`,
	} {
		if outputs[how] != want {
			t.Errorf("%s = %s, want %s", how, outputs[how], want)
		}
	}
	if got, want := (Source{Name: "desk", Socket: "/run/d/s"}).String(), "desk: socket /run/d/s"; got != want {
		t.Errorf("socket String() = %q, want %q", got, want)
	}
	if got, want := (Source{Name: "c", URL: "https://a"}).String(), "c: https://a (no token)"; got != want {
		t.Errorf("tokenless String() = %q, want %q", got, want)
	}
	if !strings.Contains(outputs["slog json"], `"token":"(token set)"`) {
		t.Errorf("slog json = %s, want the token noted as set", outputs["slog json"])
	}
}

func logLine[H slog.Handler](newHandler func(w io.Writer, opts *slog.HandlerOptions) H, s Source) string {
	var buf bytes.Buffer
	slog.New(newHandler(&buf, nil)).Info("attached", "source", s)
	return buf.String()
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("error = %q, want none", err)
	case want != "" && err == nil:
		t.Errorf("no error, want %q", want)
	case want != "" && err.Error() != want:
		t.Errorf("error\n got: %s\nwant: %s", err, want)
	}
}
