package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/bridge/upstream"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

const tok = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a6978"

func TestLoadTokensK5(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	write := func(t *testing.T, path, data string, mode os.FileMode) {
		t.Helper()
		os.WriteFile(path, []byte(data), mode)
		os.Chmod(path, mode)
	}
	t.Run("environment_wins", func(t *testing.T) {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "a.toml")
		write(t, cfg, "", 0o600)
		write(t, filepath.Join(dir, "a.env"), "COLLIE_TOKEN="+strings.Repeat("b", 40)+"\n", 0o600)
		got, err := loadTokens(&HTTPSConfig{}, cfg, env(map[string]string{"COLLIE_TOKEN": tok, "COLLIE_TOKEN_NEXT": strings.Repeat("c", 40)}))
		if err != nil || got.Current != tok || got.Next != strings.Repeat("c", 40) {
			t.Fatalf("tokens = %+v, %v", got, err)
		}
	})
	t.Run("env_file", func(t *testing.T) {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "a.toml")
		write(t, filepath.Join(dir, "a.env"), "# tokens\nexport COLLIE_TOKEN=\""+tok+"\"\n", 0o600)
		got, err := loadTokens(&HTTPSConfig{}, cfg, env(nil))
		if err != nil || got.Current != tok {
			t.Fatalf("tokens = %+v, %v", got, err)
		}
	})
	tests := []struct {
		name  string
		setup func(dir string) *HTTPSConfig
		want  string
	}{
		{"K5_env_file_0644", func(dir string) *HTTPSConfig {
			write(t, filepath.Join(dir, "a.env"), "COLLIE_TOKEN="+tok+"\n", 0o644)
			return &HTTPSConfig{}
		}, "can be read by others (mode 0644); fix it with: chmod 0600"},
		{"K5_config_with_token_0644", func(dir string) *HTTPSConfig {
			write(t, filepath.Join(dir, "a.toml"), "", 0o644)
			return &HTTPSConfig{Token: tok}
		}, "the config, which holds a token,"},
		{"K2_short_token", func(dir string) *HTTPSConfig {
			write(t, filepath.Join(dir, "a.toml"), "", 0o600)
			return &HTTPSConfig{Token: "short"}
		}, "COLLIE_TOKEN: the token is 5 bytes"},
		{"no_token", func(dir string) *HTTPSConfig { return &HTTPSConfig{} }, "there is no token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			c := tt.setup(dir)
			_, err := loadTokens(c, filepath.Join(dir, "a.toml"), env(nil))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), tok) {
				t.Fatal("K5: the error holds the token")
			}
		})
	}
}

func TestListenHTTPS(t *testing.T) {
	if _, _, err := listenHTTPS(&HTTPSConfig{Listen: "0.0.0.0:0"}); err == nil || !strings.Contains(err.Error(), "needs TLS") {
		t.Fatalf("K2 plain HTTP beyond loopback: err = %v", err)
	}
	l, url, err := listenHTTPS(&HTTPSConfig{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("url = %s", url)
	}
}

// TestRemoteTransport: the agent's token transport takes only its tokens,
// serves no local routes, and never offers always allow (K3, K6).
func TestRemoteTransport(t *testing.T) {
	srv, err := durable.NewServer(wire.Hello{Agent: "r"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "r.toml")
	os.WriteFile(cfg, nil, 0o600)
	t.Setenv("COLLIE_TOKEN", tok)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	tokens, err := loadTokens(&HTTPSConfig{Listen: "127.0.0.1:0"}, cfg, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	l, err := serveRemote(ctx, srv, Config{HTTPS: &HTTPSConfig{Listen: "127.0.0.1:0"}}, tokens, slog.New(slog.NewTextHandler(io.Discard, nil)), done)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); <-done }()
	url := "http://" + l.Addr().String()
	good, _ := upstream.NewHTTPS(url, tok, upstream.HTTPSOptions{})
	if _, err := good.Hello(ctx); err != nil {
		t.Fatalf("the right token: %v", err)
	}
	bad, _ := upstream.NewHTTPS(url, strings.Repeat("x", 40), upstream.HTTPSOptions{})
	var u *upstream.Unreachable
	if _, err := bad.Snapshot(ctx, ""); !errors.As(err, &u) || u.Reason != upstream.ReasonTokenRefused {
		t.Fatalf("K6 a wrong token: %v", err)
	}
	// The client sends only the registry's writes; the ask route is asked
	// for as a program on the network would, with the right token.
	for _, path := range []string{wire.AskPath, wire.RevokePath, wire.LocalOpenPath} {
		req, _ := http.NewRequestWithContext(ctx, "POST", url+path, strings.NewReader(`{"requestId":"x","kind":"line","title":"Q"}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set(wire.VersionHeader, "1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), wire.CodeNotFound) {
			t.Fatalf("K3 the local route %s over the token transport: %d %s, want 404", path, resp.StatusCode, body)
		}
	}
	if _, err := good.Write(ctx, wire.AskPath, &wire.SendRequest{Header: wire.Header{RequestID: "x"}, Conversation: "main", Text: "hi"}); !errors.Is(err, wire.ErrUnknownWrite) {
		t.Fatalf("the client sent a write to the ask route: %v", err)
	}
}
