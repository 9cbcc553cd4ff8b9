package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/ask"
)

// TestSetupMCP_D1: collie setup adds collie mcp as the MCP server
// "collie" to each client's config, running the absolute path of collie
// with ["mcp"]: other servers and settings are kept in their order, the
// old file is backed up, a second run changes nothing, --dry-run writes
// nothing, and a file collie cannot read is left as it is.
func TestSetupMCP_D1(t *testing.T) {
	now := time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)
	claudeOld := "{\n  \"numStartups\": 12,\n  \"mcpServers\": {\n    \"github\": {\n      \"type\": \"stdio\",\n      \"command\": \"gh-mcp\",\n      \"args\": []\n    }\n  },\n  \"projects\": {}\n}\n"
	codexOld := "model = \"gpt-5\"\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\nargs = [\"--stdio\"]\n"
	for _, tc := range []struct {
		name, client, old string
		dryRun            bool
		keep              []string // in the new file, in this order
		wantErr           string   // the file is then left as it was
	}{
		{name: "claude_new_file", client: "claude"},
		{name: "claude_keeps_other_servers", client: "claude", old: claudeOld, keep: []string{`"numStartups": 12`, `"github"`, `"gh-mcp"`, `"collie"`, `"projects"`}},
		{name: "claude_old_collie_replaced_env_kept", client: "claude",
			old: `{"mcpServers": {"collie": {"command": "/old/collie", "args": ["mcp"], "env": {"COLLIE_AGENT": "work"}}}}`, keep: []string{`"COLLIE_AGENT": "work"`}},
		{name: "claude_dry_run", client: "claude", old: claudeOld, dryRun: true},
		{name: "claude_broken", client: "claude", old: `{"mcpServers": [}`, wantErr: "is not Claude Code settings collie can change"},
		{name: "claude_servers_not_object", client: "claude", old: `{"mcpServers": ["x"]}`, wantErr: `"mcpServers": not a JSON object`},
		{name: "gemini_keeps_settings", client: "gemini", old: `{"security": {"auth": {"selectedType": "gemini-api-key"}}, "mcpServers": {"x": {"command": "x"}}}`,
			keep: []string{`"selectedType": "gemini-api-key"`, `"x": {`, `"collie": {`}},
		{name: "codex_appends", client: "codex", old: codexOld, keep: []string{codexOld, "[mcp_servers.collie]"}},
		{name: "codex_dry_run", client: "codex", old: codexOld, dryRun: true},
		{name: "codex_other_collie", client: "codex", old: "[mcp_servers.collie]\ncommand = \"/old/collie\"\nargs = [\"mcp\"]\n", wantErr: "remove that table"},
		{name: "codex_broken", client: "codex", old: "[mcp_servers\n", wantErr: "is not Codex settings collie can change"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := ask.HookClientNamed(tc.client)
			path := filepath.Join(t.TempDir(), filepath.Base(h.MCP.UserFile))
			if tc.old != "" {
				if err := os.WriteFile(path, []byte(tc.old), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			err := setupMCPFile(&out, h, path, testCollie, tc.dryRun, now)
			got, _ := os.ReadFile(path)
			backups, _ := filepath.Glob(path + ".bak-*")
			if tc.wantErr != "" || tc.dryRun {
				if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if tc.dryRun && (err != nil || !strings.Contains(out.String(), "Dry run: nothing was written.") || !strings.Contains(out.String(), "+ ")) {
					t.Fatalf("dry run: %v\n%s", err, out.String())
				}
				if string(got) != tc.old || len(backups) != 0 {
					t.Fatalf("the file changed, or a backup was made: %q %v", got, backups)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			e, err := h.FindMCP(got)
			if err != nil || e == nil || e.Command != testCollie || !e.Right() {
				t.Fatalf("entry %+v %v in\n%s", e, err, got)
			}
			last := -1
			for _, k := range tc.keep {
				i := strings.Index(string(got), k)
				if i < 0 || i < last {
					t.Fatalf("the new file lost %s, or moved it:\n%s", k, got)
				}
				last = i
			}
			if tc.client == "claude" && !strings.Contains(string(got), `"type": "stdio"`) {
				t.Fatalf("no type:\n%s", got)
			}
			if !strings.Contains(out.String(), "+ ") || !strings.Contains(out.String(), "MCP server") {
				t.Fatalf("output:\n%s", out.String())
			}
			if b, err := os.ReadFile(path + ".bak-20261203T180000Z"); (tc.old == "") != (err != nil) || string(b) != tc.old {
				t.Fatalf("backup %q %v", b, err)
			}
			// Idempotent: a second run says so and writes nothing.
			out.Reset()
			if err := setupMCPFile(&out, h, path, testCollie, false, now.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			again, _ := os.ReadFile(path)
			if !bytes.Equal(again, got) || !strings.Contains(out.String(), "already has collie's MCP server") {
				t.Fatalf("second run:\n%s", out.String())
			}
			if _, err := os.Stat(path + ".bak-20261203T190000Z"); err == nil {
				t.Fatal("a second run made a backup")
			}
		})
	}
}

// TestSetupMCP_Paths_D1: collie setup CLIENT writes the hook and the MCP
// server, each where the client reads it (Gemini CLI's and Codex's share
// one file: one change, one backup), --no-mcp and --no-hook leave one
// out, and both together are a usage error.
func TestSetupMCP_Paths_D1(t *testing.T) {
	self, _ := os.Executable()
	self, _ = filepath.EvalSymlinks(self)
	for _, tc := range []struct {
		args              []string
		hookFile, mcpFile string // relative to home, or to the project for --project
	}{
		{args: []string{"setup", "claude"}, hookFile: ".claude/settings.json", mcpFile: ".claude.json"},
		{args: []string{"setup", "claude", "--project", "P"}, hookFile: ".claude/settings.local.json", mcpFile: ".mcp.json"},
		{args: []string{"setup", "claude", "--no-mcp"}, hookFile: ".claude/settings.json"},
		{args: []string{"setup", "claude", "--no-hook"}, mcpFile: ".claude.json"},
		{args: []string{"setup", "gemini"}, hookFile: ".gemini/settings.json", mcpFile: ".gemini/settings.json"},
		{args: []string{"setup", "gemini", "--project", "P", "--no-hook"}, mcpFile: ".gemini/settings.json"},
		{args: []string{"setup", "codex"}, hookFile: "codexhome/config.toml", mcpFile: "codexhome/config.toml"},
	} {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			home, project := t.TempDir(), t.TempDir()
			t.Setenv("HOME", home)
			t.Setenv("CODEX_HOME", filepath.Join(home, "codexhome"))
			base := home
			args := append([]string{}, tc.args...)
			for i, a := range args {
				if a == "P" {
					args[i], base = project, project
				}
			}
			h := ask.HookClientNamed(args[1])
			// An existing file: the shared one gets one backup, of the file
			// as it was before both changes.
			first := tc.hookFile
			if first == "" {
				first = tc.mcpFile
			}
			os.MkdirAll(filepath.Dir(filepath.Join(base, first)), 0o700)
			orig := "{}\n"
			if h.Name == "codex" {
				orig = "model = \"o3\"\n"
			}
			os.WriteFile(filepath.Join(base, first), []byte(orig), 0o600)
			var out, errb bytes.Buffer
			if code := run(args, &out, &errb); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			if tc.hookFile != "" {
				b, _ := os.ReadFile(filepath.Join(base, tc.hookFile))
				if entries, err := h.FindHook(b, filepath.Join(base, tc.hookFile)); err != nil || len(entries) == 0 || entries[0].Program() != self {
					t.Fatalf("no hook in %s: %v\n%s", tc.hookFile, err, b)
				}
			}
			if tc.mcpFile != "" {
				b, _ := os.ReadFile(filepath.Join(base, tc.mcpFile))
				if e, err := h.FindMCP(b); err != nil || e == nil || e.Command != self || !e.Right() {
					t.Fatalf("no MCP server in %s: %+v %v\n%s", tc.mcpFile, e, err, b)
				}
			}
			if tc.hookFile == "" && strings.Contains(out.String(), "asks your phone before") ||
				tc.mcpFile == "" && strings.Contains(out.String(), "MCP server") {
				t.Fatalf("wrote what it was told to leave out:\n%s", out.String())
			}
			backups, _ := filepath.Glob(filepath.Join(base, first) + ".bak-*")
			if len(backups) != 1 {
				t.Fatalf("backups %v", backups)
			}
			if b, _ := os.ReadFile(backups[0]); string(b) != orig {
				t.Fatalf("backup %q", b)
			}
			out.Reset()
			if code := run(args, &out, &errb); code != 0 || strings.Contains(out.String(), "Wrote") {
				t.Fatalf("second run: exit %d\n%s", code, out.String())
			}
		})
	}
	var out, errb bytes.Buffer
	if code := run([]string{"setup", "claude", "--no-hook", "--no-mcp"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "leave nothing to set up") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
}
