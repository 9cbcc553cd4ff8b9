package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDemoCtrlCWithPendingAsk: Ctrl-C on collie demo
// while a `collie ask` waits for an answer stops it at once, not after the
// agent's shutdown grace (5 s); and the demo's "other terminal" lines set
// XDG_STATE_HOME too.
func TestDemoCtrlCWithPendingAsk(t *testing.T) {
	bin := buildAgent(t)
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build collie: %v\n%s", err, out)
	}
	tmp, err := os.MkdirTemp("", "cdm-") // short: socket paths
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	demo := exec.Command(filepath.Join(bin, "collie"), "demo")
	demo.Env = append(os.Environ(), "TMPDIR="+tmp)
	demo.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its own group, as a terminal's foreground job
	stdout, _ := demo.StdoutPipe()
	stderr, _ := demo.StderrPipe()
	if err := demo.Start(); err != nil {
		t.Fatal(err)
	}
	defer demo.Process.Kill()

	// The export line of the "other terminal" instructions.
	var exports []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "export ") {
			exports = strings.Fields(strings.TrimPrefix(line, "export "))
			break
		}
	}
	go io.Copy(io.Discard, stdout)
	want := regexp.MustCompile(`^XDG_(RUNTIME_DIR|CONFIG_HOME|STATE_HOME)=/`)
	if len(exports) != 3 {
		t.Fatalf("the demo's export line is %q; want XDG_RUNTIME_DIR, XDG_CONFIG_HOME and XDG_STATE_HOME", exports)
	}
	for _, x := range exports {
		if !want.MatchString(x) {
			t.Errorf("export %q", x)
		}
	}

	ask := exec.Command(filepath.Join(bin, "collie"), "ask", "--agent", "demo", "--yes-no", "Test?")
	ask.Env = append(os.Environ(), exports...)
	if err := ask.Start(); err != nil {
		t.Fatal(err)
	}
	defer ask.Process.Kill()
	// The agent logs the question: it is pending now.
	logs := bufio.NewScanner(stderr)
	for logs.Scan() {
		if strings.Contains(logs.Text(), `msg="question asked"`) && strings.Contains(logs.Text(), "kind=yes-no") {
			break
		}
	}
	go io.Copy(io.Discard, stderr)

	began := time.Now()
	if err := syscall.Kill(-demo.Process.Pid, syscall.SIGINT); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- demo.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("collie demo after Ctrl-C: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("collie demo did not stop within 20 s of Ctrl-C")
	}
	if took := time.Since(began); took > 3*time.Second {
		t.Errorf("collie demo took %v to stop with a pending ask; want it prompt (under 3 s)", took.Round(10*time.Millisecond))
	} else {
		t.Logf("stopped %v after Ctrl-C", took.Round(time.Millisecond))
	}
}
