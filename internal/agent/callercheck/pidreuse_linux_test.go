package callercheck

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// TestPidReuseC3 makes the attack of C3 for real: the caller connects and
// exits, the test reaps it, and another process takes its pid (set through
// /proc/sys/kernel/ns_last_pid). That process is no descendant of the
// agent, so judging it lets the write through. Where the kernel pins the
// caller at connect (SO_PEERPIDFD) the check sees the caller gone; on the
// fallbacks, forced here because this kernel has SO_PEERPIDFD, the process
// that has the pid started after the connection was accepted, and is
// refused for it (C2, C3).
func TestPidReuseC3(t *testing.T) {
	requireRoot(t)
	tests := []struct {
		name                              string
		noPeerPidfd, noPidfdInfo, noPidfd bool
		want                              string
	}{
		{"C3_SO_PEERPIDFD", false, false, false, ""}, // "exited" or "started after": both refuse
		{"C3_pidfd_open_PIDFD_GET_INFO", true, false, false, "started after the connection was accepted"},
		{"C3_pidfd_open_fdinfo", true, true, false, "started after the connection was accepted"},
		{"C3_start_time_no_pidfd", true, true, true, "started after the connection was accepted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, addr := listen(t)
			conn, cmd := start(t, l, addr, "connect-exit", nil)
			pid := cmd.Process.Pid
			cmd.Wait() // exited and reaped: its pid is free
			// The taker must start in a later clock tick than the accept.
			for tick := conn.Accepted() / (time.Second / userHZ); bootTime()/(time.Second/userHZ) <= tick; {
				runtime.Gosched()
			}
			taker := takePid(t, pid)

			c := checker(t, elsewhere)
			c.selfPID = 1 << 30 // no agent among anyone's parents: only C3 can refuse
			c.noPeerPidfd, c.noPidfdInfo, c.noPidfd = tt.noPeerPidfd, tt.noPidfdInfo, tt.noPidfd
			who, err := c.Check(conn)
			if err == nil {
				t.Fatalf("the check judged process %d (%s), which took the caller's pid, and let the write through", taker.Process.Pid, who.Method)
			}
			if tt.want == "" {
				tt.want = "the caller"
			}
			wantRefused(t, err, tt.want)
		})
	}
}

// takePid starts a process that gets pid, which must be free.
func takePid(t *testing.T, pid int) *exec.Cmd {
	t.Helper()
	for try := 0; try < 200; try++ {
		// Other processes on the machine, and this one's own threads, may
		// take the pid first: then try again.
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
			testenv.Unavailablef(t, "cannot choose the next pid (%v); needs root in the initial pid namespace", err)
		}
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "CALLERCHECK_CHILD=hold")
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if cmd.Process.Pid == pid {
			t.Cleanup(func() { stdin.Close(); cmd.Wait() })
			return cmd
		}
		stdin.Close()
		cmd.Wait()
	}
	testenv.Unavailablef(t, "could not give pid %d to a new process in 200 tries: the machine is busy", pid)
	return nil
}

// TestParentPinnedC3: the parent walk reads each parent by pid. A parent
// that exited, or a process that took a parent's pid (it started after the
// child), breaks the link rather than being judged (C2, C3).
func TestParentPinnedC3(t *testing.T) {
	c := checker(t, elsewhere)
	var buf [4096]byte
	self, err := c.stat(os.Getpid(), buf[:])
	if err != nil {
		t.Fatal(err)
	}
	younger := exec.Command(os.Args[0])
	younger.Env = append(os.Environ(), "CALLERCHECK_CHILD=hold")
	stdin, err := younger.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := younger.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); younger.Wait() })
	for bootTime()/(time.Second/userHZ) <= time.Duration(self.StartTime) {
		runtime.Gosched() // the younger process must be in a later tick: it was, unless the test started just now
	}
	gone := exec.Command("/bin/true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		name    string
		noPidfd bool
	}{{"pidfd", false}, {"no_pidfd", true}} {
		c.noPidfd = m.noPidfd
		tests := []struct {
			name   string
			parent int
			start  uint64 // the child's start time
			ok     bool
		}{
			{"C2_real_parent", os.Getppid(), self.StartTime, true},
			{"C3_started_after_the_child", younger.Process.Pid, self.StartTime, false},
			{"C3_exited", gone.Process.Pid, self.StartTime, false},
		}
		for _, tt := range tests {
			t.Run(m.name+"/"+tt.name, func(t *testing.T) {
				_, ok, err := c.parent(tt.parent, tt.start, buf[:])
				if err != nil || ok != tt.ok {
					t.Fatalf("parent(%d) = %v, %v; want %v", tt.parent, ok, err, tt.ok)
				}
			})
		}
	}
}

// TestNoAcceptTimeC3: a connection that did not come through Listener
// carries no accept time; the fallbacks cannot judge it and refuse, while
// SO_PEERPIDFD needs none.
func TestNoAcceptTimeC3(t *testing.T) {
	addr := "@collie-callercheck-noaccept-" + strconv.Itoa(os.Getpid())
	ul, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	conn, err := net.Dial("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	s, err := ul.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := checker(t, elsewhere)
	c.selfPID = 1 << 30
	if c.PeerPidfd() {
		if _, err := c.Check(s.(*net.UnixConn)); err != nil {
			t.Fatalf("with SO_PEERPIDFD, a connection without accept time was refused: %v", err)
		}
	}
	c.noPeerPidfd = true
	_, err = c.Check(s.(*net.UnixConn))
	wantRefused(t, err, "does not know when the connection was accepted")
	var r *Refused
	if !errors.As(err, &r) || r.Caller.PID != os.Getpid() {
		t.Fatalf("refusal = %#v", err)
	}
}

func TestStartedAfter(t *testing.T) {
	tick := time.Second / userHZ
	for _, tt := range []struct {
		name  string
		start uint64
		at    time.Duration
		want  bool
	}{
		{"C3_long_before", 100, 10 * time.Second, false},
		{"C3_same_tick", 1000, 10*time.Second + tick - 1, false},
		{"C3_tick_before", 999, 10 * time.Second, false},
		{"C3_next_tick", 1001, 10*time.Second + tick - 1, true},
		{"C3_long_after", 5000, 10 * time.Second, true},
	} {
		if got := startedAfter(tt.start, tt.at); got != tt.want {
			t.Errorf("%s: startedAfter(%d, %v) = %v, want %v", tt.name, tt.start, tt.at, got, tt.want)
		}
	}
}
