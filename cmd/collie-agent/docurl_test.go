package main

import (
	"context"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/bridge/upstream"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// TestDocsAttachURLsServed: every example of `collie durable attach NAME
// --url URL` in README.md, the man pages and docs/ names an address the
// agent serves: the bridge's own client, given the example's path on a
// real collie-agent token transport, says hello. README's example once
// had a path (/collie) where the agent serves nothing.
func TestDocsAttachURLsServed(t *testing.T) {
	files := []string{"../../README.md"}
	for _, glob := range []string{"../../man/*.md", "../../docs/*.md"} {
		more, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, more...)
	}
	example := regexp.MustCompile(`durable attach [A-Za-z0-9_.-]+ --url (\S+)`)
	srv, err := durable.NewServer(wire.Hello{Agent: "build"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	l, err := serveRemote(ctx, srv, Config{HTTPS: &HTTPSConfig{Listen: "127.0.0.1:0"}}, durable.Tokens{Current: tok}, slog.New(slog.NewTextHandler(io.Discard, nil)), done)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); <-done }()
	found := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range example.FindAllStringSubmatch(string(data), -1) {
			found++
			u, err := url.Parse(m[1])
			if err != nil {
				t.Errorf("%s: the example URL %s does not parse: %v", f, m[1], err)
				continue
			}
			// The example's path on the real agent, over loopback.
			c, err := upstream.NewHTTPS("http://"+l.Addr().String()+u.EscapedPath(), tok, upstream.HTTPSOptions{})
			if err != nil {
				t.Errorf("%s: %s: %v", f, m[1], err)
				continue
			}
			if _, err := c.Hello(ctx); err != nil {
				t.Errorf("%s: the example --url %s has the path %q, where collie-agent serves nothing (it serves the protocol at the root): %v", f, m[1], u.Path, err)
			}
		}
	}
	if found == 0 {
		t.Fatal("no durable attach --url example found; the search is broken")
	}
}
