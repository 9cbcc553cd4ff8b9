package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSummary runs go test on testdata/mod, a module whose tests pass,
// fail and skip, through the summary: go test's own closing lines and a
// failed test's log are printed, a passed or skipped test's are not, the
// skips are listed by reason, and the exit status is go test's.
func TestSummary(t *testing.T) {
	goBin, err := exec.LookPath("go") // go test puts its own first in PATH
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join("testdata", "mod"))
	skips := []string{
		"skipped: 4 tests, for 2 reasons:",
		"  chromium is not installed (3)",
		"    example.com/mod/a: TestTable/one, TestTable/two",
		"    example.com/mod/b: TestChromium",
		"  needs root to start a user manager (1)",
		"    example.com/mod/a: TestSkip",
	}
	tests := []struct {
		name    string
		fail    bool
		verbose bool
		args    []string
		status  int
		want    []string // lines, in this order
		not     []string // in no line
	}{
		{"all_pass", false, false, []string{"./..."}, 0,
			append([]string{"ok  \texample.com/mod/a", "ok  \texample.com/mod/b"}, skips...),
			[]string{"not shown", "=== RUN", "--- SKIP", "PASS", "FAIL"}},
		{"one_fails", true, false, []string{"./..."}, 1,
			append([]string{"    a_test.go:22: the log of a failed test", "    a_test.go:23: boom", "--- FAIL: TestFail", "FAIL\texample.com/mod/a", "ok  \texample.com/mod/b", "FAIL"}, skips...),
			[]string{"not shown", "=== RUN", "--- SKIP"}},
		{"verbose", false, true, []string{"-run", "TestPass|TestSkip", "-v", "./a"}, 0,
			[]string{"=== RUN   TestPass", "    a_test.go:8: not shown", "--- SKIP: TestSkip", "PASS", "ok  \texample.com/mod/a", "skipped: 1 test, for 1 reason:"},
			nil},
		{"no_such_package", false, false, []string{"./nope"}, 1,
			[]string{"FAIL\t./nope [setup failed]", "FAIL", "skipped: none"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.fail {
				t.Setenv("SUMMARY_FAIL", "1")
			} else {
				t.Setenv("SUMMARY_FAIL", "")
			}
			var out bytes.Buffer
			status := run(&out, append([]string{goBin, "test", "-count=1"}, tc.args...), tc.verbose, "")
			if status != tc.status {
				t.Errorf("exit status %d, want %d (go test's)\n%s", status, tc.status, out.String())
			}
			lines := strings.Split(out.String(), "\n")
			at := 0
			for _, want := range tc.want {
				// Packages run side by side and each one's lines come as it
				// ends (go test -json's order): a package's result line
				// must be there, anywhere among the packages' lines.
				if isResult(want) {
					if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, want) }) {
						t.Fatalf("no line %q in its place in:\n%s", want, out.String())
					}
					continue
				}
				for at < len(lines) && !strings.HasPrefix(lines[at], want) {
					at++
				}
				if at == len(lines) {
					t.Fatalf("no line %q in its place in:\n%s", want, out.String())
				}
				at++
			}
			for _, line := range lines {
				for _, not := range tc.not {
					if strings.Contains(line, not) {
						t.Errorf("the line %q holds %q:\n%s", line, not, out.String())
					}
				}
			}
		})
	}
}

// TestSkipsKeptAcrossRuns: make test runs go test twice and reports the
// skips of both once.
func TestSkipsKeptAcrossRuns(t *testing.T) {
	file := filepath.Join(t.TempDir(), "skips")
	for _, s := range [][]skip{{{"p", "TestA", "chromium is not installed"}}, {{"q", "TestB", "chromium is not installed"}, {"q", "TestC", "needs root"}}} {
		if err := appendSkips(file, s); err != nil {
			t.Fatal(err)
		}
	}
	got, err := readSkips(file)
	if err != nil || len(got) != 3 {
		t.Fatalf("readSkips = %v, %v", got, err)
	}
	var out bytes.Buffer
	printSkips(&out, got)
	want := "skipped: 3 tests, for 2 reasons:\n  chromium is not installed (2)\n    p: TestA\n    q: TestB\n  needs root (1)\n    q: TestC\n"
	if out.String() != want {
		t.Errorf("printSkips:\n%s\nwant:\n%s", out.String(), want)
	}
	if got, err := readSkips(filepath.Join(t.TempDir(), "none")); err != nil || got != nil {
		t.Errorf("no file: %v, %v", got, err)
	}
	if err := os.WriteFile(file, []byte("{not json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readSkips(file); err == nil {
		t.Error("a broken file was read")
	}
}

func TestReason(t *testing.T) {
	for _, tc := range []struct {
		lines []string
		want  string
	}{
		{[]string{"=== RUN   TestX\n", "    x_test.go:12: skipped: needs root to start systemd\n", "--- SKIP: TestX (0.00s)\n"}, "needs root to start systemd"},
		{[]string{"    x_test.go:3: first\n", "    x_test.go:4: second: with a colon\n"}, "first second: with a colon"},
		{[]string{"--- SKIP: TestX (0.00s)\n"}, "no reason given"},
	} {
		if got := reason(tc.lines); got != tc.want {
			t.Errorf("reason(%q) = %q, want %q", tc.lines, got, tc.want)
		}
	}
}

// isResult reports whether want is a package's result line of the sample
// module.
func isResult(want string) bool {
	return strings.HasPrefix(want, "ok  \texample.com/") || strings.HasPrefix(want, "FAIL\texample.com/")
}
