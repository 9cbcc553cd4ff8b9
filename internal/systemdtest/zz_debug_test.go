package systemdtest

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestZZDebug(t *testing.T) {
	if os.Getenv("ZZ") == "" {
		t.Skip()
	}
	um := Start(t)
	ctx := context.Background()
	time.Sleep(300 * time.Millisecond)
	out, _ := um.Journal(ctx, "-o", "short-monotonic")
	t.Log(out)
	out, _ = um.Run(ctx, "/bin/cat", "/proc/self/cgroup")
	t.Log(out)
	out, _ = um.Systemctl(ctx, "status", "--no-pager")
	t.Log(out)
	out, _ = um.RunRoot(ctx, "/bin/sh", "-c", "cat /proc/self/mountinfo | grep -E 'cgroup|run|journal'")
	t.Log(out)
}
