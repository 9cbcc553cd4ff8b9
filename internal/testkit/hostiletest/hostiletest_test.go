package hostiletest

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestServe: each request gets the bytes chosen for its path, as they are.
func TestServe(t *testing.T) {
	dir, err := os.MkdirTemp("", "ht-") // short: a socket path has 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "desk", "a.sock")
	Serve(t, path, func(p string) string { return Reply("418 "+Pwn, "X-Evil: 1\r\n", p) })
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}}
	resp, err := hc.Get("http://agent/v1/hello")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Status != "418 "+Pwn || resp.Header.Get("X-Evil") != "1" || string(body) != "/v1/hello" {
		t.Fatalf("got %q %v %q", resp.Status, resp.Header, body)
	}
}
