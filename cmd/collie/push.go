package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/collie-linux/collie/internal/config"
	"github.com/collie-linux/collie/internal/control"
	"github.com/collie-linux/collie/internal/hint"
	"github.com/collie-linux/collie/internal/push"
	"github.com/collie-linux/collie/internal/push/desktop"
	pushdispatch "github.com/collie-linux/collie/internal/push/dispatch"
	"github.com/collie-linux/collie/internal/push/guard"
	"github.com/collie-linux/collie/internal/push/ntfy"
	"github.com/collie-linux/collie/internal/push/webpush"
	"github.com/collie-linux/collie/internal/sanitize"
)

// desktopTimeout bounds finding the session bus's notification server at
// start-up.
const desktopTimeout = 5 * time.Second

// pushSetup is the daemon's pushes: the dispatcher, the providers not in
// use with why, and what closes the providers.
type pushSetup struct {
	d     *pushdispatch.Dispatcher
	off   []string
	close func()
	web   *webpush.Provider // nil: no Web Push
}

// setupPush builds the providers [push] asks for and the guard over them.
// A provider that cannot work is left out with an error line (ntfy, or a
// desktop asked for explicitly) or an info line (the desktop by default,
// where there is none); the daemon runs on without it, and collie doctor's
// push row says why. url is the web app's address, read at each push;
// withDevices says whether the device API is on (Web Push needs it).
func setupPush(ctx context.Context, e *env, paths config.Paths, cfg config.Push, log *slog.Logger, url func() string, withDevices bool) pushSetup {
	var providers []push.Provider
	s := pushSetup{close: func() {}}
	if n := cfg.Ntfy; n != nil {
		p, err := newNtfy(*n, e.getenv)
		if err != nil {
			log.Error("ntfy pushes are off: " + err.Error())
			s.off = append(s.off, "ntfy: "+err.Error())
		} else {
			providers = append(providers, p)
		}
	}
	switch {
	case cfg.Desktop != nil && !*cfg.Desktop:
		s.off = append(s.off, "desktop: turned off (desktop = false in [push])")
	default:
		p, err := newDesktop(ctx, e.getenv, log)
		if err != nil {
			msg := "desktop notifications are off: " + err.Error()
			if cfg.Desktop != nil {
				log.Warn(msg)
			} else {
				log.Info(msg)
			}
			s.off = append(s.off, "desktop: "+err.Error())
		} else {
			providers = append(providers, p)
			s.close = func() { p.Close() }
		}
	}
	switch {
	case cfg.WebPush != nil && !*cfg.WebPush:
		s.off = append(s.off, "webpush: turned off (webpush = false in [push])")
	case !withDevices:
		s.off = append(s.off, "webpush: the device API is off, so no browser can turn notifications on")
	default:
		// The VAPID key is made at first start (issue 13); the device
		// store is handed to the provider when the bridge opens it.
		p, err := webpush.New(webPushOptions(paths, cfg, log))
		if err != nil {
			log.Error("Web Push is off: " + err.Error())
			s.off = append(s.off, "webpush: "+err.Error())
		} else {
			providers = append(providers, p)
			s.web = p
		}
	}
	g, err := guard.Open(guard.Options{Path: filepath.Join(paths.State, guard.FileName)})
	if err != nil {
		log.Error("the push guard's counts: " + err.Error())
	}
	names := make([]string, len(providers))
	for i, p := range providers {
		names[i] = p.Name()
	}
	log.Info("pushes", "providers", names, "preview", cfg.Preview)
	s.d = pushdispatch.New(pushdispatch.Options{Guard: g, Providers: providers, Log: log, Preview: cfg.Preview, URL: url})
	return s
}

// webPushOptions are the Web Push provider's settings from [push]: the
// key in the state folder, and the contact a push service's operator sees.
func webPushOptions(paths config.Paths, cfg config.Push, log *slog.Logger) webpush.Options {
	return webpush.Options{StateDir: paths.State, Log: log, Subject: cfg.ContactURI()}
}

func newNtfy(n config.Ntfy, getenv func(string) string) (*ntfy.Provider, error) {
	tok, err := n.Token(getenv)
	if err != nil {
		return nil, err
	}
	return ntfy.New(ntfy.Options{Server: n.ServerURL(), Topic: n.Topic, Token: tok, Priority: n.Priority})
}

func newDesktop(ctx context.Context, getenv func(string) string, log *slog.Logger) (*desktop.Provider, error) {
	addr, err := desktop.SessionAddress(getenv)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, desktopTimeout)
	defer cancel()
	return desktop.New(ctx, desktop.Options{Address: addr, Log: log})
}

// cmdPushTest sends one test push through the daemon's guard and every
// provider, and says what each answered.
func cmdPushTest(ctx context.Context, e *env, args []string) error {
	fs := newFlags("collie push test", e)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	paths, err := e.paths()
	if err != nil {
		return err
	}
	t, err := control.NewClient(paths.Control()).PushTest(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		if err := writeJSON(e.stdout, t); err != nil {
			return err
		}
	}
	switch {
	case t.Held != "":
		return hint.Errorf("collie doctor --check push says when pushes go out again", "the push guard held the test push back: %s", t.Held)
	case len(t.Answers) == 0:
		return hint.New("no push provider is in use", "set [push.ntfy] in config.toml (collie.toml(5)) or run the daemon in a desktop session, then: systemctl --user restart collie; collie doctor --check push says why a provider is off")
	}
	failed := 0
	for _, a := range t.Answers {
		state := "ok"
		if !a.OK {
			state, failed = "failed", failed+1
		}
		if !*asJSON {
			fmt.Fprintf(e.stdout, "%s: %s: %s\n", sanitize.TerminalLine(a.Provider), state, sanitize.TerminalLine(a.Answer))
		}
	}
	switch failed {
	case 0:
		return nil
	case 1:
		return hint.New("1 push provider failed", "fix what its line says, then collie push test again")
	}
	return hint.Errorf("fix what their lines say, then collie push test again", "%d push providers failed", failed)
}
