package runcmd

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

func run(t *testing.T, s Spec) (Progress, []Progress) {
	t.Helper()
	var (
		mu      sync.Mutex
		updates []Progress
	)
	r, err := Start(s, func(p Progress) {
		mu.Lock()
		updates = append(updates, p)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.Done():
	case <-time.After(30 * time.Second):
		r.Stop()
		t.Fatal("the command did not finish")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(updates) == 0 {
		t.Fatal("no progress was reported")
	}
	return updates[len(updates)-1], updates
}

func sh(script string, timeout time.Duration) Spec {
	return Spec{Argv: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin", "KEPT=yes"}, Timeout: timeout}
}

func TestRun(t *testing.T) {
	t.Run("D8_env_allow_list_and_dir", func(t *testing.T) {
		dir := t.TempDir()
		s := sh(`pwd; env | sort; echo err >&2`, 10*time.Second)
		s.Dir = dir
		os.Setenv("COLLIE_RUNCMD_SECRET", "leak")
		defer os.Unsetenv("COLLIE_RUNCMD_SECRET")
		p, _ := run(t, s)
		if p.Running || p.ExitCode != 0 || p.Status() != "done" {
			t.Fatalf("progress = %+v", p)
		}
		for _, want := range []string{dir, "KEPT=yes", "err"} {
			if !strings.Contains(p.Output, want) {
				t.Errorf("output %q lacks %q", p.Output, want)
			}
		}
		if strings.Contains(p.Output, "leak") {
			t.Error("the agent's environment leaked past the allow-list")
		}
		if !strings.HasPrefix(p.Summary(), "finished in") {
			t.Errorf("summary %q", p.Summary())
		}
	})
	t.Run("exit_status", func(t *testing.T) {
		p, _ := run(t, sh("exit 3", 10*time.Second))
		if p.ExitCode != 3 || p.Status() != "failed" || !strings.Contains(p.Summary(), "exit status 3") {
			t.Fatalf("%+v %q", p, p.Summary())
		}
	})
	t.Run("timeout_kills_the_process_group", func(t *testing.T) {
		pidFile := filepath.Join(t.TempDir(), "pid")
		start := time.Now()
		p, _ := run(t, sh("sleep 60 & echo $! > "+pidFile+"; trap '' TERM; sleep 60", 300*time.Millisecond))
		if !p.TimedOut || p.Status() != "failed" || !strings.Contains(p.Summary(), "stopped by its timeout") {
			t.Fatalf("%+v %q", p, p.Summary())
		}
		if d := time.Since(start); d > Grace+drainAfterExit+3*time.Second {
			t.Fatalf("took %v", d)
		}
		b, err := os.ReadFile(pidFile)
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		waitGone(t, pid)
	})
	t.Run("stop", func(t *testing.T) {
		// Stop once the command runs: its first line of output says so.
		started := make(chan struct{})
		var once sync.Once
		r, err := Start(sh("echo started; sleep 60", time.Minute), func(p Progress) {
			if strings.Contains(p.Output, "started") {
				once.Do(func() { close(started) })
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			r.Stop()
			t.Fatalf("the command's output never said it started: %+v", r.Progress())
		}
		r.Stop()
		select {
		case <-r.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("Stop did not stop it")
		}
		if p := r.Progress(); !p.Stopped || !strings.Contains(p.Summary(), "stopped from a paired device") {
			t.Fatalf("%+v", p)
		}
	})
	t.Run("child_holding_the_pipe_does_not_hold_the_run", func(t *testing.T) {
		start := time.Now()
		p, _ := run(t, sh("(sleep 30; echo late) & echo early", 10*time.Second))
		if d := time.Since(start); d > drainAfterExit+3*time.Second {
			t.Fatalf("waited %v for a background child", d)
		}
		if p.ExitCode != 0 || !strings.Contains(p.Output, "early") {
			t.Fatalf("%+v", p)
		}
	})
	t.Run("relative_command_refused", func(t *testing.T) {
		_, err := Start(Spec{Argv: []string{"make", "test"}, Timeout: time.Second}, nil)
		if err == nil || !strings.Contains(err.Error(), "not an absolute path; give the full path, such as /usr/bin/make") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("missing_program", func(t *testing.T) {
		_, err := Start(Spec{Argv: []string{"/nonexistent/prog"}, Timeout: time.Second}, nil)
		if err == nil || !strings.Contains(err.Error(), "/nonexistent/prog") {
			t.Fatalf("err = %v", err)
		}
	})
}

// waitGone waits until pid has exited (or is a zombie nobody reaps),
// looking at /proc every 50 ms for at most Grace + 5 s.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	limit := Grace + 5*time.Second
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for ; time.Now().Before(deadline); <-tick.C {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		if i := bytes.LastIndexByte(b, ')'); i > 0 && len(b) > i+2 && b[i+2] == 'Z' {
			return
		}
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Fatalf("process %d of the group was still running %s after the timeout", pid, limit)
}

// TestHundredMegabytes: X4 caps the output, and the memory the agent
// uses for it stays flat however much the command prints.
func TestHundredMegabytes(t *testing.T) {
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	rssBefore := procStatus(t, "VmRSS")
	const n = 100 << 20
	p, updates := run(t, sh("yes 'line of output with ünïcödé 0123456789' | head -c "+strconv.Itoa(n), 2*time.Minute))
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	rssAfter := procStatus(t, "VmRSS")
	if p.Bytes != n || p.ExitCode != 0 {
		t.Fatalf("bytes %d exit %d", p.Bytes, p.ExitCode)
	}
	if len(p.Output) > 16384 || !utf8.ValidString(p.Output) || !strings.Contains(p.Output, "not shown") {
		t.Fatalf("X4: output of %d bytes, valid UTF-8 %v", len(p.Output), utf8.ValidString(p.Output))
	}
	if growth := int64(after.HeapInuse) - int64(before.HeapInuse); growth > 4<<20 {
		t.Fatalf("the heap grew by %d bytes while 100 MB streamed", growth)
	}
	t.Logf("100 MiB streamed: %d progress updates, heap in use %d → %d KiB, total allocated %d KiB, RSS %d → %d KiB",
		len(updates), before.HeapInuse>>10, after.HeapInuse>>10, (after.TotalAlloc-before.TotalAlloc)>>10, rssBefore, rssAfter)
}

func procStatus(t *testing.T, field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

func TestCapBuffer(t *testing.T) {
	var c capBuffer
	c.write([]byte("hello"))
	if c.String() != "hello" {
		t.Fatalf("%q", c.String())
	}
	// Fill exactly head + tail: nothing is left out.
	var d capBuffer
	all := bytes.Repeat([]byte("abcdefgh"), (HeadBytes+TailBytes)/8)
	all = all[:HeadBytes+TailBytes]
	for i := 0; i < len(all); i += 1000 {
		d.write(all[i:min(i+1000, len(all))])
	}
	if d.String() != string(all) {
		t.Fatal("a buffer filled exactly lost or reordered bytes")
	}
	// One byte more: a mark, the first and the last bytes in order.
	d.write([]byte("Z"))
	s := d.String()
	if !strings.HasPrefix(s, string(all[:HeadBytes])) || !strings.HasSuffix(s, string(all[HeadBytes+1:])+"Z") || !strings.Contains(s, "1 byte not shown") {
		t.Fatalf("after one byte over: %d bytes, mark %q", len(s), s[HeadBytes:HeadBytes+30])
	}
	// A write larger than the tail.
	var e capBuffer
	e.write(bytes.Repeat([]byte("x"), HeadBytes))
	big := append(bytes.Repeat([]byte("y"), 3*TailBytes), []byte("END")...)
	e.write(big)
	if !strings.HasSuffix(e.String(), "yyyEND") || len(e.String()) > 16384 {
		t.Fatal("a big write did not keep its end")
	}
	// A cut inside a character is moved to a whole one.
	var f capBuffer
	f.write(bytes.Repeat([]byte("a"), HeadBytes-1))
	f.write([]byte(strings.Repeat("é", TailBytes)))
	if !utf8.ValidString(f.String()) {
		t.Fatal("the cut split a character")
	}
}
