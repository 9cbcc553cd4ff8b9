package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/systemdtest"
)

// prepareSandboxing makes /run/systemd/unit-root in the test's namespace.
// On a booted system PID 1 makes it; a user manager bind-mounts / there to
// set up the mount namespace of a sandboxed unit (ProtectSystem= and the
// like, which collie.service uses), and fails with "Failed to set up mount
// namespacing" without it.
func prepareSandboxing(t *testing.T, um *systemdtest.UserManager) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := um.RunRoot(ctx, "mkdir", "-p", "/run/systemd/unit-root"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}
