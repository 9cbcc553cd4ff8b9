package callercheck

import (
	"errors"
	"fmt"
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

// The processes that call in these tests are this test binary started
// again with CALLERCHECK_CHILD set to what it should do.
func TestMain(m *testing.M) {
	if mode := os.Getenv("CALLERCHECK_CHILD"); mode != "" {
		os.Exit(child(mode, os.Getenv("CALLERCHECK_ADDR")))
	}
	os.Exit(m.Run())
}

func child(mode, addr string) int {
	switch mode {
	case "connect": // connect, say one byte, stay until the test closes
		return connectAndHold(addr, false)
	case "connect-exit": // connect, say one byte, exit at once
		return connectAndHold(addr, true)
	case "comm": // rename itself to look like a child of init, then connect
		if err := os.WriteFile("/proc/self/comm", []byte("x) S 1 1 1 1 1"), 0); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return connectAndHold(addr, false)
	case "parent": // start a "connect" child and wait for it
		return runSelf("connect", addr, false)
	case "double-fork": // start an "orphan" child in its own session, exit at once
		return runSelf("orphan", addr, true)
	case "orphan": // wait until re-parented, then connect
		parent, _ := strconv.Atoi(os.Getenv("CALLERCHECK_PARENT"))
		if err := waitOrphaned(parent, 10*time.Second); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return connectAndHold(addr, false)
	case "hold": // do nothing until stdin closes
		var b [1]byte
		os.Stdin.Read(b[:])
		return 0
	case "pidns-listen": // pid namespace: listen, check the test's connection, report
		return listenInPidNS(addr)
	}
	fmt.Fprintln(os.Stderr, "unknown mode", mode)
	return 2
}

// waitOrphaned waits for the exit of parent, the process that started
// this one, through a pidfd: the kernel re-parents a process's children
// before its pidfd says it has exited.
func waitOrphaned(parent int, limit time.Duration) error {
	fd, err := unix.PidfdOpen(parent, 0)
	if err != nil {
		if os.Getppid() != parent {
			return nil // gone already
		}
		return fmt.Errorf("pidfd_open of the parent %d: %w", parent, err)
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(limit)
	for os.Getppid() == parent {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("the parent %d did not exit in %s", parent, limit)
		}
		_, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(left/time.Millisecond)+1)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("poll the parent's pidfd: %w", err)
		}
	}
	return nil
}

func connectAndHold(addr string, exit bool) int {
	c, err := net.Dial("unix", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	c.Write([]byte{'x'})
	if exit {
		return 0
	}
	var b [1]byte
	c.Read(b[:]) // until the test closes the connection
	return 0
}

func runSelf(mode, addr string, detach bool) int {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "CALLERCHECK_CHILD="+mode, "CALLERCHECK_ADDR="+addr, "CALLERCHECK_PARENT="+strconv.Itoa(os.Getpid()))
	cmd.Stderr = os.Stderr
	if detach {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			return 1
		}
		return 0
	}
	if err := cmd.Run(); err != nil {
		return 1
	}
	return 0
}

// listenInPidNS runs in a new pid namespace whose /proc is still the
// parent's: it cannot see the test process, which connects to it.
func listenInPidNS(addr string) int {
	ul, err := net.Listen("unix", addr)
	if err != nil {
		fmt.Println("listen:", err)
		return 1
	}
	l := Listener(ul)
	fmt.Println("listening")
	_, newErr := New()
	c, err := l.Accept()
	if err != nil {
		fmt.Println("accept:", err)
		return 1
	}
	var b [1]byte
	c.Read(b[:])
	chk := &Checker{selfPID: os.Getpid(), uid: uint32(os.Getuid()), proc: "/proc", cgroup: "/nonexistent"}
	_, err = chk.Check(c.(*Conn))
	fmt.Printf("new: %v\ncheck: %v\n", newErr, err)
	return 0
}

// listen makes an abstract socket (no file, so other users can reach it).
func listen(t *testing.T) (net.Listener, string) {
	t.Helper()
	addr := fmt.Sprintf("@collie-callercheck-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-"))
	ul, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	l := Listener(ul)
	t.Cleanup(func() { l.Close() })
	return l, addr
}

// start runs this binary in mode and returns the connection it made.
func start(t *testing.T, l net.Listener, addr, mode string, attr *syscall.SysProcAttr) (*Conn, *exec.Cmd) {
	t.Helper()
	return startBin(t, l, addr, os.Args[0], mode, attr)
}

// startAs is start in mode "connect" for another user, running exe.
func startAs(t *testing.T, l net.Listener, addr, exe string, attr *syscall.SysProcAttr) (*Conn, *exec.Cmd) {
	t.Helper()
	return startBin(t, l, addr, exe, "connect", attr)
}

// publicCopy copies this test binary where any user can run it.
func publicCopy(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "callercheck-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "callercheck.test")
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return exe
}

func startBin(t *testing.T, l net.Listener, addr, exe, mode string, attr *syscall.SysProcAttr) (*Conn, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "CALLERCHECK_CHILD="+mode, "CALLERCHECK_ADDR="+addr)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() { c, err := l.Accept(); ch <- res{c, err} }()
	var r res
	select {
	case r = <-ch:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("mode %s never connected", mode)
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	var b [1]byte
	if _, err := r.c.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.c.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return r.c.(*Conn), cmd
}

// checker is the real check for this process, with the cgroup rule pointed
// at cgroup (this machine may run everything in the root cgroup).
func checker(t *testing.T, cgroup string) *Checker {
	t.Helper()
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	c.hier, c.cgroup = hierUnified, cgroup
	return c
}

func wantRefused(t *testing.T, err error, why string) {
	t.Helper()
	var r *Refused
	if !errors.As(err, &r) {
		t.Fatalf("err = %v, want a refusal saying %q", err, why)
	}
	if !strings.Contains(r.Reason, why) {
		t.Fatalf("refusal %q does not say %q", r.Reason, why)
	}
}

const elsewhere = "/collie-callercheck-test-not-a-cgroup"

func TestCheck(t *testing.T) {
	t.Run("C2_the_agent_itself", func(t *testing.T) {
		l, addr := listen(t)
		c, err := net.Dial("unix", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		_, err = checker(t, elsewhere).Check(s.(*Conn))
		wantRefused(t, err, "the caller is the agent itself")
	})
	t.Run("C2_child", func(t *testing.T) {
		l, addr := listen(t)
		conn, _ := start(t, l, addr, "connect", nil)
		who, err := checker(t, elsewhere).Check(conn)
		wantRefused(t, err, "one of the agent's descendants")
		if who.PID <= 0 {
			t.Errorf("caller = %+v", who)
		}
	})
	t.Run("C2_child_older_kernels", func(t *testing.T) {
		l, addr := listen(t)
		conn, _ := start(t, l, addr, "connect", nil)
		for _, c := range []*Checker{checker(t, elsewhere), checker(t, elsewhere), checker(t, elsewhere)} {
			c.noPidfdInfo = true
			_, err := c.Check(conn)
			wantRefused(t, err, "one of the agent's descendants")
			c.noPeerPidfd = true
			_, err = c.Check(conn)
			wantRefused(t, err, "one of the agent's descendants")
			c.noPidfd = true
			_, err = c.Check(conn)
			wantRefused(t, err, "one of the agent's descendants")
		}
	})
	t.Run("C2_grandchild", func(t *testing.T) {
		l, addr := listen(t)
		conn, cmd := start(t, l, addr, "parent", nil)
		who, err := checker(t, elsewhere).Check(conn)
		wantRefused(t, err, "one of the agent's descendants")
		if who.PID == cmd.Process.Pid {
			t.Errorf("the caller is the parent (%d), not the grandchild", who.PID)
		}
	})
	t.Run("C2_comm_pretending_to_be_a_child_of_init", func(t *testing.T) {
		l, addr := listen(t)
		conn, cmd := start(t, l, addr, "comm", nil)
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", cmd.Process.Pid))
		if !strings.HasPrefix(string(b), "x) S 1") {
			t.Fatalf("comm = %q; the child did not rename itself", b)
		}
		_, err := checker(t, elsewhere).Check(conn)
		wantRefused(t, err, "one of the agent's descendants")
	})
	t.Run("C2_double_fork_caught_by_cgroup", func(t *testing.T) {
		l, addr := listen(t)
		conn, _ := start(t, l, addr, "double-fork", nil)
		c := checker(t, elsewhere)
		// Re-parented away: the parent walk alone lets it through ...
		who, err := c.Check(conn)
		if err != nil {
			t.Fatalf("with the agent's cgroup elsewhere, the re-parented grandchild was refused: %v", err)
		}
		// ... so the check refuses every caller in the agent's cgroup.
		c.cgroup = who.Cgroup
		_, err = c.Check(conn)
		wantRefused(t, err, "runs in the agent's own cgroup")
	})
	t.Run("C2_family_only", func(t *testing.T) {
		// NewFamily judges ancestry alone: a descendant is refused, a
		// process re-parented away is let through wherever the agent's
		// cgroup is (a root cgroup refuses nobody for that), which is why
		// collie run makes itself its descendants' subreaper.
		l, addr := listen(t)
		child, _ := start(t, l, addr, "connect", nil)
		c, err := NewFamily()
		if err != nil {
			t.Fatal(err)
		}
		if !c.FamilyOnly() || c.Cgroup() != "" {
			t.Fatalf("NewFamily: familyOnly %v, cgroup %q", c.FamilyOnly(), c.Cgroup())
		}
		_, err = c.Check(child)
		wantRefused(t, err, "one of the agent's descendants")
		orphan, _ := start(t, l, addr, "double-fork", nil)
		if _, err := c.Check(orphan); err != nil {
			t.Fatalf("family only: a process outside the family was refused: %v", err)
		}
	})
	t.Run("C1_unrelated_process_may_write", func(t *testing.T) {
		// Pretend the agent is a child of this test: the test is then an
		// unrelated process, and it connects.
		l, addr := listen(t)
		_, agent := start(t, l, addr, "connect", nil)
		c := checker(t, elsewhere)
		c.selfPID = agent.Process.Pid
		conn, err := net.Dial("unix", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		s, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		who, err := c.Check(s.(*Conn))
		if err != nil {
			t.Fatalf("an unrelated process was refused: %v", err)
		}
		if who.PID != os.Getpid() || who.UID != uint32(os.Getuid()) {
			t.Errorf("caller = %+v", who)
		}
		if c.PeerPidfd() && who.Method != "SO_PEERPIDFD" {
			t.Errorf("C3: the kernel has SO_PEERPIDFD but the check pinned the caller with %q", who.Method)
		}
		t.Logf("caller pinned with %s (kernel %s)", who.Method, kernelRelease())
	})
	for _, m := range []struct {
		name                              string
		noPeerPidfd, noPidfdInfo, noPidfd bool
	}{{"SO_PEERPIDFD", false, false, false}, {"fdinfo", false, true, false}, {"pidfd_open", true, true, false}, {"start_time", true, true, true}} {
		t.Run("C3_gone_before_the_check/"+m.name, func(t *testing.T) {
			l, addr := listen(t)
			conn, cmd := start(t, l, addr, "connect-exit", nil)
			cmd.Wait() // exited and reaped: its pid is free for reuse
			c := checker(t, elsewhere)
			c.noPeerPidfd, c.noPidfdInfo, c.noPidfd = m.noPeerPidfd, m.noPidfdInfo, m.noPidfd
			_, err := c.Check(conn)
			wantRefused(t, err, "exited before the agent finished checking it")
		})
	}
	t.Run("C3_proc_unreadable", func(t *testing.T) {
		l, addr := listen(t)
		conn, _ := start(t, l, addr, "connect", nil)
		c := checker(t, elsewhere)
		c.proc = t.TempDir()
		c.selfPID = 1 << 30 // not this test: the walk must read /proc
		_, err := c.Check(conn)
		wantRefused(t, err, "cannot read its caller")
		c.noPidfdInfo = true
		_, err = c.Check(conn)
		wantRefused(t, err, "cannot read its caller")
	})
	t.Run("C3_agent_in_root_cgroup_refuses_all", func(t *testing.T) {
		l, addr := listen(t)
		_, agent := start(t, l, addr, "connect", nil)
		c := checker(t, "")
		c.selfPID = agent.Process.Pid
		conn, err := net.Dial("unix", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		s, _ := l.Accept()
		defer s.Close()
		_, err = c.Check(s.(*Conn))
		wantRefused(t, err, "run it as a systemd unit")
	})
	t.Run("C3_another_user", func(t *testing.T) {
		requireRoot(t)
		l, addr := listen(t)
		conn, _ := startAs(t, l, addr, publicCopy(t), &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}})
		_, err := checker(t, elsewhere).Check(conn)
		wantRefused(t, err, "runs as user 65534")
	})
	t.Run("C3_pid_0_other_pid_namespace", func(t *testing.T) {
		requireRoot(t)
		addr := fmt.Sprintf("@collie-callercheck-pidns-%d", os.Getpid())
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "CALLERCHECK_CHILD=pidns-listen", "CALLERCHECK_ADDR="+addr)
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			testenv.Unavailablef(t, "cannot make a pid namespace here: %v", err)
		}
		var buf [64]byte
		n, _ := out.Read(buf[:])
		if !strings.HasPrefix(string(buf[:n]), "listening") {
			t.Fatalf("child said %q", buf[:n])
		}
		c, err := net.Dial("unix", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte{'x'})
		rest := make([]byte, 4096)
		m, _ := readAll(out, rest)
		c.Close()
		cmd.Wait()
		got := string(buf[:n]) + string(rest[:m])
		if !strings.Contains(got, "check: the caller has no process id the agent can see") {
			t.Errorf("C3: pid 0 caller: %s", got)
		}
		if !strings.Contains(got, "new: the caller check is not available: /proc shows another pid namespace") {
			t.Errorf("C3: New with another namespace's /proc: %s", got)
		}
	})
}

func readAll(f interface{ Read([]byte) (int, error) }, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := f.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func requireRoot(t *testing.T) {
	t.Helper()
	testenv.RequireRoot(t, "start a process as another user or in another pid namespace")
}

func kernelRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "unknown"
	}
	return unix.ByteSliceToString(u.Release[:])
}

func TestNew(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if c.selfPID != os.Getpid() || c.proc != "/proc" {
		t.Fatalf("checker = %+v", c)
	}
	b, _ := os.ReadFile("/proc/self/cgroup")
	_, want, _ := chooseHierarchy(b)
	if c.Cgroup() != want {
		t.Errorf("Cgroup() = %q, want %q from %q", c.Cgroup(), want, b)
	}
	if filepath.IsAbs(c.Cgroup()) != (c.Cgroup() != "") {
		t.Errorf("Cgroup() = %q is not an absolute cgroup path", c.Cgroup())
	}
}

// BenchmarkCheck is the cost of the check on every write. The caller is
// this process. "allowed" pretends the agent is pid 2^30, so the whole
// path runs, the parent walk up to pid 1 included (its length is reported
// as "ancestors"); the other methods are the older kernels' paths;
// "refused_child" pretends the agent is this process's parent.
func BenchmarkCheck(b *testing.B) {
	addr := "@collie-callercheck-bench-" + strconv.Itoa(os.Getpid())
	ul, err := net.Listen("unix", addr)
	if err != nil {
		b.Fatal(err)
	}
	l := Listener(ul)
	defer l.Close()
	conn, err := net.Dial("unix", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	s, err := l.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	uc := s.(*Conn)
	depth := 0
	for p := os.Getpid(); p > 1; depth++ {
		var buf [4096]byte
		st, err := (&Checker{proc: "/proc"}).stat(p, buf[:])
		if err != nil {
			break
		}
		p = st.PPID
	}
	for _, bc := range []struct {
		name                              string
		self                              int
		noPeerPidfd, noPidfdInfo, noPidfd bool
	}{
		{"allowed/PIDFD_GET_INFO", 1 << 30, false, false, false},
		{"allowed/fdinfo", 1 << 30, false, true, false},
		{"allowed/pidfd_open", 1 << 30, true, true, false},
		{"allowed/start_time", 1 << 30, true, true, true},
		{"refused_child", os.Getppid(), false, false, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, err := New()
			if err != nil {
				b.Fatal(err)
			}
			c.selfPID, c.hier, c.cgroup = bc.self, hierUnified, elsewhere
			c.noPeerPidfd, c.noPidfdInfo, c.noPidfd = bc.noPeerPidfd, bc.noPidfdInfo, bc.noPidfd
			_, err = c.Check(uc)
			if (err == nil) != (bc.self == 1<<30) {
				b.Fatalf("check: %v", err)
			}
			b.ReportAllocs()
			for b.Loop() {
				c.Check(uc)
			}
			b.ReportMetric(float64(depth), "ancestors")
		})
	}
}
