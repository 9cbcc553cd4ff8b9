package doctor

import (
	"context"
	"errors"
	"time"

	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/login/platformkey"
)

// checkAgentLogin is the agent-login row: whether agents on an
// agent platform can log in to the bridge, and how many sessions the
// daemon holds. Agent login is optional: off is ok, and says how.
func checkAgentLogin(ctx context.Context, e *Env) []Row {
	cfg, path, skipped := loadConfig(e)
	if skipped != nil {
		return skipped
	}
	key := cfg.Agents.PlatformKeyFile
	restart := "edit [agents] in " + path + " (collie.toml(5)), then: systemctl --user restart collie"
	if key == "" {
		return []Row{ok("agent login is off (optional): to let agents on an agent platform log in with collie login, set platform_key_file in [agents] of %s to the platform's public key (collie.toml(5), docs/agent-login.md)", path)}
	}
	if _, err := platformkey.Load(key); err != nil {
		return []Row{fail(restart, "%s", clean(err.Error()))}
	}
	if _, on := cfg.Devices.DeviceListen(); !on {
		return []Row{warn("set listen in [devices] of "+path+", then: systemctl --user restart collie", "agent login is set up, but the device API is off, and the agent surface is served on its listener")}
	}
	if e.AgentSessions == nil {
		return []Row{ok("agent login is on (the platform's key %s); the daemon is not running", key)}
	}
	cctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	list, err := e.AgentSessions(cctx)
	switch {
	case errors.Is(err, control.ErrNotRunning):
		return []Row{ok("agent login is on (the platform's key %s); the daemon is not running", key)}
	case err != nil:
		return []Row{warn("see the daemon row and the journal (journalctl --user -u collie)", "agent login is set up, but the daemon does not serve it: %s", clean(err.Error()))}
	}
	live := 0
	for _, s := range list {
		if s.Revoked.IsZero() && s.RefreshExpires.After(time.Now()) {
			live++
		}
	}
	return []Row{ok("agent login is on (the platform's key %s); %d live agent session(s), see: collie agents list", key, live)}
}
