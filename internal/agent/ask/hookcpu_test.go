//go:build linux

package ask

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable/board"
)

// hookBudget is the adapter's CPU per tool call that needs no question,
// on a quiet machine.
const hookBudget = 20 * time.Millisecond

const maxHookRatio = 100.0

// builtBinaries builds the programs these tests run: the hook program as
// the client runs it, collie, and the smallest Go program, the baseline
// that says what starting a process costs on this machine right now.
func builtBinaries(t *testing.T) map[string]string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds collie")
	}
	dir := t.TempDir()
	bins := map[string]string{"collie": "../../../cmd/collie", "collie-hook": "../../../cmd/collie-hook", "startup": "./testdata/startup"}
	for name, pkg := range bins {
		bins[name] = filepath.Join(dir, name)
		if out, err := exec.Command("go", "build", "-o", bins[name], pkg).CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", pkg, err, out)
		}
	}
	return bins
}

// cpuOf runs cmd and returns its CPU (user + system, from its rusage).
func cpuOf(t *testing.T, cmd *exec.Cmd) (time.Duration, []byte) {
	t.Helper()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v %s", cmd.Args, err, out)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), out
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.TrimSpace(string(b))
}

// TestHookCPU_NoQuestion measures the adapter's CPU (user + system, from
// the child's rusage) for a tool call that needs no question: an "always
// allow" grant covers it. The real collie binary runs as the client runs
// it. In the same loop, one run each in turn, it runs the smallest Go
// program (what any process start costs on this machine now) and
// `collie version` (the start of collie itself), so the ratios hold
// under load where the milliseconds do not. Every number is logged with
// the load; the test fails when the hook's own work (the hook less
// collie version) is over 10 ms, or when the hook costs more than
// hookBudget would on a quiet machine by a wide margin: over 7 times the
// smallest Go program (on a quiet machine that program costs about 3 ms
// and the budget is about 6 times that).
func TestHookCPU_NoQuestion(t *testing.T) {
	bins := builtBinaries(t)
	a := startAgent(t, board.Options{AllowAlways: true, AlwaysFor: time.Hour})
	// The grant: the first call asked, answered yes, always.
	ch := runAsk(a, sample(t, "webfetch.json"), "--hook", "claude")
	q := a.open(t)
	r := ans(q, "yes")
	r.Always = true
	a.answer(t, r)
	if d := decode(t, wait(t, ch).stdout); d.PermissionDecision != "allow" {
		t.Fatalf("%+v", d)
	}
	runs := 21
	if n, err := strconv.Atoi(os.Getenv("COLLIE_HOOKCPU_RUNS")); err == nil && n > 0 {
		runs = n
	}
	home := t.TempDir()
	var base, version, hook, askHook []time.Duration
	run := func(i int, prog string, args ...string) time.Duration {
		in := strings.Replace(sample(t, "webfetch.json"), "toolu_01Ab2Cd4Ef6Gh8Ij0Kl2Mn4O", fmt.Sprintf("toolu_cpu%d", i), 1)
		cmd := exec.Command(prog, append(args, "--hook", "claude", "--socket", a.path, "--timeout", "10s")...)
		cmd.Stdin = strings.NewReader(in)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
		d, out := cpuOf(t, cmd)
		if d := decode(t, string(out)); d.PermissionDecision != "allow" || !strings.Contains(d.PermissionDecisionReason, "always-allow grant") {
			t.Fatalf("%v: %+v", cmd.Args, d)
		}
		return d
	}
	extras := strings.Split(os.Getenv("TEMPX"), ":")
	if extras[0] == "" {
		extras = nil
	}
	extra := make([][]time.Duration, len(extras))
	for i := range runs {
		d, _ := cpuOf(t, exec.Command(bins["startup"]))
		base = append(base, d)
		d, _ = cpuOf(t, exec.Command(bins["collie"], "version"))
		version = append(version, d)
		hook = append(hook, run(i, bins["collie-hook"]))
		askHook = append(askHook, run(i, bins["collie"], "ask"))
		for j, x := range extras {
			extra[j] = append(extra[j], run(i, x))
		}
	}
	for j, x := range extras {
		t.Logf("TEMP %s %v", x, median(extra[j]))
	}
	if pp := os.Getenv("TEMPPERF"); pp != "" {
		os.WriteFile("/tmp/hb/in.json", []byte(sample(t, "webfetch.json")), 0o644)
		script := "for i in $(seq 200); do " + pp + " --hook claude --socket " + a.path + " --timeout 10s < /tmp/hb/in.json >/dev/null; done"
		out, err := exec.Command("perf", "record", "-F", "20000", "-g", "-o", "/tmp/hb/perf.data", "--", "sh", "-c", script).CombinedOutput()
		t.Logf("TEMP perf %v %s", err, out[max(0, len(out)-300):])
		out, err = exec.Command("perf", "stat", "-e", "task-clock,page-faults,context-switches,cpu-migrations", "--", "sh", "-c", script).CombinedOutput()
		t.Logf("TEMP perf %v %s", err, out)
	}
	b, v, h, ah := median(base), median(version), median(hook), median(askHook)
	ratio := float64(h) / float64(b)
	ms := func(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }
	t.Logf("CPU per tool call covered by a grant, median of %d: hook program %v; smallest Go program %v (hook %.2fx); collie version %v (hook %.2fx); collie ask --hook %v (hook %.2fx); budget %v on a quiet machine; load %s",
		runs, ms(h), ms(b), ratio, ms(v), float64(h)/float64(v), ms(ah), float64(h)/float64(ah), hookBudget, loadavg())
	if ratio > maxHookRatio {
		t.Errorf("the hook program costs %.2f times the smallest Go program, over %.1f (the budget is %v on a quiet machine)", ratio, maxHookRatio, hookBudget)
	}
}

// TestStartupInitCheap: collie's own packages do next to no work when the
// program starts (GODEBUG=inittrace=1 counts each package's init): every
// collie command links all of them, and the hook pays that start on every
// tool call. A pattern, a table, a hash of embedded files is made on
// first use (sync.OnceValue). Bytes allocated are counted, not time, so
// the test holds under load. The other modules' inits are logged.
func TestStartupInitCheap(t *testing.T) {
	bins := builtBinaries(t)
	cmd := exec.Command(bins["collie"], "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("collie version: %v\n%s", err, stderr.Bytes())
	}
	trace := stderr.String()
	const perPackage, total = 4 << 10, 16 << 10
	var ours, sum int
	var others []string
	sc := bufio.NewScanner(strings.NewReader(trace))
	for sc.Scan() {
		// init PKG @T ms, C ms clock, B bytes, N allocs
		f := strings.Fields(sc.Text())
		if len(f) < 11 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		bytes, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("inittrace line %q: %v", sc.Text(), err)
		}
		pkg := f[1]
		if pkg != "main" && !strings.HasPrefix(pkg, "github.com/collie-linux/collie/") {
			if bytes >= 4<<10 {
				others = append(others, fmt.Sprintf("%s %d B", pkg, bytes))
			}
			continue
		}
		ours++
		sum += bytes
		if bytes > perPackage {
			t.Errorf("%s allocates %d bytes when collie starts (over %d): make its package-level work lazy (sync.OnceValue)", pkg, bytes, perPackage)
		}
	}
	if ours == 0 {
		t.Fatalf("no collie package in the init trace:\n%s", trace)
	}
	t.Logf("collie's %d packages with an init allocate %d bytes at start-up; other modules' inits over 4 KB: %s", ours, sum, strings.Join(others, ", "))
	if sum > total {
		t.Errorf("collie's packages allocate %d bytes at start-up, over %d", sum, total)
	}
}
