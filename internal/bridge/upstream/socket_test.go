package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/linux/privsock"
	"github.com/collie-linux/collie/internal/protocol/wire"
	"github.com/collie-linux/collie/internal/testkit/testenv"
)

func TestMain(m *testing.M) {
	// Child mode: listen on a socket as another user (see TestPeerNotOurs).
	if path := os.Getenv("UPSTREAM_TEST_LISTEN"); path != "" {
		l, err := net.Listen("unix", path)
		if err != nil {
			fmt.Println("listen:", err)
			os.Exit(1)
		}
		fmt.Println("listening")
		http.Serve(l, http.NotFoundHandler())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startAgent serves a real durable agent on a private socket under dir.
func startAgent(t testing.TB, dir string, snap *wire.Snapshot) string {
	t.Helper()
	path := filepath.Join(dir, "desk", "a.sock")
	l, err := privsock.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := durable.NewServer(wire.Hello{Agent: "agent\u202e"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if snap != nil {
		if err := srv.SetSnapshot(snap); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx, l); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return path
}

// serveRaw serves any handler on a private socket, for misbehaving agents.
func serveRaw(t *testing.T, h http.Handler) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "desk", "raw.sock")
	l, err := privsock.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return path
}

var demo = &wire.Snapshot{Spaces: []wire.Space{{ID: "s", Title: "Space\u0007", Tabs: []wire.Tab{{ID: "t", Title: "Tab",
	Conversations: []wire.Conversation{{ID: "c", Title: "Conv", Questions: []wire.Question{{ID: "q1", Kind: wire.AskYesNo, Title: "Deploy?", Revision: 1}}}}}}}}}

func TestSocketReads(t *testing.T) {
	path := startAgent(t, t.TempDir(), demo)
	c := NewSocket(path, os.Getuid())
	ctx := context.Background()
	h, err := c.Hello(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h.Agent != "agent" {
		t.Errorf("X1 hello not cleaned: %q", h.Agent)
	}
	rd, err := c.Snapshot(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if rd.NotModified || rd.ETag == "" || rd.Snapshot.Spaces[0].Title != "Space" {
		t.Fatalf("first read = %+v", rd)
	}
	rd2, err := c.Snapshot(ctx, rd.ETag)
	if err != nil {
		t.Fatal(err)
	}
	if !rd2.NotModified || rd2.Snapshot != nil || rd2.ETag != rd.ETag {
		t.Fatalf("K7 second read with ETag = %+v, want 304", rd2)
	}
}

// TestSocketWalksBeforeEveryConnection: a path that turns unsafe between two
// polls is refused on the next one, with the exact reason (T2, T3, T4).
func TestSocketWalksBeforeEveryConnection(t *testing.T) {
	tmp := t.TempDir()
	path := startAgent(t, tmp, demo)
	desk := filepath.Dir(path)
	c := NewSocket(path, os.Getuid())
	ctx := context.Background()
	if _, err := c.Snapshot(ctx, ""); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name   string
		break_ func()
		mend   func()
		want   string
	}{
		{"T3_folder_0755", func() { os.Chmod(desk, 0o755) }, func() { os.Chmod(desk, 0o700) },
			"the socket's folder " + desk + " has mode 0755, not 0700"},
		{"T3_socket_0666", func() { os.Chmod(path, 0o666) }, func() { os.Chmod(path, 0o600) },
			"the socket has mode 0666, not 0600"},
		{"T3_folder_above_0777", func() { os.Chmod(tmp, 0o777) }, func() { os.Chmod(tmp, 0o700) },
			tmp + " has mode 0777, so group or others can write to it"},
		{"T4_no_socket", func() { os.Rename(path, path+".x") }, func() { os.Rename(path+".x", path) },
			"no socket at " + path},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			s.break_()
			_, err := c.Snapshot(ctx, "")
			s.mend()
			var u *Unreachable
			if !errors.As(err, &u) || u.Reason != s.want {
				t.Fatalf("err = %v, want Unreachable %q", err, s.want)
			}
			if _, err := c.Snapshot(ctx, ""); err != nil {
				t.Fatalf("after mending: %v", err)
			}
		})
	}
	t.Run("T3_symlink", func(t *testing.T) {
		link := filepath.Join(tmp, "link.sock")
		if err := os.Symlink(path, link); err != nil {
			t.Fatal(err)
		}
		_, err := NewSocket(link, os.Getuid()).Snapshot(ctx, "")
		want := "socket-not-private: " + link + " is a symlink"
		if err == nil || err.Error() != want {
			t.Fatalf("err = %v, want %q", err, want)
		}
	})
}

func TestSocketBadReplies(t *testing.T) {
	tests := []struct {
		name string
		h    http.HandlerFunc
		want string
	}{
		{"X4_snapshot_over_4MiB", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"spaces":[],"x":"`))
			chunk := []byte(strings.Repeat("a", 64<<10))
			for i := 0; i < 5*16; i++ { // 5 MiB, no Content-Length
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}, "over its size cap"},
		{"broken_json", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"spaces": [`)) }, "broken JSON"},
		{"error_reply_cleaned", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(500)
			w.Write(wire.ErrorJSON("boom", "it \x1b[2Jbroke"))
		}, "the agent answered 500 Internal Server Error: boom: it [2Jbroke"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := serveRaw(t, tt.h)
			_, err := NewSocket(path, os.Getuid()).Snapshot(context.Background(), "")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestPeerNotOurs: a socket whose file looks private but whose listener runs
// as another user is refused after connecting (L3).
func TestPeerNotOurs(t *testing.T) {
	testenv.RequireRoot(t, "run a listener as another user")
	dir := filepath.Join(openDir(t), "desk")
	os.Mkdir(dir, 0o777)
	os.Chmod(dir, 0o777)
	path := filepath.Join(dir, "a.sock")
	cmd := exec.Command(copyForOthers(t, os.Args[0]), "-test.run=^$")
	cmd.Env = append(os.Environ(), "UPSTREAM_TEST_LISTEN="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	buf := make([]byte, 64)
	n, _ := out.Read(buf)
	if !strings.Contains(string(buf[:n]), "listening") {
		t.Fatalf("child: %q", buf[:n])
	}
	// Make the file side look private: only the listener is someone else.
	os.Chown(path, 0, 0)
	os.Chmod(path, 0o600)
	os.Chmod(dir, 0o700)
	deadline := time.Now().Add(5 * time.Second)
	var lastErr error
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for ; time.Now().Before(deadline); <-tick.C {
		_, lastErr = NewSocket(path, 0).Hello(context.Background())
		if lastErr != nil && strings.Contains(lastErr.Error(), "the socket's listener is not you") {
			return
		}
	}
	t.Fatalf("L3: err = %v, want the listener refused", lastErr)
}

// BenchmarkPoll304 is one idle poll: the T2 walk, a new connection, the
// peer check, GET /v1/snapshot with If-None-Match and a 304.
func BenchmarkPoll304(b *testing.B) {
	path := startAgent(b, b.TempDir(), demo)
	c := NewSocket(path, os.Getuid())
	ctx := context.Background()
	rd, err := c.Snapshot(ctx, "")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		r, err := c.Snapshot(ctx, rd.ETag)
		if err != nil || !r.NotModified {
			b.Fatal(err, r.NotModified)
		}
	}
}

// copyForOthers copies the test binary where another user can run it: the
// build cache's folders are private.
func copyForOthers(t *testing.T, bin string) string {
	t.Helper()
	dir := openDir(t)
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "child")
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

// openDir is a temporary folder other users can reach.
func openDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "upstream-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	return dir
}
