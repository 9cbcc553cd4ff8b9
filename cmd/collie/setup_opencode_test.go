package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/agent/ask"
	"github.com/collie-linux/collie/internal/agent/ask/hook"
)

// TestSetupOpenCode_D1: collie setup opencode writes collie's plugin
// (plugin/collie.js beside opencode.json, .opencode/plugin in a project),
// "permission": "ask" for the gated tools, and collie mcp as OpenCode's
// "mcp" entry (type local, the command in one array, enabled), into the
// user's opencode.json ($XDG_CONFIG_HOME/opencode, ~/.config/opencode) or
// the project's: the rest of the file kept in order, the old one backed
// up, a second run changing nothing, --dry-run writing nothing, a broken
// file untouched; --no-hook writes only the MCP entry, --no-mcp only the
// plugin and the permissions.
func TestSetupOpenCode_D1(t *testing.T) {
	self, _ := os.Executable()
	self, _ = filepath.EvalSymlinks(self)
	const existing = "{\n  \"$schema\": \"https://opencode.ai/config.json\",\n  \"model\": \"anthropic/claude-sonnet-4-5\",\n  \"mcp\": {\n    \"docs\": {\"type\": \"remote\", \"url\": \"https://docs.example/mcp\"}\n  },\n  \"permission\": {\"bash\": \"ask\"}\n}\n"
	for _, tc := range []struct {
		name     string
		args     []string // after "setup opencode"; P is the project folder
		xdg      bool     // XDG_CONFIG_HOME set to HOME/xdg
		file     string   // relative to HOME, or to the project (P/...)
		old      string
		keep     []string // in the new file, in this order
		dryRun   bool
		wantCode int
		wantErr  string
	}{
		{name: "fresh_user", file: ".config/opencode/opencode.json"},
		{name: "fresh_xdg", xdg: true, file: "xdg/opencode/opencode.json"},
		{name: "fresh_project", args: []string{"--project", "P"}, file: "P/opencode.json"},
		{name: "existing_kept", file: ".config/opencode/opencode.json", old: existing,
			keep: []string{`"$schema"`, `"model"`, `"docs"`, `"collie"`, `"permission"`}},
		{name: "old_collie_replaced_env_kept", args: []string{"--project", "P"}, file: "P/opencode.json",
			old: `{"mcp": {"collie": {"type": "local", "command": ["/old/collie", "mcp"], "environment": {"COLLIE_AGENT": "work"}}}}`, keep: []string{`"COLLIE_AGENT": "work"`}},
		{name: "no_hook_same", args: []string{"--no-hook"}, file: ".config/opencode/opencode.json"},
		{name: "dry_run", args: []string{"--dry-run"}, file: ".config/opencode/opencode.json", old: existing, dryRun: true},
		{name: "broken_untouched", file: ".config/opencode/opencode.json", old: `{"mcp": {`, wantCode: 1, wantErr: "is not OpenCode settings collie can change"},
		{name: "mcp_not_object", file: ".config/opencode/opencode.json", old: `{"mcp": []}`, wantCode: 1, wantErr: `"mcp": not a JSON object`},
		{name: "no_mcp_plugin_only", args: []string{"--no-mcp"}, file: ".config/opencode/opencode.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home, project := t.TempDir(), t.TempDir()
			t.Setenv("HOME", home)
			t.Setenv("XDG_CONFIG_HOME", "")
			if tc.xdg {
				t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "xdg"))
			}
			args := []string{"setup", "opencode"}
			for _, a := range tc.args {
				if a == "P" {
					a = project
				}
				args = append(args, a)
			}
			path := filepath.Join(home, tc.file)
			if rel, ok := strings.CutPrefix(tc.file, "P/"); ok {
				path = filepath.Join(project, rel)
			}
			if tc.old != "" {
				os.MkdirAll(filepath.Dir(path), 0o700)
				if err := os.WriteFile(path, []byte(tc.old), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var out, errb bytes.Buffer
			code := run(args, &out, &errb)
			got, readErr := os.ReadFile(path)
			backups, _ := filepath.Glob(path + ".bak-*")
			if tc.wantCode != 0 || tc.dryRun {
				if code != tc.wantCode || !strings.Contains(errb.String(), tc.wantErr) {
					t.Fatalf("exit %d, want %d with %q: %s", code, tc.wantCode, tc.wantErr, errb.String())
				}
				if string(got) != tc.old || len(backups) != 0 || (tc.old == "" && readErr == nil) {
					t.Fatalf("the file changed, or a backup was made: %q %v", got, backups)
				}
				if tc.dryRun && (!strings.Contains(out.String(), "Dry run: nothing was written.") || !strings.Contains(out.String(), `+ `)) {
					t.Fatalf("dry run:\n%s", out.String())
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			var f struct {
				MCP        map[string]map[string]any `json:"mcp"`
				Permission map[string]any            `json:"permission"`
			}
			if err := json.Unmarshal(got, &f); err != nil {
				t.Fatalf("%v:\n%s", err, got)
			}
			noHook, noMCP := slices.Contains(tc.args, "--no-hook"), slices.Contains(tc.args, "--no-mcp")
			e := f.MCP["collie"]
			if noMCP != (e == nil) {
				t.Fatalf("MCP entry %v with --no-mcp %v", e, noMCP)
			}
			if !noMCP && (e["type"] != "local" || e["enabled"] != true || !reflect.DeepEqual(e["command"], []any{self, "mcp"}) || e["args"] != nil) {
				t.Fatalf("entry %v in\n%s", e, got)
			}
			plugin := filepath.Join(filepath.Dir(path), "plugin", "collie.js")
			if strings.HasPrefix(tc.file, "P/") {
				plugin = filepath.Join(project, ".opencode", "plugin", "collie.js")
			}
			pl, plErr := os.ReadFile(plugin)
			if noHook != (plErr != nil) {
				t.Fatalf("plugin %s: %v with --no-hook %v", plugin, plErr, noHook)
			}
			if !noHook {
				if info := ask.ReadPlugin(pl); !info.Current || info.Collie != self || info.Wait != hook.SetupWait {
					t.Fatalf("plugin %+v", info)
				}
				for _, p := range ask.OpenCodePermissions {
					if f.Permission[p] != "ask" {
						t.Fatalf("permission %v, want %s: ask", f.Permission, p)
					}
				}
			}
			last := -1
			for _, k := range tc.keep {
				i := strings.Index(string(got), k)
				if i < 0 || i < last {
					t.Fatalf("the new file lost %s, or moved it:\n%s", k, got)
				}
				last = i
			}
			if strings.Contains(out.String(), "asks your phone before") != !noHook || strings.Contains(out.String(), "OpenCode starts") == noMCP {
				t.Fatalf("output:\n%s", out.String())
			}
			if (tc.old == "") != (len(backups) == 0) {
				t.Fatalf("backups %v", backups)
			}
			if len(backups) == 1 {
				if b, _ := os.ReadFile(backups[0]); string(b) != tc.old {
					t.Fatalf("backup %q", b)
				}
			}
			if _, err := os.Stat(filepath.Join(home, ".config/opencode/opencode.json")); tc.xdg && err == nil {
				t.Fatal("wrote ~/.config with XDG_CONFIG_HOME set")
			}
			// Idempotent.
			out.Reset()
			if code := run(args, &out, &errb); code != 0 || strings.Contains(out.String(), "Wrote") || strings.Contains(out.String(), "already has collie's MCP server") == noMCP {
				t.Fatalf("second run: exit %d\n%s", code, out.String())
			}
			if again, _ := os.ReadFile(path); !bytes.Equal(again, got) {
				t.Fatalf("second run changed the file:\n%s", again)
			}
		})
	}
}
