//go:build linux

package agentclients

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
)

// OpenCodeServer is a running `opencode serve` on loopback.
type OpenCodeServer struct {
	URL  string // http://127.0.0.1:PORT
	Proc *Process
}

// StartOpenCodeServe starts `opencode serve --hostname 127.0.0.1 --port
// 0` as the user (the config must have been written, OpenCodeConfig) and
// returns once it says where it listens, or when ctx ends.
func (s *Sandbox) StartOpenCodeServe(ctx context.Context, t testing.TB, apiURL string) (*OpenCodeServer, error) {
	p, err := s.Start(t, Offline(apiURL), Path(OpenCode), "serve", "--hostname", "127.0.0.1", "--port", "0")
	if err != nil {
		return nil, err
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(p.Stdout)
		for sc.Scan() {
			if _, url, ok := strings.Cut(sc.Text(), "listening on "); ok {
				found <- strings.TrimSpace(url)
				break
			}
		}
		close(found)
		_, _ = io.Copy(io.Discard, p.Stdout) // keep the pipe drained
	}()
	select {
	case url, ok := <-found:
		if !ok {
			p.Stop()
			return nil, fmt.Errorf("opencode serve ended without saying where it listens: %s", p.Stderr())
		}
		return &OpenCodeServer{URL: url, Proc: p}, nil
	case <-ctx.Done():
		p.Stop()
		return nil, fmt.Errorf("waiting for opencode serve to listen: %w", ctx.Err())
	}
}
