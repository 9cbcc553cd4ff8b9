package ask

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/ask/hook"
)

// TestOpenCodePermissions_D1: setup makes OpenCode ask, by itself, for
// every gated tool whenever collie's plugin is not loaded: each gated
// permission ends "ask" and last (OpenCode's last matching rule wins, so
// a "*" after it would decide), a user's outright "deny" is kept, the
// rest of the file stays, and a second merge changes nothing. find
// reports what OpenCode would run unasked.
func TestOpenCodePermissions_D1(t *testing.T) {
	h := HookClientNamed("opencode")
	for _, tc := range []struct {
		name     string
		old      string
		want     map[string]string // the permissions' effective state after the merge
		wantKeys string            // the permission object's keys, in order
		open     int               // gated permissions find reports before the merge
	}{
		{name: "none", old: ``, wantKeys: "bash edit webfetch websearch", open: 4},
		{name: "no permission", old: `{"model": "a/b"}`, wantKeys: "bash edit webfetch websearch", open: 4},
		{name: "all allowed as one word", old: `{"permission": "allow"}`, wantKeys: "* bash edit webfetch websearch", open: 4},
		{name: "star after bash wins", old: `{"permission": {"bash": "ask", "*": "allow"}}`, wantKeys: "* bash edit webfetch websearch", open: 4},
		{name: "bash patterns that allow", old: `{"permission": {"bash": {"git *": "allow", "*": "ask"}}}`, wantKeys: "bash edit webfetch websearch", open: 4},
		{name: "edit denied kept", old: `{"permission": {"edit": "deny"}}`, want: map[string]string{"edit": "deny"}, wantKeys: "edit bash webfetch websearch", open: 3},
		{name: "all asked already", old: `{"permission": {"bash": "ask", "edit": "ask", "webfetch": "ask", "websearch": "ask"}}`, wantKeys: "bash edit webfetch websearch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			open, err := h.FindHook([]byte(tc.old), "")
			if err != nil || len(open) != tc.open {
				t.Fatalf("before: %d open (%v), want %d: %v", len(open), open, tc.open, err)
			}
			got, changed, err := h.MergeSettings([]byte(tc.old), "", "/usr/bin/collie", hook.SetupWait)
			if err != nil {
				t.Fatal(err)
			}
			if changed != (tc.open > 0) {
				t.Fatalf("changed %v", changed)
			}
			top, err := parseObject(got)
			if err != nil {
				t.Fatalf("%v\n%s", err, got)
			}
			perm, err := parseObject(top.get("permission"))
			if err != nil {
				t.Fatal(err)
			}
			if k := strings.Join(perm.keys, " "); k != tc.wantKeys {
				t.Fatalf("keys %q, want %q\n%s", k, tc.wantKeys, got)
			}
			for _, p := range OpenCodePermissions {
				want := "ask"
				if w, ok := tc.want[p]; ok {
					want = w
				}
				if st := permissionState(perm, p); st != want {
					t.Fatalf("%s is %q, want %q\n%s", p, st, want, got)
				}
			}
			if strings.Contains(tc.old, `"model"`) && !strings.Contains(string(got), `"model": "a/b"`) {
				t.Fatalf("lost the model:\n%s", got)
			}
			if open, err := h.FindHook(got, ""); err != nil || len(open) != 0 {
				t.Fatalf("after: open %v %v", open, err)
			}
			again, changed, err := h.MergeSettings(got, "", "/usr/bin/collie", hook.SetupWait)
			if err != nil || changed || string(again) != string(got) {
				t.Fatalf("second merge changed it: %v %v\n%s", changed, err, again)
			}
		})
	}
	t.Run("everything denied stays", func(t *testing.T) {
		old := `{"permission": "deny"}`
		got, changed, err := h.MergeSettings([]byte(old), "", "/usr/bin/collie", hook.SetupWait)
		if err != nil || changed || string(got) != old {
			t.Fatalf("%v %v %s", changed, err, got)
		}
	})
	t.Run("broken", func(t *testing.T) {
		for _, old := range []string{`{"permission": [1]}`, `{"permission": `} {
			if _, _, err := h.MergeSettings([]byte(old), "", "/usr/bin/collie", hook.SetupWait); !errors.Is(err, ErrSettings) {
				t.Fatalf("%s: %v", old, err)
			}
		}
	})
}

// TestOpenCodePlugin_D1: the plugin names the collie it runs as a JS
// string (any path, quotes and line separators included), its wait and
// its own deadline (the client timeout for the wait, after collie's
// deny); setup reads it back, rewrites an older or different one, and
// refuses to overwrite a file that is not collie's plugin.
func TestOpenCodePlugin_D1(t *testing.T) {
	h := HookClientNamed("opencode")
	for _, collie := range []string{"/usr/bin/collie", "/opt/my \"odd\" dir/collie", "/tmp/a\u2028b/collie"} {
		src := PluginSource(collie, 90*time.Second)
		if strings.Contains(string(src), "\u2028") {
			t.Fatalf("a raw U+2028 in the plugin ends a JS string early")
		}
		info := ReadPlugin(src)
		if !info.Recognized || !info.Current || info.Collie != collie || info.Wait != 90*time.Second ||
			info.Deadline != hook.ClientTimeoutFor(90*time.Second) || info.Version != PluginVersion {
			t.Fatalf("%q: %+v", collie, info)
		}
		if _, changed, err := h.MergePlugin(src, collie, 90*time.Second); changed || err != nil {
			t.Fatalf("same plugin: changed %v %v", changed, err)
		}
		if out, changed, err := h.MergePlugin(src, "/usr/local/bin/collie", 90*time.Second); !changed || err != nil || ReadPlugin(out).Collie != "/usr/local/bin/collie" {
			t.Fatalf("other collie: changed %v %v", changed, err)
		}
	}
	edited := strings.Replace(string(PluginSource("/usr/bin/collie", hook.SetupWait)), "throw new Error", "console.log", 1)
	if info := ReadPlugin([]byte(edited)); !info.Recognized || info.Current {
		t.Fatalf("an edited plugin reads as current: %+v", info)
	}
	if _, _, err := h.MergePlugin([]byte("export const Mine = async () => ({})\n"), "/usr/bin/collie", hook.SetupWait); !errors.Is(err, ErrSettings) {
		t.Fatalf("a foreign plugin: %v", err)
	}
}
