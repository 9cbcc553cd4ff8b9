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
	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// hookBudget is the adapter's CPU per tool call that needs no question,
// on a quiet machine.
const hookBudget = 20 * time.Millisecond

// maxHookRatio is the most the hook program may cost, in times the
// smallest Go program measured beside it. It measured 1.9 to 2.2 times
// (with the load from 2 to 13 on a 2-core machine: a quiet machine's
// smallest program costs 4 to 6 ms, so the hook about 10); 3 leaves room
// for the load, and is still well within hookBudget on a quiet machine.
const maxHookRatio = 3.0

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
		cmd := exec.Command("go", "build", "-o", bins[name], pkg)
		if name == "collie-hook" {
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build builds it
		}
		if out, err := cmd.CombinedOutput(); err != nil {
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

// TestHookCPU_NoQuestion measures the hook's CPU (user + system, from
// the child's rusage) for a tool call that needs no question: an "always
// allow" grant covers it. The hook program (cmd/collie-hook, built as
// make build builds it) runs as the client runs it. In the same loop, one
// run each in turn, it runs the smallest Go program (what any process
// start costs on this machine now), `collie version` (the start of collie
// itself) and collie ask --hook (the same hook inside collie), so the
// ratios hold under load where the milliseconds do not. Every number is
// logged with the load; the test fails when the hook program costs more
// than maxHookRatio times the smallest Go program, or not less than
// collie version.
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
	for i := range runs {
		d, _ := cpuOf(t, exec.Command(bins["startup"]))
		base = append(base, d)
		d, _ = cpuOf(t, exec.Command(bins["collie"], "version"))
		version = append(version, d)
		hook = append(hook, run(i, bins["collie-hook"]))
		askHook = append(askHook, run(i, bins["collie"], "ask"))
	}
	b, v, h, ah := median(base), median(version), median(hook), median(askHook)
	ratio := float64(h) / float64(b)
	ms := func(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }
	t.Logf("CPU per tool call covered by a grant, median of %d: hook program %v; smallest Go program %v (hook %.2fx); collie version %v (hook %.2fx); collie ask --hook %v (hook %.2fx); budget %v on a quiet machine; load %s",
		runs, ms(h), ms(b), ratio, ms(v), float64(h)/float64(v), ms(ah), float64(h)/float64(ah), hookBudget, testenv.Load())
	if ratio > maxHookRatio {
		t.Errorf("the hook program costs %.2f times the smallest Go program, over %.1f (the budget is %v on a quiet machine)", ratio, maxHookRatio, hookBudget)
	}
	if h >= v {
		t.Errorf("the hook program costs %v, not less than collie version (%v): it links too much", h, v)
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
