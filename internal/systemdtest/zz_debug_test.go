package systemdtest

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestZZRace(t *testing.T) {
	if os.Getenv("ZZ") == "" {
		t.Skip()
	}
	um := Start(t)
	ctx := context.Background()
	um.InstallUnit("quick.service", "[Service]\nExecStart=/bin/echo quick\n")
	for i := 0; i < 10; i++ {
		um.Systemctl(ctx, "start", "quick.service")
	}
	time.Sleep(time.Second)
	es, _ := um.JournalEntries(ctx, "MESSAGE=quick")
	for _, e := range es {
		t.Logf("unit=%q user_unit=%q", e["_SYSTEMD_UNIT"], e["_SYSTEMD_USER_UNIT"])
	}
}
