// Package testenv decides what a test does when the machine cannot run
// it: on a developer's machine it skips with the reason, and under CI=true
// it fails, so that CI cannot pass by skipping (the bar of the project's
// tests). It also says what the machine is doing ([Load]), for the tests
// and benchmarks that log a figure beside the load it was taken at.
//
// Every test that skips because of its environment (not root, a tool or
// a package missing, no pid namespace, no 127.0.0.2, no systemd) goes
// through [Unavailable] or one of its forms. TestSkipsGoThroughTestenv
// holds the tree to that: a t.Skip anywhere else must be on its short
// allow-list of skips that do not depend on the machine (-short, a helper
// process's own entry point, another operating system).
package testenv

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// Load is the machine's load averages over 1, 5 and 15 minutes as
// /proc/loadavg gives them ("1.02 0.87 0.51"), or "unknown" where there
// is none: a timing is read beside the load it was taken at.
func Load() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// InCI reports whether the tests run in CI: the environment variable CI
// is "true", as .ci/run sets it and as CI services do.
func InCI() bool { return os.Getenv("CI") == "true" }

// Unavailable skips t, saying reason, or fails it under CI=true, where
// every test must run. reason says what is missing and, where it helps,
// how to get it ("needs root to ...", "bash is not installed (see
// .ci/deps)").
func Unavailable(t testing.TB, reason string) {
	t.Helper()
	if InCI() {
		t.Fatalf("%s (CI=true, so this fails instead of skipping)", reason)
	}
	t.Skipf("skipped: %s", reason)
}

// Unavailablef is Unavailable with a reason formatted as fmt.Sprintf does.
func Unavailablef(t testing.TB, format string, args ...any) {
	t.Helper()
	Unavailable(t, fmt.Sprintf(format, args...))
}

// RequireRoot returns when the test runs as root, and otherwise is
// Unavailable with "needs root to " and what: CI runs the tests as root.
func RequireRoot(t testing.TB, what string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	Unavailable(t, "needs root to "+what)
}
