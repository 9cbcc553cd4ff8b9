package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/ask"
	"github.com/collie-linux/collie/internal/agent/ask/hook"
)

const testCollie = "/opt/collie dir/bin/collie" // a space: the command quotes it

// TestSetup_D1: collie setup merges the hook entry into a client's
// settings, keeps everything else (in its order), backs the old file up,
// prints the change, and a second run changes nothing.
func TestSetup_D1(t *testing.T) {
	now := time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, client, fixture string
		keep                  []string // in the new file, in this order
		wantTimeout           float64
		wantOnFailure         string
	}{
		{name: "claude_new_file", client: "claude", wantTimeout: 135, wantOnFailure: "block"},
		{name: "claude_keeps_settings_and_hooks", client: "claude", fixture: "claude_existing.json",
			keep: []string{`"model": "opus"`, `"Bash(npm test)"`, `/usr/local/bin/lint-guard`, `"Stop"`, `notify-send done`, `"FOO": "bar"`}, wantTimeout: 135, wantOnFailure: "block"},
		{name: "claude_replaces_old_collie_entry", client: "claude", fixture: "claude_old_collie.json", wantTimeout: 135, wantOnFailure: "block"},
		{name: "gemini_timeout_in_ms", client: "gemini", fixture: "gemini_existing.json", keep: []string{`"selectedType": "gemini-api-key"`}, wantTimeout: 135000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := ask.HookClientNamed(tc.client)
			path := filepath.Join(t.TempDir(), "settings.json")
			var old []byte
			if tc.fixture != "" {
				var err error
				if old, err = os.ReadFile(filepath.Join("testdata", "setup", tc.fixture)); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, old, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			if err := setupFile(&out, h, path, testCollie, hook.SetupWait, false, now); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			last := -1
			for _, k := range tc.keep {
				i := strings.Index(string(got), k)
				if i < 0 || i < last {
					t.Fatalf("the new file lost %s, or moved it:\n%s", k, got)
				}
				last = i
			}
			entries, err := h.FindHook(got, path)
			if err != nil || len(entries) != 1 {
				t.Fatalf("entries %+v %v in\n%s", entries, err, got)
			}
			e := entries[0]
			if e.Program() != testCollie || e.Wait != hook.SetupWait || e.OnFailure != tc.wantOnFailure ||
				e.ClientTimeout != hook.ClientTimeoutFor(hook.SetupWait) || !strings.Contains(out.String(), "+ ") {
				t.Fatalf("entry %+v\noutput:\n%s", e, out.String())
			}
			var raw map[string]any
			json.Unmarshal(got, &raw)
			if tm := raw["hooks"].(map[string]any)[h.Events[0]].([]any); len(tm) == 0 {
				t.Fatal("no matcher group")
			}
			if !strings.Contains(string(got), `"timeout": `+strings.TrimSuffix(strings.TrimSuffix(jsonNumber(tc.wantTimeout), ".0"), "")) {
				t.Fatalf("timeout %v not in\n%s", tc.wantTimeout, got)
			}
			backup := path + ".bak-20261203T180000Z"
			b, err := os.ReadFile(backup)
			switch {
			case tc.fixture == "" && err == nil:
				t.Fatal("a backup of no file")
			case tc.fixture != "" && !bytes.Equal(b, old):
				t.Fatalf("backup %q, %v", b, err)
			}
			// Idempotent: a second run says so and writes nothing.
			out.Reset()
			if err := setupFile(&out, h, path, testCollie, hook.SetupWait, false, now.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			again, _ := os.ReadFile(path)
			if !bytes.Equal(again, got) || !strings.Contains(out.String(), "nothing to change") {
				t.Fatalf("second run: %s", out.String())
			}
			if _, err := os.Stat(path + ".bak-20261203T190000Z"); err == nil {
				t.Fatal("a second run made a backup")
			}
		})
	}
}

func jsonNumber(f float64) string { b, _ := json.Marshal(f); return string(b) }

// TestSetup_DryRunAndBrokenFile_D1: --dry-run prints and writes nothing;
// a file that is not JSON is left as it is, with a sentence that says what
// to do, and no backup.
func TestSetup_DryRunAndBrokenFile_D1(t *testing.T) {
	h := ask.HookClientNamed("claude")
	dir := t.TempDir()
	path := filepath.Join(dir, "settings.json")
	var out bytes.Buffer
	if err := setupFile(&out, h, path, testCollie, hook.SetupWait, true, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err == nil || !strings.Contains(out.String(), "Dry run: nothing was written.") || !strings.Contains(out.String(), "\"onFailure\": \"block\"\n") {
		t.Fatalf("dry run wrote, or printed no change:\n%s", out.String())
	}
	broken, _ := os.ReadFile(filepath.Join("testdata", "setup", "broken.json"))
	os.WriteFile(path, broken, 0o644)
	err := setupFile(&out, h, path, testCollie, hook.SetupWait, false, time.Now())
	if err == nil || !strings.Contains(err.Error(), "is not Claude Code settings collie can change") {
		t.Fatalf("err = %v", err)
	}
	after, _ := os.ReadFile(path)
	matches, _ := filepath.Glob(path + ".bak-*")
	if !bytes.Equal(after, broken) || len(matches) != 0 {
		t.Fatalf("the broken file changed, or a backup was made: %q %v", after, matches)
	}
	// Through a link: the target is written, the link stays.
	target := filepath.Join(dir, "dotfiles-settings.json")
	os.WriteFile(target, []byte(`{"model": "opus"}`), 0o644)
	link := filepath.Join(dir, "link.json")
	os.Symlink(target, link)
	if err := setupFile(&out, h, link, testCollie, hook.SetupWait, false, time.Now()); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the link was replaced by a file")
	}
	if b, _ := os.ReadFile(target); !strings.Contains(string(b), "ask --hook claude") {
		t.Fatalf("target %s", b)
	}
}

// TestSetup_Codex_D1: collie setup codex appends its PreToolUse and
// PermissionRequest groups to config.toml, byte for byte after what is
// there, and records their trust; a second run changes nothing.
func TestSetup_Codex_D1(t *testing.T) {
	h := ask.HookClientNamed("codex")
	path := filepath.Join(t.TempDir(), "config.toml")
	old := "model = \"gpt-5\"\n\n[[hooks.PreToolUse]]\nmatcher = \"Bash\"\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"/usr/bin/lint\"\n"
	os.WriteFile(path, []byte(old), 0o600)
	var out bytes.Buffer
	if err := setupFile(&out, h, path, testCollie, hook.SetupWait, false, time.Now()); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(got), old) || !strings.Contains(string(got), `[hooks.state."`+path+`:pre_tool_use:1:0"]`) ||
		!strings.Contains(string(got), `[hooks.state."`+path+`:permission_request:0:0"]`) {
		t.Fatalf("config.toml:\n%s", got)
	}
	entries, err := h.FindHook(got, path)
	if err != nil || len(entries) != 2 || entries[0].Untrusted || entries[1].Untrusted || !entries[0].OrBlock {
		t.Fatalf("%+v %v", entries, err)
	}
	out.Reset()
	if err := setupFile(&out, h, path, testCollie, hook.SetupWait, false, time.Now()); err != nil || !strings.Contains(out.String(), "nothing to change") {
		t.Fatalf("second run: %v %s", err, out.String())
	}
	// Another file's trust is not this one's.
	if entries, _ := h.FindHook(got, "/elsewhere/config.toml"); len(entries) != 2 || !entries[0].Untrusted {
		t.Fatalf("%+v", entries)
	}
}

// TestSetup_Paths_D1: collie setup writes the user's file under HOME (or
// CODEX_HOME), the project's with --project, and names the running
// collie by its absolute path.
func TestSetup_Paths_D1(t *testing.T) {
	home, project, codexHome := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CODEX_HOME", codexHome)
	self, _ := os.Executable()
	self, _ = filepath.EvalSymlinks(self)
	for _, tc := range []struct {
		args []string
		file string
	}{
		{[]string{"setup", "claude"}, filepath.Join(home, ".claude", "settings.json")},
		{[]string{"setup", "claude", "--project", project}, filepath.Join(project, ".claude", "settings.local.json")},
		{[]string{"setup", "gemini", "--project", project}, filepath.Join(project, ".gemini", "settings.json")},
		{[]string{"setup", "codex"}, filepath.Join(codexHome, "config.toml")},
	} {
		var out, errb bytes.Buffer
		if code := run(tc.args, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errb.String())
		}
		b, err := os.ReadFile(tc.file)
		if err != nil || !strings.Contains(string(b), self) {
			t.Fatalf("%v: %s: %v\n%s", tc.args, tc.file, err, b)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"setup", "claude", "--project", filepath.Join(project, "nope")}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "is not a folder") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
}
