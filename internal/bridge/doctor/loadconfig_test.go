package doctor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/collie-linux/collie/internal/bridge/config"
)

// TestRowsThatNeedTheConfig: a check that reads config.toml is skipped,
// pointing at the config row, when the file does not parse or the XDG
// folders are not known; it neither fails on its own nor guesses.
func TestRowsThatNeedTheConfig(t *testing.T) {
	dir := t.TempDir()
	paths := config.Paths{Config: filepath.Join(dir, "config"), State: filepath.Join(dir, "state"), Runtime: filepath.Join(dir, "run")}
	if err := os.MkdirAll(filepath.Dir(paths.ConfigFile()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(paths.ConfigFile(), []byte("[devices\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	checks := map[string]func(context.Context, *Env) []Row{
		"agent-login": checkAgentLogin, "devices": checkDeviceListener, "public-url": checkPublicURL, "push": checkPush,
	}
	for name, check := range checks {
		for env, want := range map[*Env]string{
			{Paths: paths}:                    "skipped: config.toml cannot be read (see the config row)",
			{PathsErr: errors.New("no HOME")}: "skipped: the XDG folders are not known (see the config row)",
		} {
			rows := check(context.Background(), env)
			if len(rows) != 1 || rows[0].Status != Skip || rows[0].Message != want || rows[0].Fix != "fix the config row first" {
				t.Errorf("%s: %+v, want one skipped row: %s", name, rows, want)
			}
		}
	}
}
