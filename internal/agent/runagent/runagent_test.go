//go:build linux

package runagent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

func startAgent(t *testing.T, name, sock string) *Agent {
	t.Helper()
	a, err := Start(context.Background(), Options{Name: name, Socket: sock, Title: "claude in ~/app", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestCloseConversationWithdraws_D1: when the child exits, the run's
// conversation is closed and a question still open in it is withdrawn,
// so its asker (the hook) is told at once; Stop removes the socket and,
// for a child cgroup, the cgroup.
func TestCloseConversationWithdraws_D1(t *testing.T) {
	dir, err := os.MkdirTemp("", "ra-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "desk", "r1.sock")
	a := startAgent(t, "r1", sock)
	t.Logf("protection: %s (%s)", a.Protection, a.Why)
	if _, err := Start(context.Background(), Options{Name: "r1", Socket: sock, Getenv: func(string) string { return "" }}); !errors.Is(err, ErrLive) {
		t.Fatalf("a second agent on a live socket: %v", err)
	}
	asked := make(chan wire.AskReply, 1)
	go func() {
		rep, err := a.board.Ask(context.Background(), &wire.AskRequest{RequestID: "ask-1", Kind: wire.AskYesNo, Title: "Deploy?"}, 30*time.Second)
		if err != nil {
			t.Error(err)
		}
		asked <- rep
	}()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for ; len(a.Snapshot().Spaces[0].Tabs[0].Conversations[0].Questions) == 0 && time.Now().Before(deadline); <-tick.C {
	}
	a.CloseConversation()
	if rep := <-asked; rep.Status != wire.StatusWithdrawn {
		t.Fatalf("the open question's asker got %+v, want withdrawn", rep)
	}
	c := a.Snapshot().Spaces[0].Tabs[0].Conversations[0]
	if c.ID != ConversationID || c.Title != "claude in ~/app" || !c.Closed || len(c.Questions) != 0 {
		t.Fatalf("the run's conversation after close: %+v", c)
	}
	cg := a.Cgroup
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the socket is left: %v", err)
	}
	if a.Protection == ChildCgroup {
		if _, err := os.Stat(filepath.Join(cgroup2Mount(), cg)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the child cgroup %s is left: %v", cg, err)
		}
		if now, _ := selfCgroup(); now == cg {
			t.Fatalf("still in the run's cgroup %s", cg)
		}
	}
}
