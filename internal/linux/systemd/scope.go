package systemd

import (
	"context"
	"fmt"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
)

// StartScope asks the user manager for a transient scope unit name
// (StartTransientUnit, as systemd-run --user --scope does) holding the
// processes pids, and waits until the manager has started it, so the
// processes are in the scope's cgroup when it returns. The scope goes
// away by itself once its last process exits (CollectMode
// inactive-or-failed: a failed scope is not left behind either).
//
// Where the processes sit outside the manager's own cgroup (a login
// session's scope), the manager cannot move them itself and asks the
// system manager to (AttachProcessesToUnit); without a system manager
// that fails, and so does StartScope.
func (m *UserManager) StartScope(ctx context.Context, name, description string, pids ...int) error {
	ps := make([]uint32, len(pids))
	for i, p := range pids {
		ps[i] = uint32(p)
	}
	props := []sddbus.Property{
		sddbus.PropDescription(description),
		sddbus.PropPids(ps...),
		{Name: "CollectMode", Value: dbus.MakeVariant("inactive-or-failed")},
	}
	done := make(chan string, 1)
	if _, err := m.c.StartTransientUnitContext(ctx, name, "fail", props, done); err != nil {
		return fmt.Errorf("start the scope %s: %w", name, err)
	}
	select {
	case res := <-done:
		if res != "done" {
			return fmt.Errorf("start the scope %s: the job ended %q (the user manager's journal says why: journalctl --user -u %s)", name, res, name)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("start the scope %s: %w", name, ctx.Err())
	}
}
