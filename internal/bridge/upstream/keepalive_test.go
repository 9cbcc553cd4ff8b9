//go:build linux

package upstream

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/agent/durable/durabletest"
	"github.com/collie-linux/collie/internal/linux/peercred"
	"github.com/collie-linux/collie/internal/linux/privsock"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// countedAgent is a reference agent on a private socket that counts the
// connections it accepts and reports each one's end.
type countedAgent struct {
	srv      *durable.Server
	accepted atomic.Int32
	ended    chan struct{} // one value per connection the client closed
}

type countingUnixListener struct {
	net.Listener
	a *countedAgent
}

func (l *countingUnixListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.a.accepted.Add(1)
	return &endConn{UnixConn: c.(*net.UnixConn), a: l.a}, nil
}

// endConn reports the first read that fails for another reason than a
// deadline (the server aborts its own background read with one): the
// client closed the connection.
type endConn struct {
	*net.UnixConn
	a    *countedAgent
	once atomic.Bool
}

func (c *endConn) Read(p []byte) (int, error) {
	n, err := c.UnixConn.Read(p)
	var ne net.Error
	if err != nil && !(errors.As(err, &ne) && ne.Timeout()) && c.once.CompareAndSwap(false, true) {
		c.a.ended <- struct{}{}
	}
	return n, err
}

func startCounted(t *testing.T, path, agent string) *countedAgent {
	t.Helper()
	l, err := privsock.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := durable.NewServer(wire.Hello{Agent: agent}, durabletest.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	s.SetSnapshot(&wire.Snapshot{Spaces: []wire.Space{{ID: "s", Title: agent, Tabs: []wire.Tab{}}}})
	a := &countedAgent{srv: s, ended: make(chan struct{}, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		s.ServeTransport(ctx, &countingUnixListener{Listener: l, a: a}, durable.Transport{Unchecked: true})
		close(done)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return a
}

// waitEnded waits for the agent to see a connection closed by the client.
func (a *countedAgent) waitEnded(t *testing.T, what string) {
	t.Helper()
	select {
	case <-a.ended:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: the kept connection was not closed within 5 s", what)
	}
}

// countingPeer is the real peer check, counted.
type countingPeer struct{ n atomic.Int32 }

func (p *countingPeer) check(c syscall.Conn, uid int) error {
	p.n.Add(1)
	return peercred.SameUser(c, uid)
}

// TestSocketKeepsConnectionAlive: reads over the Unix socket share one
// connection, and the listener's uid is read once for it (L3); the walk
// still runs before each read (T2: see TestSocketWalksBeforeEveryConnection
// and TestKeptConnectionWalkFails).
func TestSocketKeepsConnectionAlive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "desk", "a.sock")
	a := startCounted(t, path, "one")
	var peer countingPeer
	c := newSocket(path, os.Getuid(), peer.check)
	defer c.Close()
	ctx := context.Background()
	rd, err := c.Snapshot(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if r, err := c.Snapshot(ctx, rd.ETag); err != nil || !r.NotModified {
			t.Fatalf("read %d: %+v, %v", i, r, err)
		}
		if _, err := c.Hello(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := a.accepted.Load(); n != 1 {
		t.Errorf("41 requests made %d connections, want 1", n)
	}
	if n := peer.n.Load(); n != 1 {
		t.Errorf("L3 peer check ran %d times for one connection, want 1", n)
	}
	c.Close()
	a.waitEnded(t, "Close")
	if _, err := c.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	if n, p := a.accepted.Load(), peer.n.Load(); n != 2 || p != 2 {
		t.Errorf("after Close: %d connections, %d peer checks; want 2 and 2", n, p)
	}
}

// TestKeptConnectionWalkFails: a path that turns unsafe while a connection
// is kept fails the next request with the walk's exact reason and closes
// the kept connection at once (T3, T4: unreachable at once, no grace); a
// socket replaced by another at the same path is never reached over the
// connection kept to the old one (T2).
func TestKeptConnectionWalkFails(t *testing.T) {
	type env struct{ tmp, desk, path string }
	tests := []struct {
		name   string
		break_ func(t *testing.T, e env)
		want   func(e env) string
	}{
		{"T3_folder_mode_0755", func(t *testing.T, e env) { os.Chmod(e.desk, 0o755) },
			func(e env) string { return "the socket's folder " + e.desk + " has mode 0755, not 0700" }},
		{"T3_socket_mode_0666", func(t *testing.T, e env) { os.Chmod(e.path, 0o666) },
			func(e env) string { return "the socket has mode 0666, not 0600" }},
		{"T3_folder_above_0777", func(t *testing.T, e env) { os.Chmod(e.tmp, 0o777) },
			func(e env) string { return e.tmp + " has mode 0777, so group or others can write to it" }},
		{"T3_folder_swapped_for_symlink", func(t *testing.T, e env) {
			// The same folder, socket and all, now reached through a link.
			if err := os.Rename(e.desk, e.desk+".real"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(e.desk+".real", e.desk); err != nil {
				t.Fatal(err)
			}
		}, func(e env) string { return "socket-not-private: " + e.desk + " is a symlink" }},
		{"T3_socket_swapped_for_symlink", func(t *testing.T, e env) {
			if err := os.Rename(e.path, e.path+".real"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(e.path+".real", e.path); err != nil {
				t.Fatal(err)
			}
		}, func(e env) string { return "socket-not-private: " + e.path + " is a symlink" }},
		{"T4_socket_removed", func(t *testing.T, e env) { os.Remove(e.path) },
			func(e env) string { return "no socket at " + e.path }},
		{"T2_socket_replaced_by_another", func(t *testing.T, e env) {
			// Another listener's socket renamed over the path: it passes
			// the walk, but it is not the socket the connection was made to.
			other := filepath.Join(e.desk, "other.sock")
			startCounted(t, other, "two")
			if err := os.Rename(other, e.path); err != nil {
				t.Fatal(err)
			}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			e := env{tmp: tmp, desk: filepath.Join(tmp, "desk"), path: filepath.Join(tmp, "desk", "a.sock")}
			a := startCounted(t, e.path, "one")
			var peer countingPeer
			c := newSocket(e.path, os.Getuid(), peer.check)
			defer c.Close()
			ctx := context.Background()
			if _, err := c.Hello(ctx); err != nil {
				t.Fatal(err)
			}
			tt.break_(t, e)
			h, err := c.Hello(ctx)
			if tt.want == nil {
				if err != nil || h.Agent != "two" {
					t.Fatalf("after the swap: %+v, %v; want the new socket's agent", h, err)
				}
				a.waitEnded(t, "replaced socket")
				if n := peer.n.Load(); n != 2 {
					t.Fatalf("L3 peer check ran %d times, want once per connection (2)", n)
				}
				return
			}
			var u *Unreachable
			if !errors.As(err, &u) || u.Reason != tt.want(e) {
				t.Fatalf("err = %v, want Unreachable %q", err, tt.want(e))
			}
			a.waitEnded(t, "failed walk")
		})
	}
}

// TestKeptConnectionWalkCutsWaitingRead: a waiting read held on one
// connection is cut at once, with the walk's reason, when the walk before
// another request fails (T4: no grace, even for a read under way).
func TestKeptConnectionWalkCutsWaitingRead(t *testing.T) {
	tmp := t.TempDir()
	desk := filepath.Join(tmp, "desk")
	path := filepath.Join(desk, "a.sock")
	a := startCounted(t, path, "one")
	c := NewSocket(path, os.Getuid())
	defer c.Close()
	ctx := context.Background()
	rd, err := c.Snapshot(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.SnapshotWait(ctx, rd.ETag, time.Minute)
		done <- err
	}()
	// The waiting read holds one connection, so Hello opens a second: the
	// read has passed its walk and is on its way to the agent.
	for a.accepted.Load() < 2 {
		if _, err := c.Hello(ctx); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(desk, 0o755)
	want := "the socket's folder " + desk + " has mode 0755, not 0700"
	if _, err := c.Hello(ctx); err == nil || err.Error() != want {
		t.Fatalf("Hello: %v, want %q", err, want)
	}
	select {
	case err := <-done:
		var u *Unreachable
		if !errors.As(err, &u) || u.Reason != want {
			t.Fatalf("the waiting read ended with %v, want Unreachable %q", err, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting read was still held 5 s after the walk failed")
	}
}

// TestSocketWaitingRead: a waiting read over the real Unix socket comes
// back with the change and Waited (the timing is proven on synctest's
// clock by TestSnapshotWaitReference).
func TestSocketWaitingRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "desk", "a.sock")
	a := startCounted(t, path, "one")
	c := NewSocket(path, os.Getuid())
	defer c.Close()
	ctx := context.Background()
	rd, err := c.SnapshotWait(ctx, "", time.Minute)
	if err != nil || !rd.Waited {
		t.Fatalf("first read: %+v, %v; want Waited", rd, err)
	}
	done := make(chan Read, 1)
	go func() {
		r, err := c.SnapshotWait(ctx, rd.ETag, time.Minute)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	a.srv.SetSnapshot(&wire.Snapshot{Spaces: []wire.Space{{ID: "s", Title: "changed", Tabs: []wire.Tab{}}}})
	r := <-done
	if !r.Waited || r.NotModified || r.Snapshot.Spaces[0].Title != "changed" {
		t.Fatalf("read %+v, want the changed snapshot, Waited", r)
	}
}

// BenchmarkKeptAliveVsBare is the Unix socket's figure: one
// idle read by the bridge's client over a kept-alive connection (the T2
// walk before the request, the L3 peer check once for the connection,
// GET /v1/snapshot with If-None-Match, a 304) against a bare kept-alive
// GET→304 over the same socket to the same agent, side by side in one run.
// Each side's fastest run counts (the machine may be shared); x_bare is
// the ratio, budget 2, and x_bare_mean the ratio of the means.
func BenchmarkKeptAliveVsBare(b *testing.B) {
	path := startAgent(b, b.TempDir(), demo)
	ctx := context.Background()
	c := NewSocket(path, os.Getuid())
	defer c.Close()
	rd, err := c.Snapshot(ctx, "")
	if err != nil {
		b.Fatal(err)
	}
	bare := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
	defer bare.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodGet, "http://agent"+wire.SnapshotPath, nil)
	req.Header.Set(wire.VersionHeader, "1")
	req.Header.Set("If-None-Match", rd.ETag)
	var ours, theirs, oursSum, theirsSum time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		if r, err := c.Snapshot(ctx, rd.ETag); err != nil || !r.NotModified {
			b.Fatal(err, r.NotModified)
		}
		t1 := time.Now()
		resp, err := bare.Do(req)
		if err != nil || resp.StatusCode != http.StatusNotModified {
			b.Fatal(err)
		}
		resp.Body.Close()
		t2 := time.Now()
		ours, theirs = fastest(ours, t1.Sub(t0)), fastest(theirs, t2.Sub(t1))
		oursSum, theirsSum = oursSum+t1.Sub(t0), theirsSum+t2.Sub(t1)
		n++
	}
	b.ReportMetric(float64(ours)/float64(theirs), "x_bare")
	b.ReportMetric(float64(oursSum)/float64(theirsSum), "x_bare_mean")
	b.ReportMetric(float64(ours.Nanoseconds())/1e3, "collie_µs")
	b.ReportMetric(float64(theirs.Nanoseconds())/1e3, "bare_µs")
}

// fastest returns the shorter of best (0 for none yet) and d.
func fastest(best, d time.Duration) time.Duration {
	if best == 0 || d < best {
		return max(d, 1)
	}
	return best
}
