package doctor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/bridge/push/ntfy"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
)

// noProviderFix is what to do when no push provider is in use.
const noProviderFix = "set topic in [push.ntfy] of config.toml (collie.toml(5)) and subscribe to it in the ntfy app (README: Pushes on your phone), then: systemctl --user reload collie; or turn notifications on in Collie on your phone"

// checkPush is the push row (D4, D9): the providers [push] configures,
// the daemon's providers in use (a provider with nowhere to deliver to is
// not) and the last push's result at each, and whether the guard holds
// pushes back now, and until when.
func checkPush(ctx context.Context, e *Env) []Row {
	cfg, path, skipped := loadConfig(e)
	if skipped != nil {
		return skipped
	}
	edit := "edit [push.ntfy] in " + path + " (collie.toml(5)), then: systemctl --user reload collie"
	if n := cfg.Push.Ntfy; n != nil {
		if err := checkNtfy(*n); err != nil {
			return []Row{fail(edit, "ntfy: %v", err)}
		}
	}
	st, rows := pushStatus(ctx, e)
	if rows != nil {
		return rows
	}
	for _, off := range st.Off {
		if strings.HasPrefix(off, "ntfy:") {
			return []Row{fail(edit, "%s", clean(off))}
		}
	}
	if len(st.Providers) == 0 {
		why := ""
		if len(st.Off) > 0 {
			why = " (" + clean(strings.Join(st.Off, "; ")) + ")"
		}
		if cfg.Push.Desktop != nil && *cfg.Push.Desktop {
			// Asked for, and not there.
			return []Row{warn(noProviderFix, "no push provider is in use%s: a question is seen only while the web page is open", why)}
		}
		// Pushes are optional: a fresh installation is ok, and says how.
		return []Row{ok("no push provider is in use%s, so a question is seen only while the web page is open; to get pushes on your phone: %s", why, noProviderFix)}
	}
	msg := fmt.Sprintf("providers: %s; %s; %s", strings.Join(st.Providers, ", "), counters(st), guardNow(st))
	names := slices.Sorted(maps.Keys(st.Last))
	var last []string
	for _, name := range names {
		r := st.Last[name]
		if !r.OK {
			return []Row{warn("collie push test; then check [push] in "+path+" (collie.toml(5))",
				"%s; the last push at %s (%s, %s) failed after %d tries: %s", msg, name, r.Kind, r.At.Local().Format(time.DateTime), r.Attempts, clean(r.Answer))}
		}
		last = append(last, fmt.Sprintf("%s ok at %s", name, r.At.Local().Format(time.DateTime)))
	}
	if len(last) == 0 {
		return []Row{ok("%s; no push sent yet (collie push test sends one)", msg)}
	}
	return []Row{ok("%s; last push: %s", msg, strings.Join(last, ", "))}
}

// checkNtfy checks [push.ntfy] as the daemon will take it; a token from
// token_env is the daemon's environment's, so only the daemon's row can
// tell.
func checkNtfy(n config.Ntfy) error {
	tok := ""
	switch {
	case n.TokenFile != "" && n.TokenEnv != "":
		return errors.New("[push.ntfy] has both token_file and token_env; keep one")
	case n.TokenFile != "":
		var err error
		if tok, err = n.Token(func(string) string { return "" }); err != nil {
			return err
		}
	}
	_, err := ntfy.New(ntfy.Options{Server: n.ServerURL(), Topic: n.Topic, Token: tok, Priority: n.Priority})
	return err
}

// counters are the guard's counts since the daemon started: pushes
// delivered (questions', the summaries, tests), questions held back, and
// pushes that reached no one, which count against no limit.
func counters(st control.PushStatus) string {
	s := fmt.Sprintf("since the daemon started %d delivered, %d held back, %d summaries, %d test pushes", st.Sent, st.Held, st.Summaries, st.Tests)
	if st.Undelivered > 0 {
		s += fmt.Sprintf(", %d reached no one (not counted)", st.Undelivered)
	}
	return s
}

// guardNow says whether the guard holds pushes back now.
func guardNow(st control.PushStatus) string {
	switch {
	case st.HoldingBack != "" && !st.Until.IsZero():
		return fmt.Sprintf("the guard holds pushes back until %s: %s", st.Until.Local().Format("15:04:05"), st.HoldingBack)
	case st.HoldingBack != "":
		return "the guard holds pushes back now: " + st.HoldingBack
	case st.SentLastHour >= 30:
		return "30 pushes in the last hour: the next question becomes the summary push"
	}
	return fmt.Sprintf("the guard lets the next push out (%d in the last hour)", st.SentLastHour)
}

func clean(s string) string {
	s, _ = sanitize.Line(s, 1024)
	return s
}

// checkReload is the config-reload row: whether the running daemon has
// config.toml as it is on disk. An edit not yet reloaded, a reload refused
// (the daemon kept the settings it had) and settings that a reload cannot
// apply (the device API's listener, [agents], Web Push on or off) each say
// what to run.
func checkReload(ctx context.Context, e *Env) []Row {
	if e.PathsErr != nil {
		return noPaths(e)
	}
	st, rows := pushStatus(ctx, e)
	switch {
	case rows != nil:
		return rows
	case st.Config == nil:
		return []Row{skip("", "the daemon reads no config.toml (collie demo)")}
	}
	c := *st.Config
	path := e.Paths.ConfigFile()
	read := c.ReadAt.Local().Format(time.DateTime)
	switch {
	case c.Error != "":
		return []Row{fail("fix "+path+" as the message says, then: systemctl --user reload collie",
			"the last reload of config.toml was refused, so the daemon runs with the settings it read at %s: %s", read, clean(c.Error))}
	case len(c.Restart) > 0:
		return []Row{warn("systemctl --user restart collie",
			"config.toml changed %s since the daemon started; a reload cannot apply that, a restart does", strings.Join(c.Restart, ", "))}
	}
	if fi, err := os.Stat(path); err == nil && fi.ModTime().After(c.ReadAt) {
		return []Row{warn("systemctl --user reload collie (what a reload cannot apply, it names here)",
			"config.toml changed at %s, after the daemon read it at %s", fi.ModTime().Local().Format(time.DateTime), read)}
	}
	return []Row{ok("the daemon runs with config.toml as it is (read at %s)", read)}
}

// pushStatus asks the running daemon for its push status; without an
// answer it returns the row that says why.
func pushStatus(ctx context.Context, e *Env) (control.PushStatus, []Row) {
	if e.Push == nil {
		return control.PushStatus{}, []Row{notRunning(e)}
	}
	cctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	st, err := e.Push(cctx)
	switch {
	case errors.Is(err, control.ErrNotRunning):
		return st, []Row{notRunning(e)}
	case err != nil:
		return st, []Row{skip("see the daemon row", "the daemon does not answer about pushes: %v", err)}
	}
	return st, nil
}
