package bridge

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge/sources"
	"github.com/collie-linux/collie/internal/bridge/view"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
	"github.com/collie-linux/collie/internal/testkit/hostiletest"
)

// pwn is what a hostile agent would like to reach a terminal or a page.
const pwn = hostiletest.Pwn

// recorder keeps the message and every attribute value of each log record,
// as a journald handler would write them: raw, unquoted.
type recorder struct {
	mu    sync.Mutex
	texts []string
}

type recHandler struct {
	r     *recorder
	attrs []slog.Attr
}

func (h recHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return recHandler{h.r, append(append([]slog.Attr{}, h.attrs...), as...)}
}
func (h recHandler) WithGroup(string) slog.Handler { return h }
func (h recHandler) Handle(_ context.Context, rec slog.Record) error {
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	h.r.texts = append(h.r.texts, rec.Message)
	for _, a := range h.attrs {
		h.r.texts = append(h.r.texts, a.Value.String())
	}
	rec.Attrs(func(a slog.Attr) bool {
		h.r.texts = append(h.r.texts, a.Value.String())
		return true
	})
	return nil
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.texts...)
}

func assertClean(t *testing.T, what, s string) {
	t.Helper()
	if sanitize.TerminalLine(s) != s {
		t.Errorf("X1: %s is not clean: %q", what, s)
	}
}

// TestBridgeHostileAgentX1: what hostile agents put in their status lines,
// error bodies and names reaches neither the statuses (collie durable
// list), the views (collie show, the device API) nor the log (X1).
func TestBridgeHostileAgentX1(t *testing.T) {
	tmp := t.TempDir()
	status := filepath.Join(tmp, "status", "desk", "a.sock")
	errJSON := filepath.Join(tmp, "errjson", "desk", "a.sock")
	names := filepath.Join(tmp, "names", "desk", "a.sock")
	hostiletest.Serve(t, status, func(string) string { return hostiletest.Reply("500 "+pwn, "", "") })
	hostiletest.Serve(t, errJSON, func(p string) string {
		if p == "/v1/hello" {
			return hostiletest.Reply("200 "+pwn, "", `{"protocol":1,"agent":"ok"}`)
		}
		return hostiletest.Reply("503 "+pwn, "", `{"error":{"code":"busy`+pwn+`","message":"try \u001b[2J\u202elater"}}`)
	})
	hostiletest.Serve(t, names, func(p string) string {
		if p == "/v1/hello" {
			return hostiletest.Reply("200 "+pwn, "", `{"protocol":1,"agent":"me\u001b]0;x\u0007\u202e"}`)
		}
		return hostiletest.Reply("200 OK", "", `{"spaces":[{"id":"s","title":"t\u001b[2J\u202e","tabs":[]}],"x\u001b]0;pwned\u0007":1}`)
	})
	rec := &recorder{}
	h, b := startWith(t, func(o *Options) { o.Log = slog.New(recHandler{r: rec}) },
		sources.Source{Name: "status", Socket: status}, sources.Source{Name: "errjson", Socket: errJSON}, sources.Source{Name: "names", Socket: names})
	m := h.waitFor(t, "all three polled", func(m map[string]view.AgentStatus) bool {
		for _, a := range m {
			if a.Reason == "not polled yet" || a.Reachable {
				return false
			}
		}
		return len(m) == 3
	})
	checked, err := h.client.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range append(checked, slices.Collect(maps.Values(m))...) {
		assertClean(t, a.Name+" reason", a.Reason)
		assertClean(t, a.Name+" agent", a.Agent)
		if a.Reason == "" {
			t.Errorf("%s: no reason shown", a.Name)
		}
	}
	if got := m["status"].Reason; got != "the agent answered 500 Internal Server Error" {
		t.Errorf("status reason = %q", got)
	}
	shown, err := h.client.View(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range [][]view.Agent{shown, b.View()} { // collie show; the device API's source
		enc, _ := json.Marshal(v)
		var back any
		json.Unmarshal(enc, &back)
		walkStrings(back, func(s string) { assertClean(t, "view string", s) })
	}
	for _, s := range rec.all() {
		assertClean(t, "log value", s)
	}
	if !strings.Contains(strings.Join(rec.all(), "\n"), "503 Service Unavailable") {
		t.Errorf("the log does not say what the agent answered: %q", rec.all())
	}
}

func walkStrings(v any, f func(string)) {
	switch v := v.(type) {
	case string:
		f(v)
	case []any:
		for _, e := range v {
			walkStrings(e, f)
		}
	case map[string]any:
		for k, e := range v {
			f(k)
			walkStrings(e, f)
		}
	}
}

// TestBridgeCheckNow: with polls 10 s apart, a status can be up to 10 s
// old; Check polls at once, so collie durable list shows what is true now
// , and says when it was checked.
func TestBridgeCheckNow(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "desk", "a.sock")
	stop := startAgent(t, sock, "a")
	h, _ := startWith(t, func(o *Options) { o.Interval, o.Fresh = time.Hour, time.Nanosecond }, sources.Source{Name: "a", Socket: sock})
	h.waitFor(t, "first poll", func(m map[string]view.AgentStatus) bool { return m["a"].Reachable })

	stop()
	stopped := time.Now()
	stale, err := h.client.Agents(context.Background())
	if err != nil || len(stale) != 1 || !stale[0].Reachable {
		t.Fatalf("the cached status = %+v, %v; want the stale reachable one", stale, err)
	}
	now, err := h.client.Check(context.Background())
	if err != nil || len(now) != 1 {
		t.Fatalf("Check = %+v, %v", now, err)
	}
	if now[0].Reachable || !strings.Contains(now[0].Reason, sock) {
		t.Fatalf("Check = %+v; want unreachable, naming %s", now[0], sock)
	}
	if now[0].Checked.Before(stopped) {
		t.Fatalf("Checked = %v, before the agent stopped at %v", now[0].Checked, stopped)
	}
}

// TestBridgeCheckFresh: a status newer than Fresh is not polled again, so
// a script that lists in a loop does not turn into a flood of requests (K8).
func TestBridgeCheckFresh(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "desk", "a.sock")
	startAgent(t, sock, "a")
	h, _ := startWith(t, func(o *Options) { o.Interval, o.Fresh = time.Hour, time.Hour }, sources.Source{Name: "a", Socket: sock})
	first := h.waitFor(t, "first poll", func(m map[string]view.AgentStatus) bool { return m["a"].Reachable })
	for range 3 {
		again, err := h.client.Check(context.Background())
		if err != nil || len(again) != 1 || !again[0].Checked.Equal(first["a"].Checked) {
			t.Fatalf("a check within Fresh polled again: %+v then %+v, %v", first["a"], again, err)
		}
	}
}
