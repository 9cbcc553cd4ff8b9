package peercred

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// otherUID is the user the child process drops to: nobody.
const otherUID = 65534

// dialEnv makes the test binary a child that dials the socket it names,
// reads until the other end closes, and prints "closed".
const dialEnv = "PEERCRED_TEST_DIAL"

func TestMain(m *testing.M) {
	if path := os.Getenv(dialEnv); path != "" {
		os.Exit(dialChild(path))
	}
	os.Exit(m.Run())
}

func dialChild(path string) int {
	c, err := net.Dial("unix", path)
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 2
	}
	defer c.Close()
	os.Stdout.WriteString("connected\n")
	if _, err := io.Copy(io.Discard, c); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		os.Stderr.WriteString(err.Error() + "\n")
		return 3
	}
	os.Stdout.WriteString("closed\n")
	return 0
}

func TestGet(t *testing.T) {
	self := Cred{PID: int32(os.Getpid()), UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}

	t.Run("L3_accepted_connection_is_own_process", func(t *testing.T) {
		client, server := unixPair(t)
		for name, c := range map[string]*net.UnixConn{"accepted": server, "dialed": client} {
			got, err := Get(c)
			if err != nil {
				t.Fatalf("%s: Get: %v", name, err)
			}
			if got != self {
				t.Errorf("%s: Get = %+v, want %+v", name, got, self)
			}
		}
	})

	t.Run("L3_socketpair", func(t *testing.T) {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, fd := range fds {
			f := os.NewFile(uintptr(fd), "socketpair")
			c, err := net.FileConn(f) // dups fd, so f can go
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			got, err := Get(c.(*net.UnixConn))
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if got != self {
				t.Errorf("Get = %+v, want %+v", got, self)
			}
		}
	})

	t.Run("L3_tcp_refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// Linux would answer user 65534 with no process: that must not pass
		// as a peer running as nobody.
		_, err = Get(c.(*net.TCPConn))
		if err == nil || !strings.Contains(err.Error(), "peer credentials need a Unix socket") {
			t.Fatalf("Get(tcp) = %v, want a Unix-socket error", err)
		}
	})

	t.Run("L3_unconnected_datagram_refused", func(t *testing.T) {
		c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(t.TempDir(), "g"), Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, err = Get(c)
		if err == nil || !strings.Contains(err.Error(), "need a Unix stream socket") {
			t.Fatalf("Get(unixgram) = %v, want a stream-socket error", err)
		}
	})

	t.Run("L3_closed_connection", func(t *testing.T) {
		client, _ := unixPair(t)
		client.Close()
		if _, err := Get(client); err == nil {
			t.Fatal("Get on a closed connection succeeded")
		}
	})
}

func TestSameUser(t *testing.T) {
	t.Run("L3_same_user_accepted", func(t *testing.T) {
		client, server := unixPair(t)
		if err := SameUser(server, os.Getuid()); err != nil {
			t.Errorf("SameUser(accepted) = %v", err)
		}
		if err := SameUser(client, os.Getuid()); err != nil {
			t.Errorf("SameUser(dialed) = %v", err)
		}
	})

	t.Run("L3_uid_mismatch_message", func(t *testing.T) {
		_, server := unixPair(t)
		want := "the peer runs as user " + itoa(os.Getuid()) + ", not 1001"
		if err := SameUser(server, 1001); err == nil || err.Error() != want {
			t.Errorf("SameUser = %v, want %q", err, want)
		}
	})

	t.Run("L3_other_user_refused", func(t *testing.T) {
		requireRoot(t)
		dir, exe := sharedDir(t)
		l := listenShared(t, filepath.Join(dir, "s"))
		child := startChild(t, exe, filepath.Join(dir, "s"))

		c, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		cred, err := Get(c.(*net.UnixConn))
		if err != nil {
			t.Fatal(err)
		}
		want := Cred{PID: int32(child.cmd.Process.Pid), UID: otherUID, GID: otherUID}
		if cred != want {
			t.Errorf("Get = %+v, want %+v", cred, want)
		}
		err = SameUser(c.(*net.UnixConn), os.Getuid())
		if wantErr := "the peer runs as user 65534, not " + itoa(os.Getuid()); err == nil || err.Error() != wantErr {
			t.Errorf("SameUser = %v, want %q", err, wantErr)
		}
		c.Close()
		child.wait(t)
	})
}

func TestListener(t *testing.T) {
	t.Run("L3_other_user_refused_then_serves", func(t *testing.T) {
		requireRoot(t)
		dir, exe := sharedDir(t)
		path := filepath.Join(dir, "s")
		type refusal struct {
			cred Cred
			err  error
		}
		refused := make(chan refusal, 1)
		l := Listener(listenShared(t, path), os.Getuid(), func(c Cred, err error) { refused <- refusal{c, err} })
		accepted := acceptLoop(l)

		child := startChild(t, exe, path)
		if got := child.wait(t); got != "connected\nclosed\n" {
			t.Errorf("child saw %q, want it connected and then closed", got)
		}
		select {
		case r := <-refused:
			if r.cred.UID != otherUID || r.cred.PID != int32(child.cmd.Process.Pid) {
				t.Errorf("refused %+v, want uid %d pid %d", r.cred, otherUID, child.cmd.Process.Pid)
			}
			if want := "the peer runs as user 65534, not " + itoa(os.Getuid()); r.err == nil || r.err.Error() != want {
				t.Errorf("refusal reason = %v, want %q", r.err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the other user's connection was not reported as refused")
		}

		// The listener keeps serving the user after a refusal.
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		server := <-accepted
		defer server.Close()
		if cred, err := Get(server.(*net.UnixConn)); err != nil || cred.PID != int32(os.Getpid()) {
			t.Fatalf("accepted a connection from %+v (%v), want this process", cred, err)
		}
		echo(t, c, server)

		l.Close()
		if _, ok := <-accepted; ok {
			t.Error("Accept returned a second connection")
		}
	})

	t.Run("L3_same_user_served", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "s")
		inner, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		l := Listener(inner, os.Getuid(), func(c Cred, err error) { t.Errorf("refused %+v: %v", c, err) })
		defer l.Close()
		accepted := acceptLoop(l)
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		server := <-accepted
		defer server.Close()
		echo(t, c, server)
	})

	t.Run("L3_wrong_uid_refused_nil_callback", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "s")
		inner, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		l := Listener(inner, os.Getuid()+1, nil)
		accepted := acceptLoop(l)
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// The refused connection is closed at once: the client reads EOF.
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := c.Read(make([]byte, 1)); n != 0 || (err != io.EOF && !errors.Is(err, syscall.ECONNRESET)) {
			t.Errorf("read from refused connection = %d, %v; want EOF", n, err)
		}
		l.Close()
		if _, ok := <-accepted; ok {
			t.Error("Accept returned a connection from the wrong user")
		}
	})

	t.Run("L3_not_a_unix_socket_refused", func(t *testing.T) {
		refused := make(chan error, 1)
		l := Listener(&pipeListener{}, os.Getuid(), func(_ Cred, err error) { refused <- err })
		if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept = %v, want net.ErrClosed after the pipe", err)
		}
		if err := <-refused; err == nil || !strings.Contains(err.Error(), "peer credentials need a Unix socket") {
			t.Errorf("refusal = %v", err)
		}
	})
}

// pipeListener hands out one in-memory connection, which has no peer
// credentials, and then reports that it is closed.
type pipeListener struct{ done bool }

func (p *pipeListener) Accept() (net.Conn, error) {
	if p.done {
		return nil, net.ErrClosed
	}
	p.done = true
	a, b := net.Pipe()
	b.Close()
	return a, nil
}
func (p *pipeListener) Close() error   { return nil }
func (p *pipeListener) Addr() net.Addr { return &net.UnixAddr{Name: "pipe", Net: "unix"} }

// unixPair returns both ends of a real Unix socket connection.
func unixPair(t *testing.T) (client, server *net.UnixConn) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err = net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err = l.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}

func acceptLoop(l net.Listener) <-chan net.Conn {
	ch := make(chan net.Conn)
	go func() {
		defer close(ch)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			ch <- c
		}
	}()
	return ch
}

func echo(t *testing.T, c, server net.Conn) {
	t.Helper()
	go io.Copy(server, server)
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("echo = %q, %v", line, err)
	}
}

// sharedDir makes a folder that user 65534 can enter, holding a copy of
// this test binary it can run: go test builds in a folder only root can read.
func sharedDir(t *testing.T) (dir, exe string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "peercred-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	exe = filepath.Join(dir, "child.test")
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, exe
}

// listenShared listens at path with the socket open to everyone, so that
// only the peer-credential check can keep the other user out.
func listenShared(t *testing.T, path string) net.Listener {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := os.Chmod(path, 0o777); err != nil {
		t.Fatal(err)
	}
	return l
}

type child struct {
	cmd    *exec.Cmd
	stdout strings.Builder
	stderr strings.Builder
	done   chan struct{} // closed when cmd.Wait has returned err
	err    error
}

// startChild runs exe as user 65534, dialing path.
func startChild(t *testing.T, exe, path string) *child {
	t.Helper()
	ch := &child{cmd: exec.Command(exe), done: make(chan struct{})}
	ch.cmd.Dir = filepath.Dir(exe)
	ch.cmd.Env = []string{dialEnv + "=" + path}
	ch.cmd.Stdout = &ch.stdout
	ch.cmd.Stderr = &ch.stderr
	ch.cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: otherUID, Gid: otherUID},
	}
	if err := ch.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		ch.err = ch.cmd.Wait()
		close(ch.done)
	}()
	t.Cleanup(func() {
		ch.cmd.Process.Kill() // fails harmlessly once the child is gone
		<-ch.done
	})
	return ch
}

// wait waits for the child and returns what it printed.
func (ch *child) wait(t *testing.T) string {
	t.Helper()
	select {
	case <-ch.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("child as user %d did not finish", otherUID)
	}
	if ch.err != nil {
		t.Fatalf("child as user %d: %v: %s", otherUID, ch.err, ch.stderr.String())
	}
	return ch.stdout.String()
}

func requireRoot(t *testing.T) {
	t.Helper()
	testenv.RequireRoot(t, "run a child process as another user")
}

func itoa(n int) string { return strconv.Itoa(n) }
