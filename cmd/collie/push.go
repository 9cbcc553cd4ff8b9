package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/bridge/push"
	"github.com/collie-linux/collie/internal/bridge/push/desktop"
	pushdispatch "github.com/collie-linux/collie/internal/bridge/push/dispatch"
	"github.com/collie-linux/collie/internal/bridge/push/guard"
	"github.com/collie-linux/collie/internal/bridge/push/ntfy"
	"github.com/collie-linux/collie/internal/bridge/push/webpush"
	"github.com/collie-linux/collie/internal/cli/hint"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
)

// desktopTimeout bounds finding the session bus's notification server at
// start-up.
const desktopTimeout = 5 * time.Second

// pushSetup is the daemon's pushes: the dispatcher, the Web Push
// provider, and what config.toml's [push] made of the rest (providers,
// those left out with why, what closes them), which a reload changes.
type pushSetup struct {
	d   *pushdispatch.Dispatcher
	web *webpush.Provider // nil: no Web Push

	mu     sync.Mutex
	off    []string
	closer func() // closes the current providers
}

// pushProviders is what [push] makes, apart from Web Push, which lives as
// long as the daemon (the device API serves its key).
type pushProviders struct {
	list   []push.Provider
	off    []string
	closer func()
}

// setupPush builds the providers [push] asks for and the guard over them.
// A provider that cannot work is left out with an error line (ntfy, or a
// desktop asked for explicitly) or an info line (the desktop by default,
// where there is none); the daemon runs on without it, and collie doctor's
// push row says why. url is the web app's address, read at each push;
// withDevices says whether the device API is on (Web Push needs it).
func setupPush(ctx context.Context, e *env, paths config.Paths, cfg config.Push, log *slog.Logger, url func() string, withDevices bool) *pushSetup {
	s := &pushSetup{}
	var webOff []string
	switch {
	case cfg.WebPush != nil && !*cfg.WebPush:
		webOff = append(webOff, "webpush: turned off (webpush = false in [push])")
	case !withDevices:
		webOff = append(webOff, "webpush: the device API is off, so no browser can turn notifications on")
	default:
		// The VAPID key is made at first start; the device store is handed
		// to the provider when the bridge opens it.
		p, err := webpush.New(webPushOptions(paths, cfg, log))
		if err != nil {
			log.Error("Web Push is off: " + err.Error())
			webOff = append(webOff, "webpush: "+err.Error())
		} else {
			s.web = p
		}
	}
	pp := s.providers(ctx, e, cfg, log)
	pp.off = append(pp.off, webOff...)
	gpath := filepath.Join(paths.State, guard.FileName)
	g, err := guard.Open(guard.Options{Path: gpath})
	if err != nil {
		log.Error("the push guard's counts: "+err.Error()+"; to start afresh at once: systemctl --user stop collie; rm "+gpath+"; systemctl --user start collie", "path", gpath)
	}
	log.Info("pushes through "+providerNames(pp.list), "providers", names(pp.list), "preview", cfg.Preview)
	s.off, s.closer = pp.off, pp.closer
	s.d = pushdispatch.New(pushdispatch.Options{Guard: g, Providers: pp.list, Log: log, Preview: cfg.Preview, URL: url})
	return s
}

// providers builds ntfy and the desktop from cfg, with Web Push (kept as
// it is) last.
func (s *pushSetup) providers(ctx context.Context, e *env, cfg config.Push, log *slog.Logger) pushProviders {
	pp := pushProviders{closer: func() {}}
	if n := cfg.Ntfy; n != nil {
		p, err := newNtfy(*n, e.getenv)
		if err != nil {
			log.Error("ntfy pushes are off: " + err.Error())
			pp.off = append(pp.off, "ntfy: "+err.Error())
		} else {
			pp.list = append(pp.list, p)
		}
	}
	switch {
	case cfg.Desktop != nil && !*cfg.Desktop:
		pp.off = append(pp.off, "desktop: turned off (desktop = false in [push])")
	default:
		p, err := newDesktop(ctx, e.getenv, log)
		if err != nil {
			msg := "desktop notifications are off: " + err.Error()
			if cfg.Desktop != nil {
				log.Warn(msg)
			} else {
				log.Info(msg)
			}
			pp.off = append(pp.off, "desktop: "+err.Error())
		} else {
			pp.list = append(pp.list, p)
			pp.closer = func() { p.Close() }
		}
	}
	if s.web != nil {
		s.web.SetSubject(cfg.ContactURI())
		pp.list = append(pp.list, s.web)
	}
	return pp
}

// apply puts what a reloaded [push] makes in place: the dispatcher's
// providers and previews, what is left out, and closes the providers it
// replaced once their pushes on the way are done or cut.
func (s *pushSetup) apply(ctx context.Context, e *env, cfg config.Push, log *slog.Logger) {
	pp := s.providers(ctx, e, cfg, log)
	s.mu.Lock()
	webOff := slices.DeleteFunc(slices.Clone(s.off), func(o string) bool { return !strings.HasPrefix(o, "webpush:") })
	s.mu.Unlock()
	s.d.SetProviders(pp.list, cfg.Preview)
	s.mu.Lock()
	old := s.closer
	s.off, s.closer = append(pp.off, webOff...), pp.closer
	s.mu.Unlock()
	old()
	log.Info("pushes through "+providerNames(pp.list)+" after the reload", "providers", names(pp.list), "preview", cfg.Preview)
}

// Off lists the providers left out, each with why.
func (s *pushSetup) Off() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.off)
}

func (s *pushSetup) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closer()
}

func names(ps []push.Provider) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name()
	}
	return out
}

// providerNames is "ntfy, webpush", or "no provider".
func providerNames(ps []push.Provider) string {
	if len(ps) == 0 {
		return "no provider"
	}
	return strings.Join(names(ps), ", ")
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
	paths, asJSON, err := daemonRead(e, "collie push test", args)
	if err != nil {
		return err
	}
	t, err := control.NewClient(paths.Control()).PushTest(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		if err := writeJSON(e.stdout, t); err != nil {
			return err
		}
	}
	return reportPushTest(e.stdout, t, asJSON)
}

// reportPushTest prints what each provider answered collie push test
// (unless asJSON: the JSON is printed already), one line per provider
// and per failure, and returns the command's error: the guard held the
// test back (why, and when the next can go), nothing is in use, a
// provider failed, or nothing could be delivered.
func reportPushTest(w io.Writer, t control.PushTest, asJSON bool) error {
	switch {
	case t.Held != "":
		return hint.Errorf("test pushes are limited apart from questions' pushes, so they never hold a question back; collie doctor --check push shows the guard's state",
			"the push guard held the test push back: %s", pushdispatch.HeldWhy(t.Held, t.Until))
	case len(t.Answers) == 0:
		return hint.New("no push provider is in use", "set [push.ntfy] in config.toml (collie.toml(5)) or run the daemon in a desktop session, then: systemctl --user reload collie; collie doctor --check push says why a provider is off")
	}
	failed, idle := 0, 0
	for _, a := range t.Answers {
		state := "ok"
		switch {
		case a.Idle:
			state, idle = "nothing to deliver", idle+1
		case !a.OK:
			state, failed = "failed", failed+1
		}
		if asJSON {
			continue
		}
		// A provider with several destinations (Web Push: one per
		// device) may fail at several: one line each.
		for line := range strings.SplitSeq(a.Answer, "\n") {
			fmt.Fprintf(w, "%s: %s: %s\n", sanitize.TerminalLine(a.Provider), state, sanitize.TerminalLine(line))
		}
	}
	switch {
	case failed == 1:
		return hint.New("1 push provider failed", "fix what its lines say, then collie push test again")
	case failed > 1:
		return hint.Errorf("fix what their lines say, then collie push test again", "%d push providers failed", failed)
	case idle == len(t.Answers):
		return hint.New("nothing to deliver: no push provider has anywhere to send a push", "turn notifications on in Collie on your phone, or set [push.ntfy] in config.toml (collie.toml(5)), then: systemctl --user reload collie")
	}
	return nil
}
