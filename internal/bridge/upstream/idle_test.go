//go:build linux

package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// rawAgent is an agent on a private Unix socket served by the test's own
// goroutine with blocking system calls, so that the goroutines and heap
// the test counts are the client's alone. It accepts n connections, reads
// one request from each (the client holds it as a waiting read), and
// answers them all "not modified" when told.
type rawAgent struct {
	path string
	lfd  int
	fds  []int
}

func newRawAgent(t *testing.T) *rawAgent {
	t.Helper()
	desk := filepath.Join(t.TempDir(), "desk")
	if err := os.Mkdir(desk, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(desk, "a.sock")
	lfd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(lfd, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(lfd, 1024); err != nil {
		t.Fatal(err)
	}
	a := &rawAgent{path: path, lfd: lfd}
	t.Cleanup(func() {
		for _, fd := range a.fds {
			unix.Close(fd)
		}
		unix.Close(lfd)
	})
	return a
}

// take accepts one connection and reads one request from it, whole.
func (a *rawAgent) take() error {
	fd, _, err := unix.Accept4(a.lfd, unix.SOCK_CLOEXEC)
	if err != nil {
		return fmt.Errorf("accept: %w", err)
	}
	a.fds = append(a.fds, fd)
	var req []byte
	buf := make([]byte, 4096)
	for !bytes.Contains(req, []byte("\r\n\r\n")) {
		n, err := unix.Read(fd, buf)
		if err != nil || n == 0 {
			return fmt.Errorf("read the request: %v (%d bytes)", err, n)
		}
		req = append(req, buf[:n]...)
	}
	return nil
}

// answer answers every request taken "not modified", marked as a wait
// honoured.
func (a *rawAgent) answer() {
	for i := range a.fds {
		a.answerOne(i)
	}
}

// answerOne answers the request taken on the i-th connection.
func (a *rawAgent) answerOne(i int) {
	unix.Write(a.fds[i], []byte("HTTP/1.1 304 Not Modified\r\nETag: \"e\"\r\n"+wire.WaitedHeader+": 60\r\n\r\n"))
}

// TestHeldReadsHoldNothingButTheirCaller_K8: a waiting read held at an
// agent over the Unix socket costs the bridge the goroutine that asked
// for it and the connection's descriptor, and no more than a few KiB of
// heap: no transport goroutines (net/http keeps two per connection) and no
// read or write buffer while the agent holds the read. At 1,000 idle
// agents, that is the difference between a light bridge and one of 3,000
// goroutines and 8 MiB of idle buffers.
func TestHeldReadsHoldNothingButTheirCaller_K8(t *testing.T) {
	const (
		n = 100
		// heapPerRead is the live heap a held read may keep, connection
		// and request included: far below net/http's 4 KiB read and 4 KiB
		// write buffer of each connection.
		heapPerRead = 4 << 10
	)
	a := newRawAgent(t)
	clients := make([]Waiter, n)
	for i := range clients {
		clients[i] = NewSocket(a.path, os.Getuid())
	}
	g0, h0 := runtime.NumGoroutine(), liveHeap()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, n)
	for _, c := range clients {
		go func() {
			_, err := c.SnapshotWait(ctx, `"e"`, time.Minute)
			done <- err
		}()
	}
	for range n {
		if err := a.take(); err != nil {
			t.Fatal(err)
		}
	}
	// Every read is at the agent; a client still between its write and
	// its wait for the reply would be counted as it will be held.
	g1, h1 := runtime.NumGoroutine(), liveHeap()
	perRead := float64(g1-g0) / n
	heap := float64(h1-h0) / n
	t.Logf("%d held reads: %.2f goroutines and %.0f bytes of heap each", n, perRead, heap)
	if perRead > 1.05 {
		t.Errorf("%.2f goroutines per held read, want 1 (the caller's)", perRead)
	}
	if heap > heapPerRead {
		t.Errorf("%.0f bytes of live heap per held read, want at most %d", heap, heapPerRead)
	}
	a.answer()
	for range n {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range clients {
		c.Close()
	}
}

// liveHeap is the live heap once garbage is collected.
func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestRequestBesideHeldReadKeepsNoSecondConnection_K8: a request sent
// while a waiting read is held (collie durable list's check, a device's
// write) connects anew, and closes that connection when it is done: the
// agent is left with one connection, the held read's, not two until an
// idle timeout (1,928 descriptors for 1,000 agents after one
// collie durable list). The held read's connection is the one kept.
func TestRequestBesideHeldReadKeepsNoSecondConnection_K8(t *testing.T) {
	a := newRawAgent(t)
	c := NewSocket(a.path, os.Getuid()).(*reader)
	defer c.Close()
	ctx := context.Background()
	held := make(chan error, 1)
	go func() {
		_, err := c.SnapshotWait(ctx, `"e"`, time.Minute)
		held <- err
	}()
	if err := a.take(); err != nil { // the held read, at the agent
		t.Fatal(err)
	}
	beside := make(chan error, 1)
	go func() {
		_, err := c.Snapshot(ctx, `"e"`)
		beside <- err
	}()
	if err := a.take(); err != nil {
		t.Fatal(err)
	}
	a.answerOne(1)
	if err := <-beside; err != nil {
		t.Fatal(err)
	}
	if n := openConns(c); n != 1 {
		t.Errorf("%d connections open to the agent after a request beside a held read, want 1 (the held read's)", n)
	}
	a.answerOne(0)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if n := openConns(c); n != 1 {
		t.Errorf("%d connections open once the held read returned, want 1 (kept for the next read)", n)
	}
}

// openConns is how many connections the socket client c has open.
func openConns(c *reader) int {
	s := c.hc.Transport.(*socketTransport)
	s.mu.Lock()
	p := s.cur
	s.mu.Unlock()
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// TestKeptConnectionClosedByAgentIsNotReused: a kept connection the agent
// closed while it was idle (its idle timeout) is found closed before it is
// used, and the read goes over a new one, without an error.
func TestKeptConnectionClosedByAgentIsNotReused(t *testing.T) {
	a := newRawAgent(t)
	c := NewSocket(a.path, os.Getuid())
	defer c.Close()
	ctx := context.Background()
	errc := make(chan error, 1)
	go func() {
		_, err := c.Snapshot(ctx, `"e"`)
		errc <- err
	}()
	if err := a.take(); err != nil {
		t.Fatal(err)
	}
	a.answer()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	unix.Close(a.fds[0]) // the agent's idle timeout
	a.fds = a.fds[:0]
	go func() {
		rd, err := c.Snapshot(ctx, `"e"`)
		if err == nil && !rd.NotModified {
			err = errors.New("not a 304")
		}
		errc <- err
	}()
	if err := a.take(); err != nil {
		t.Fatal(err)
	}
	a.answer()
	if err := <-errc; err != nil {
		t.Fatalf("the read after the agent closed the kept connection: %v", err)
	}
}

// TestSocketRepliesParsedWithoutTransport: the socket client reads the
// agent's replies itself (no net/http Transport): a chunked body is read
// whole and its connection kept; a reply that says Connection: close, or
// whose body is not read to its end, does not keep its connection; an
// informational reply before the answer is skipped; bytes after the reply
// close the connection; headers without end
// are refused once past 16 KiB, with a sentence that says so.
func TestSocketRepliesParsedWithoutTransport(t *testing.T) {
	const etag = "ETag: \"e2\"\r\n"
	tests := []struct {
		name  string
		reply string
		kept  bool   // the connection is kept for the next request
		err   string // in the error; "" for none
	}{
		{"chunked_body", "HTTP/1.1 200 OK\r\n" + etag + "Transfer-Encoding: chunked\r\n\r\nd\r\n{\"spaces\":[]}\r\n0\r\n\r\n", true, ""},
		{"content_length_body", "HTTP/1.1 200 OK\r\n" + etag + "Content-Length: 13\r\n\r\n{\"spaces\":[]}", true, ""},
		{"connection_close", "HTTP/1.1 304 Not Modified\r\n" + etag + "Connection: close\r\n\r\n", false, ""},
		{"informational_first", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 304 Not Modified\r\n" + etag + "\r\n", true, ""},
		{"trailing_space_in_body", "HTTP/1.1 200 OK\r\n" + etag + "Content-Length: 100\r\n\r\n{\"spaces\":[]}" + strings.Repeat(" ", 87), true, ""},
		{"body_over_the_cap_not_read", "HTTP/1.1 200 OK\r\n" + etag + "Content-Length: 5000000\r\n\r\n{", false, "cap"},
		{"bytes_after_the_reply", "HTTP/1.1 304 Not Modified\r\n" + etag + "\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", false, ""},
		{"endless_headers", "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-Pad: "+strings.Repeat("a", 90)+"\r\n", 700), false, "reply headers are longer than 16384 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newRawAgent(t)
			c := NewSocket(a.path, os.Getuid()).(*reader)
			defer c.Close()
			errc := make(chan error, 1)
			go func() {
				_, err := c.Snapshot(context.Background(), `"e"`)
				errc <- err
			}()
			if err := a.take(); err != nil {
				t.Fatal(err)
			}
			unix.Write(a.fds[0], []byte(tt.reply))
			err := <-errc
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("read: %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("read: %v, want an error saying %q", err, tt.err)
			}
			if n, want := openConns(c), map[bool]int{true: 1, false: 0}[tt.kept]; n != want {
				t.Errorf("%d connections open after the reply, want %d", n, want)
			}
		})
	}
}

// TestSocketBytesPastTheBufferNotTakenForTheNext: bytes an agent sends
// after its reply, past what the client's buffer read (a reply exactly
// 4 KiB long, then a forged one), are found on the socket before the
// connection is reused: the next read goes over a new connection and
// never takes them as its reply.
func TestSocketBytesPastTheBufferNotTakenForTheNext(t *testing.T) {
	a := newRawAgent(t)
	c := NewSocket(a.path, os.Getuid()).(*reader)
	defer c.Close()
	head := "HTTP/1.1 304 Not Modified\r\nETag: \"e\"\r\nX-Pad: "
	first := head + strings.Repeat("a", 4096-len(head)-4) + "\r\n\r\n"
	forged := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"
	replies := []string{first + forged, "HTTP/1.1 304 Not Modified\r\nETag: \"e\"\r\n\r\n"}
	for i, reply := range replies {
		type result struct {
			rd  Read
			err error
		}
		res := make(chan result, 1)
		go func() {
			rd, err := c.Snapshot(context.Background(), `"e"`)
			res <- result{rd, err}
		}()
		if err := a.take(); err != nil {
			t.Fatalf("read %d did not come on a new connection: %v", i+1, err)
		}
		unix.Write(a.fds[i], []byte(reply))
		if r := <-res; r.err != nil || !r.rd.NotModified {
			t.Fatalf("read %d: %+v, %v; want not modified (the forged reply was taken)", i+1, r.rd, r.err)
		}
	}
}
