package doctor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/bridge/push/guard"
)

// TestPushRow_D9: the push row names the providers in use, the last push's
// result at each, the guard's counters and whether it holds pushes back
// now; a bad [push.ntfy] or a provider the daemon left out fails with the
// fix; no provider at all is a warning.
func TestPushRow_D9(t *testing.T) {
	at := time.Date(2026, 12, 2, 18, 40, 0, 0, time.Local)
	for _, tc := range []struct {
		name   string
		config string
		st     control.PushStatus
		err    error
		status Status
		want   []string
	}{
		{"ok_with_counts", "", control.PushStatus{Providers: []string{"ntfy", "desktop"}, Sent: 12, Held: 980, Summaries: 1,
			Last: map[string]control.PushResult{"ntfy": {At: at, Kind: "question", OK: true, Attempts: 1}, "desktop": {At: at, Kind: "question", OK: true, Attempts: 1}}},
			nil, OK, []string{"providers: ntfy, desktop", "12 delivered, 980 held back, 1 summaries, 0 test pushes;", "last push: desktop ok at 2026-12-02 18:40:00, ntfy ok at"}},
		{"D9_undelivered_not_counted", "", control.PushStatus{Providers: []string{"ntfy"}, Sent: 2, Undelivered: 5},
			nil, OK, []string{"2 delivered", "5 reached no one (not counted)"}},
		{"D9_webpush_nowhere_to_deliver", "", control.PushStatus{Providers: []string{}, Off: []string{"desktop: turned off (desktop = false in [push])", "webpush: no paired device has turned on notifications yet"}},
			nil, OK, []string{"no push provider is in use (desktop: turned off (desktop = false in [push]); webpush: no paired device has turned on notifications yet)"}},
		{"D9_unreadable_file", "", control.PushStatus{Providers: []string{"ntfy"}, HoldingBack: guard.ReasonUnreadable("/s/push-guard.json"), Until: at.Add(time.Hour)},
			nil, OK, []string{"the guard holds pushes back until 19:40:00: the push guard's file /s/push-guard.json could not be read", "rm /s/push-guard.json"}},
		{"D9_silent_hour", "", control.PushStatus{Providers: []string{"ntfy"}, Summaries: 1, SentLastHour: 31, HoldingBack: "the host is silent for an hour after a summary push", Until: at.Add(time.Hour)},
			nil, OK, []string{"the guard holds pushes back until 19:40:00: the host is silent"}},
		{"D9_minute_limit", "", control.PushStatus{Providers: []string{"ntfy"}, SentLastHour: 10, HoldingBack: "10 pushes in the last minute on this host", Until: at.Add(35 * time.Second)},
			nil, OK, []string{"the guard holds pushes back until 18:40:35: 10 pushes in the last minute"}},
		{"D9_next_is_summary", "", control.PushStatus{Providers: []string{"ntfy"}, SentLastHour: 30}, nil, OK, []string{"the next question becomes the summary push"}},
		{"last_failed", "", control.PushStatus{Providers: []string{"ntfy"},
			Last: map[string]control.PushResult{"ntfy": {At: at, Kind: "question", OK: false, Attempts: 4, Answer: "ntfy at https://ntfy.sh answered 502 Bad Gateway"}}},
			nil, Warn, []string{"the last push at ntfy (question, 2026-12-02 18:40:00) failed after 4 tries: ntfy at https://ntfy.sh answered 502"}},
		{"no_provider_is_ok_and_says_how", "", control.PushStatus{Off: []string{"desktop: there is no session bus"}}, nil, OK,
			[]string{"no push provider is in use (desktop: there is no session bus), so a question is seen only while the web page is open; to get pushes on your phone: set topic in [push.ntfy]"}},
		{"desktop_asked_for_and_missing", "[push]\ndesktop = true\n", control.PushStatus{Off: []string{"desktop: no notification server is running on the session bus"}}, nil, Warn,
			[]string{"no push provider is in use (desktop: no notification server"}},
		{"ntfy_left_out_by_the_daemon", "", control.PushStatus{Providers: []string{"desktop"}, Off: []string{"ntfy: [push.ntfy] token_env names NTFY, which is not set in the daemon's environment"}},
			nil, Fail, []string{"ntfy: [push.ntfy] token_env names NTFY"}},
		{"bad_topic", "[push.ntfy]\ntopic = \"a b\"\n", control.PushStatus{}, nil, Fail, []string{"ntfy: the ntfy topic must be"}},
		{"http_elsewhere", "[push.ntfy]\nserver = \"http://ntfy.lan\"\ntopic = \"t\"\n", control.PushStatus{}, nil, Fail, []string{"plain http:// is only for an ntfy server on this machine"}},
		{"not_running", "", control.PushStatus{}, control.ErrNotRunning, Skip, []string{"the daemon is not running"}},
		{"no_answer", "", control.PushStatus{}, errors.New("timeout"), Skip, []string{"the daemon does not answer about pushes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := healthy(t)
			if tc.config != "" {
				os.WriteFile(filepath.Join(e.Paths.Config, "config.toml"), []byte(tc.config), 0o600)
			}
			e.Push = func(context.Context) (control.PushStatus, error) { return tc.st, tc.err }
			rows := run(t, e, "push")
			if len(rows) != 1 {
				t.Fatalf("%d rows", len(rows))
			}
			r := rows[0]
			if r.Status != tc.status || (r.Status != OK && r.Fix == "") {
				t.Fatalf("row %+v, want %s with a fix", r, tc.status)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.Message, w) {
					t.Errorf("message %q lacks %q", r.Message, w)
				}
			}
		})
	}
}

// TestReloadRow: the config-reload row says whether the running daemon has
// config.toml as it is: a reload refused (with the error, the daemon kept
// its settings), settings only a restart applies, an edit not reloaded
// yet, each with what to run.
func TestReloadRow(t *testing.T) {
	at := time.Date(2026, 12, 2, 18, 40, 0, 0, time.Local)
	future := time.Now().Add(time.Hour)
	for _, tc := range []struct {
		name   string
		cfg    *control.ConfigState
		status Status
		want   []string
		fix    string
	}{
		{"as_is", &control.ConfigState{ReadAt: future}, OK, []string{"the daemon runs with config.toml as it is"}, ""},
		{"refused", &control.ConfigState{ReadAt: at, Error: `config.toml, line 3: unknown setting "push.ntfy.topik"`}, Fail,
			[]string{"the last reload of config.toml was refused, so the daemon runs with the settings it read at 2026-12-02 18:40:00", `unknown setting "push.ntfy.topik"`}, "systemctl --user reload collie"},
		{"restart", &control.ConfigState{ReadAt: future, Restart: []string{"[devices]", "webpush in [push]"}}, Warn,
			[]string{"config.toml changed [devices], webpush in [push] since the daemon started; a reload cannot apply that"}, "systemctl --user restart collie"},
		{"edited_not_reloaded", &control.ConfigState{ReadAt: at}, Warn, []string{"after the daemon read it at 2026-12-02 18:40:00"}, "systemctl --user reload collie"},
		{"demo", nil, Skip, []string{"reads no config.toml"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := healthy(t)
			os.WriteFile(filepath.Join(e.Paths.Config, "config.toml"), []byte("[push]\n"), 0o600)
			e.Push = func(context.Context) (control.PushStatus, error) { return control.PushStatus{Config: tc.cfg}, nil }
			rows := run(t, e, "config-reload")
			if len(rows) != 1 {
				t.Fatalf("%d rows", len(rows))
			}
			r := rows[0]
			if r.Status != tc.status || !strings.Contains(r.Fix, tc.fix) {
				t.Fatalf("row %+v, want %s with fix %q", r, tc.status, tc.fix)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.Message, w) {
					t.Errorf("message %q lacks %q", r.Message, w)
				}
			}
		})
	}
}
