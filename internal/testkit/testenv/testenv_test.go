package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestUnavailable runs this binary's TestChildUnavailable with CI unset
// and with CI=true: it skips with the reason, and fails under CI=true.
func TestUnavailable(t *testing.T) {
	run := func(ci string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestChildUnavailable$", "-test.v", "-test.count=1")
		cmd.Env = append(withoutCI(os.Environ()), "TESTENV_CHILD=1")
		if ci != "" {
			cmd.Env = append(cmd.Env, "CI="+ci)
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	tests := []struct {
		ci       string
		fails    bool
		want     string
		wantLine string
	}{
		{ci: "", want: "--- SKIP: TestChildUnavailable", wantLine: "skipped: needs root to test the helper"},
		{ci: "false", want: "--- SKIP: TestChildUnavailable", wantLine: "skipped: needs root to test the helper"},
		{ci: "true", fails: true, want: "--- FAIL: TestChildUnavailable", wantLine: "needs root to test the helper (CI=true, so this fails instead of skipping)"},
	}
	for _, tt := range tests {
		out, err := run(tt.ci)
		if (err != nil) != tt.fails || !strings.Contains(out, tt.want) || !strings.Contains(out, tt.wantLine) {
			t.Errorf("CI=%q: err %v, want failure %v, %q and %q in:\n%s", tt.ci, err, tt.fails, tt.want, tt.wantLine, out)
		}
		if strings.Contains(out, "after Unavailable") {
			t.Errorf("CI=%q: the test went on after Unavailable:\n%s", tt.ci, out)
		}
	}
}

// TestChildUnavailable is TestUnavailable's child; it does nothing unless
// TESTENV_CHILD is set.
func TestChildUnavailable(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") == "" {
		return
	}
	if os.Geteuid() == 0 {
		Unavailable(t, "needs root to test the helper") // as RequireRoot says it
	} else {
		RequireRoot(t, "test the helper")
	}
	t.Log("after Unavailable")
}

func withoutCI(env []string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, "CI=") {
			out = append(out, e)
		}
	}
	return out
}
