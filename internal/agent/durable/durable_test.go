package durable

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

func testServer(t *testing.T) (*Server, *http.Client, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "desk")
	path := filepath.Join(dir, "a.sock")
	l, activated, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	if activated {
		t.Fatal("activated without LISTEN_FDS")
	}
	s, err := NewServer(wire.Hello{Agent: "a"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
	return s, hc, path
}

func get(t *testing.T, hc *http.Client, path string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://agent"+path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestListenOwnSocketT5(t *testing.T) {
	_, _, path := testServer(t)
	fi, err := os.Lstat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("T5 folder mode = %v, want 0700", fi.Mode().Perm())
	}
	fi, err = os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Errorf("T5 socket mode = %v, want socket 0600", fi.Mode())
	}
}

func TestListenRefusesT5(t *testing.T) {
	t.Run("T5_folder_with_other_mode", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "desk")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chmod(dir, 0o755)
		_, _, err := Listen(filepath.Join(dir, "a.sock"))
		want := "the socket's folder " + dir + " has mode 0755, not 0700"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want %q", err, want)
		}
		if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o755 {
			t.Fatal("the folder's mode was changed; it must be refused, not fixed")
		}
	})
	t.Run("T5_stale_socket_removed", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "desk")
		os.Mkdir(dir, 0o700)
		path := filepath.Join(dir, "a.sock")
		old, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		old.(*net.UnixListener).SetUnlinkOnClose(false)
		old.Close() // leaves the file, with nobody listening
		l, _, err := Listen(path)
		if err != nil {
			t.Fatalf("a stale socket was not replaced: %v", err)
		}
		l.Close()
	})
	t.Run("T5_live_socket_kept", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "desk")
		os.Mkdir(dir, 0o700)
		path := filepath.Join(dir, "a.sock")
		live, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		defer live.Close()
		_, _, err = Listen(path)
		if err == nil || !strings.Contains(err.Error(), "already listening") {
			t.Fatalf("err = %v, want a refusal to take over a live socket", err)
		}
	})
	t.Run("T5_not_a_socket", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "desk")
		os.Mkdir(dir, 0o700)
		path := filepath.Join(dir, "a.sock")
		os.WriteFile(path, []byte("keep me"), 0o600)
		_, _, err := Listen(path)
		if err == nil || !strings.Contains(err.Error(), "is not a socket") {
			t.Fatalf("err = %v", err)
		}
		if b, _ := os.ReadFile(path); string(b) != "keep me" {
			t.Fatal("a file that is not a socket was removed")
		}
	})
	t.Run("T2_relative_path", func(t *testing.T) {
		if _, _, err := Listen("desk/a.sock"); err == nil || !strings.Contains(err.Error(), "not absolute") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestSnapshotETag(t *testing.T) {
	s, hc, _ := testServer(t)
	resp, body := get(t, hc, wire.HelloPath, nil)
	if resp.StatusCode != 200 || !strings.Contains(body, `"protocol":1`) || resp.Header.Get(wire.VersionHeader) != "1" {
		t.Fatalf("hello: %d %s %v", resp.StatusCode, body, resp.Header)
	}
	snap := &wire.Snapshot{Spaces: []wire.Space{{ID: "s", Title: "one"}}}
	if err := s.SetSnapshot(snap); err != nil {
		t.Fatal(err)
	}
	resp, body = get(t, hc, wire.SnapshotPath, nil)
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || !strings.Contains(body, `"one"`) || !strings.HasPrefix(etag, `"`) {
		t.Fatalf("snapshot: %d %q etag %q", resp.StatusCode, body, etag)
	}
	resp, body = get(t, hc, wire.SnapshotPath, map[string]string{"If-None-Match": etag})
	if resp.StatusCode != http.StatusNotModified || body != "" {
		t.Fatalf("unchanged snapshot: %d %q, want 304 and no body", resp.StatusCode, body)
	}
	snap.Spaces[0].Title = "two"
	s.SetSnapshot(snap)
	resp, body = get(t, hc, wire.SnapshotPath, map[string]string{"If-None-Match": etag})
	if resp.StatusCode != 200 || !strings.Contains(body, `"two"`) || resp.Header.Get("ETag") == etag {
		t.Fatalf("changed snapshot: %d %q", resp.StatusCode, body)
	}
	resp, body = get(t, hc, wire.SnapshotPath, map[string]string{wire.VersionHeader: "2"})
	if resp.StatusCode != 400 || !strings.Contains(body, wire.CodeProtocol) {
		t.Fatalf("protocol 2: %d %q", resp.StatusCode, body)
	}
}

func TestSetSnapshotOverCap(t *testing.T) {
	s, err := NewServer(wire.Hello{Agent: "a"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	before := s.snaps[0].etag
	big := &wire.Snapshot{Starters: []wire.Starter{{ID: "x", Label: strings.Repeat("a", wire.SnapshotCap)}}}
	if err := s.SetSnapshot(big); err == nil {
		t.Fatal("X4: a snapshot over 4 MiB was accepted")
	}
	if s.snaps[0].etag != before {
		t.Fatal("a refused snapshot replaced the previous one")
	}
}
