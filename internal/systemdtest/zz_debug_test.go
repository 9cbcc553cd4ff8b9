package systemdtest

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestZZHang(t *testing.T) {
	if os.Getenv("ZZ") == "" {
		t.Skip()
	}
	um := Start(t)
	ctx := context.Background()
	um.InstallUnit("hang.service", "[Service]\nExecStart=/bin/sleep 1000\n")
	um.Systemctl(ctx, "start", "hang.service")
	um.Run(ctx, "/bin/sh", "-c", "sleep 999 >/dev/null 2>&1 &")
	t.Log("ready")
	time.Sleep(time.Hour)
}
