package control

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type revokeBackend struct {
	Backend
	revoked chan string
}

func (b revokeBackend) Revoke(id string) error { b.revoked <- id; return nil }

// privateSocket returns a socket path in a folder of mode 0700 (T3).
func privateSocket(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "control.sock")
}

// TestControlRequestStrict: the control socket reads its
// request bodies exact-case, with no name twice and no unknown field.
func TestControlRequestStrict(t *testing.T) {
	path := privateSocket(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := Listen(path, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := revokeBackend{revoked: make(chan string, 1)}
	go Serve(ctx, l, b, log)
	c := NewClient(path)
	for _, tc := range []struct{ body, want string }{
		{`{"ID":"d1"}`, `unknown field "ID"`},
		{`{"id":"d1","id":"d2"}`, "appears twice"},
		{`{"id":"d1","all":true}`, `unknown field "all"`},
		{"{\"id\":\"d\xff\"}", "not valid UTF-8"},
		{`{"id":"d1"}{"id":"d2"}`, "data after"},
	} {
		err := c.doBody(ctx, http.MethodPost, revokePath, []byte(tc.body), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("revoke %q: err = %v, want %q", tc.body, err, tc.want)
		}
	}
	if err := c.Revoke(ctx, "d1"); err != nil {
		t.Fatal(err)
	}
	if id := <-b.revoked; id != "d1" {
		t.Fatalf("revoked %q, want d1", id)
	}
}

// TestControlReplyStrict: the client reads the daemon's replies by the same
// rules, so a reply in another case is refused, not half-read.
func TestControlReplyStrict(t *testing.T) {
	path := privateSocket(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := Listen(path, log)
	if err != nil {
		t.Fatal(err)
	}
	body := make(chan string, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, <-body) })}
	go srv.Serve(l)
	defer srv.Close()
	c := NewClient(path)
	for _, tc := range []struct{ reply, want string }{
		{`[{"Name":"a"}]`, `unknown field "Name"`},
		{`[{"name":"a","name":"b"}]`, "appears twice"},
		{`[{"name":"a"}] []`, "data after"},
	} {
		body <- tc.reply
		_, err := c.Agents(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("reply %q: err = %v, want %q", tc.reply, err, tc.want)
		}
	}
}
