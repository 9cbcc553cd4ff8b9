package doctor

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/ask"
	"github.com/collie-linux/collie/internal/agent/ask/hook"
)

// TestCodingAgents_D1: a row for each installed or configured coding
// agent, failing where the hook would let a tool run unasked or be killed
// before its deny.
func TestCodingAgents_D1(t *testing.T) {
	const collie = "/usr/bin/collie"
	claude := ask.HookClientNamed("claude")
	gemini := ask.HookClientNamed("gemini")
	codex := ask.HookClientNamed("codex")
	opencode := ask.HookClientNamed("opencode")
	plugin := string(ask.PluginSource(collie, hook.SetupWait))
	merged := func(h *ask.HookClient, wait time.Duration) string {
		b, _, err := h.MergeSettings(nil, "/home/u/"+h.Settings.UserFile, collie, wait)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ocConfig := merged(opencode, hook.SetupWait)
	const hookProgram = "/usr/libexec/collie/collie-hook"
	mergedWith := func(h *ask.HookClient, prog string) string {
		b, _, err := h.MergeSettings(nil, "/home/u/"+h.Settings.UserFile, prog, hook.SetupWait)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct {
		name      string
		installed []string
		files     map[string]string // under /home/u
		runnable  bool
		want      map[string]Status // subject: status
		wantMsg   string
		notMsg    string // in no message, when set
	}{
		{name: "nothing installed", want: map[string]Status{}},
		{name: "claude without hook", installed: []string{"claude"}, want: map[string]Status{"Claude Code": Warn}, wantMsg: "without collie's hook"},
		{name: "claude set up", installed: []string{"claude"}, runnable: true,
			files: map[string]string{".claude/settings.json": merged(claude, hook.SetupWait)}, want: map[string]Status{"Claude Code": OK}, wantMsg: "blocks the tool"},
		{name: "claude collie missing", installed: []string{"claude"}, runnable: false,
			files: map[string]string{".claude/settings.json": merged(claude, hook.SetupWait)}, want: map[string]Status{"Claude Code": Fail}, wantMsg: "cannot be run here"},
		{name: "claude fails open", runnable: true,
			files: map[string]string{".claude/settings.json": `{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"/usr/bin/collie ask --hook claude --timeout 55s"}]}]}}`},
			want:  map[string]Status{"Claude Code": Fail}, wantMsg: `no "onFailure"`},
		{name: "claude timeout too short", runnable: true,
			files: map[string]string{".claude/settings.json": `{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","onFailure":"block","timeout":60,"command":"/usr/bin/collie ask --hook claude --timeout 58s"}]}]}}`},
			want:  map[string]Status{"Claude Code": Fail}, wantMsg: "stops the hook after 1m0s"},
		{name: "gemini set up, broken claude", runnable: true,
			files: map[string]string{".gemini/settings.json": merged(gemini, hook.SetupWait), ".claude/settings.json": "{"},
			want:  map[string]Status{"Gemini CLI": OK, "Claude Code": Fail}, wantMsg: "outlives its timeout"},
		// OpenCode's hook is collie's plugin, with "permission": "ask" behind it.
		{name: "opencode without plugin", installed: []string{"opencode"}, want: map[string]Status{"OpenCode": Warn}, wantMsg: "without collie's plugin"},
		{name: "opencode set up", installed: []string{"opencode"}, runnable: true,
			files: map[string]string{".config/opencode/plugin/collie.js": plugin, ".config/opencode/opencode.json": ocConfig},
			want:  map[string]Status{"OpenCode": OK}, wantMsg: "the plugin itself by 2m15s; if collie cannot run, the plugin denies"},
		{name: "opencode collie missing", installed: []string{"opencode"}, runnable: false,
			files: map[string]string{".config/opencode/plugin/collie.js": plugin, ".config/opencode/opencode.json": ocConfig},
			want:  map[string]Status{"OpenCode": Fail}, wantMsg: "OpenCode denies every tool the plugin gates"},
		{name: "opencode plugin edited", runnable: true,
			files: map[string]string{".config/opencode/plugin/collie.js": strings.Replace(plugin, "throw new Error", "console.log", 1), ".config/opencode/opencode.json": ocConfig},
			want:  map[string]Status{"OpenCode": Fail}, wantMsg: "was changed"},
		{name: "opencode not collie's plugin", runnable: true,
			files: map[string]string{".config/opencode/plugin/collie.js": "export const X = async () => ({})\n", ".config/opencode/opencode.json": ocConfig},
			want:  map[string]Status{"OpenCode": Warn}, wantMsg: "is not collie's plugin"},
		{name: "opencode plugin twice", runnable: true,
			files: map[string]string{".config/opencode/plugin/collie.js": plugin, "p/.opencode/plugin/collie.js": plugin, ".config/opencode/opencode.json": ocConfig},
			want:  map[string]Status{"OpenCode": Warn}, wantMsg: "asks your phone twice"},
		{name: "opencode bash allowed without the plugin", runnable: true,
			files: map[string]string{".config/opencode/plugin/collie.js": plugin, ".config/opencode/opencode.json": `{"permission": {"*": "allow", "edit": "ask", "webfetch": "ask", "websearch": "deny", "bash": {"git *": "allow", "*": "ask"}}}`},
			want:  map[string]Status{"OpenCode": Warn}, wantMsg: "would run bash unasked"},
		{name: "opencode no config", installed: []string{"opencode"}, runnable: true, files: map[string]string{".config/opencode/plugin/collie.js": plugin},
			want: map[string]Status{"OpenCode": Warn}, wantMsg: "would run bash, edit, webfetch, websearch unasked"},
		// Entries that run collie ask --hook keep working; with the hook
		// program installed, the row says setup again makes calls cheaper.
		{name: "claude hook program", installed: []string{"claude"}, runnable: true,
			files: map[string]string{".claude/settings.json": mergedWith(claude, hookProgram)}, want: map[string]Status{"Claude Code": OK}, wantMsg: "the deny comes by 2m3s",
			notMsg: "collie ask --hook"},
		{name: "claude via collie ask --hook", installed: []string{"claude"}, runnable: true,
			files: map[string]string{".claude/settings.json": merged(claude, hook.SetupWait)}, want: map[string]Status{"Claude Code": OK},
			wantMsg: "it runs collie ask --hook: collie setup claude again makes it run collie's hook program, which costs less CPU per tool call"},
		{name: "claude hook program missing", installed: []string{"claude"}, runnable: false,
			files: map[string]string{".claude/settings.json": mergedWith(claude, hookProgram)}, want: map[string]Status{"Claude Code": Fail}, wantMsg: "the hook runs " + hookProgram + ", which cannot be run here"},
		{name: "opencode plugin runs the hook program", installed: []string{"opencode"}, runnable: true,
			files: map[string]string{".config/opencode/plugin/collie.js": string(ask.PluginSource(hookProgram, hook.SetupWait)), ".config/opencode/opencode.json": ocConfig},
			want:  map[string]Status{"OpenCode": OK}, wantMsg: "if collie cannot run, the plugin denies", notMsg: "collie ask --hook"},
		{name: "opencode plugin via collie ask --hook", installed: []string{"opencode"}, runnable: true,
			files: map[string]string{".config/opencode/plugin/collie.js": plugin, ".config/opencode/opencode.json": ocConfig},
			want:  map[string]Status{"OpenCode": OK}, wantMsg: "collie setup opencode again makes it run collie's hook program"},
		{name: "codex without hook", installed: []string{"codex"}, want: map[string]Status{"Codex": Warn}, wantMsg: "Codex is installed without"},
		{name: "codex set up", runnable: true, files: map[string]string{".codex/config.toml": merged(codex, hook.SetupWait)},
			want: map[string]Status{"Codex": OK}, wantMsg: "Codex's own timeout is 2m15s"},
		{name: "codex untrusted", runnable: true, files: map[string]string{".codex/config.toml": strings.ReplaceAll(merged(codex, hook.SetupWait), "sha256:", "sha256:0")},
			want: map[string]Status{"Codex": Fail}, wantMsg: "skips collie's hook"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Clients{Home: "/home/u", Project: "/home/u/p", Getenv: func(string) string { return "" },
				LookPath: func(f string) (string, error) {
					for _, i := range tc.installed {
						if i == f {
							return "/usr/bin/" + f, nil
						}
					}
					return "", fs.ErrNotExist
				},
				ReadFile: func(name string) ([]byte, error) {
					rel, _ := filepath.Rel("/home/u", name)
					if s, ok := tc.files[rel]; ok {
						return []byte(s), nil
					}
					return nil, fs.ErrNotExist
				},
				Executable: func(string) bool { return tc.runnable },
			}
			rows := checkCodingAgents(context.Background(), &Env{Clients: c})
			got := map[string]Status{}
			all := ""
			for _, r := range rows {
				if strings.HasSuffix(r.Subject, " MCP server") {
					continue // TestCodingAgentsMCP_D1
				}
				got[r.Subject] = r.Status
				all += r.Message + "\n"
				if r.Status != OK && r.Fix == "" {
					t.Errorf("row %+v has no fix", r)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("rows %+v, want %v", rows, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Fatalf("rows %+v, want %v", rows, tc.want)
				}
			}
			if !strings.Contains(all, tc.wantMsg) {
				t.Fatalf("messages %q lack %q", all, tc.wantMsg)
			}
			if tc.notMsg != "" && strings.Contains(all, tc.notMsg) {
				t.Fatalf("messages %q say %q", all, tc.notMsg)
			}
		})
	}
}

// TestCodingAgentsMCP_D1: beside the hook's row, each installed or
// configured coding agent has a row for collie's MCP server: there and
// running a collie that exists, missing (optional, so not a warning),
// pointing at a collie that is gone, or running something else.
func TestCodingAgentsMCP_D1(t *testing.T) {
	const collie = "/usr/bin/collie"
	claude := ask.HookClientNamed("claude")
	codex := ask.HookClientNamed("codex")
	opencode := ask.HookClientNamed("opencode")
	mcp := func(h *ask.HookClient, old string) string {
		b, _, err := h.MergeMCP([]byte(old), collie)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct {
		name      string
		installed []string
		files     map[string]string // under /home/u; p/ is the project
		runnable  bool
		want      map[string]Status // subject: status
		wantMsg   string
	}{
		{name: "nothing installed", want: map[string]Status{}},
		{name: "claude without server", installed: []string{"claude"}, want: map[string]Status{"Claude Code MCP server": OK}, wantMsg: "not set up for Claude Code"},
		{name: "claude user server", runnable: true, files: map[string]string{".claude.json": mcp(claude, `{"numStartups": 3}`)},
			want: map[string]Status{"Claude Code MCP server": OK}, wantMsg: "collie's MCP server is in /home/u/.claude.json"},
		{name: "claude project server", runnable: true, installed: []string{"claude"}, files: map[string]string{"p/.mcp.json": mcp(claude, "")},
			want: map[string]Status{"Claude Code MCP server": OK}, wantMsg: "in /home/u/p/.mcp.json"},
		{name: "claude collie gone", runnable: false, files: map[string]string{".claude.json": mcp(claude, "")},
			want: map[string]Status{"Claude Code MCP server": Warn}, wantMsg: "/usr/bin/collie (in /home/u/.claude.json), which cannot be run here"},
		{name: "claude relative collie", runnable: true, files: map[string]string{".claude.json": `{"mcpServers": {"collie": {"command": "collie", "args": ["mcp"]}}}`},
			want: map[string]Status{"Claude Code MCP server": Warn}, wantMsg: "cannot be run here"},
		{name: "claude wrong args", runnable: true, files: map[string]string{".claude.json": `{"mcpServers": {"collie": {"command": "/usr/bin/collie", "args": ["ask"]}}}`},
			want: map[string]Status{"Claude Code MCP server": Warn}, wantMsg: "runs /usr/bin/collie ask, not /usr/bin/collie mcp"},
		{name: "claude broken .claude.json", installed: []string{"claude"}, files: map[string]string{".claude.json": `{`},
			want: map[string]Status{"Claude Code MCP server": Warn}, wantMsg: "/home/u/.claude.json: settings file: not JSON"},
		{name: "codex server", runnable: true, files: map[string]string{".codex/config.toml": mcp(codex, "model = \"o3\"\n")},
			want: map[string]Status{"Codex MCP server": OK}, wantMsg: "Codex can ask you a question itself"},
		{name: "opencode without server", installed: []string{"opencode"}, want: map[string]Status{"OpenCode MCP server": OK}, wantMsg: "collie setup opencode --no-hook adds it"},
		{name: "opencode user server", runnable: true, files: map[string]string{".config/opencode/opencode.json": mcp(opencode, `{"$schema": "https://opencode.ai/config.json"}`)},
			want: map[string]Status{"OpenCode MCP server": OK}, wantMsg: "in /home/u/.config/opencode/opencode.json: OpenCode can ask you"},
		{name: "opencode project server", runnable: true, files: map[string]string{"p/opencode.json": mcp(opencode, "")},
			want: map[string]Status{"OpenCode MCP server": OK}, wantMsg: "in /home/u/p/opencode.json"},
		{name: "opencode wrong command", runnable: true, files: map[string]string{"p/opencode.json": `{"mcp": {"collie": {"type": "local", "command": ["/usr/bin/collie", "ask"]}}}`},
			want: map[string]Status{"OpenCode MCP server": Warn}, wantMsg: "runs /usr/bin/collie ask, not /usr/bin/collie mcp"},
		// The OpenCode row says what is wrong with the file; the MCP row once.
		{name: "opencode broken config said once", installed: []string{"opencode"}, files: map[string]string{".config/opencode/opencode.json": `{`},
			want: map[string]Status{"OpenCode MCP server": OK}, wantMsg: "not set up for OpenCode"},
		{name: "gemini broken settings said once", files: map[string]string{".gemini/settings.json": `{`},
			want: map[string]Status{"Gemini CLI MCP server": OK}, wantMsg: "not set up for Gemini CLI"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Clients{Home: "/home/u", Project: "/home/u/p", Getenv: func(string) string { return "" },
				LookPath: func(f string) (string, error) {
					for _, i := range tc.installed {
						if i == f {
							return "/usr/bin/" + f, nil
						}
					}
					return "", fs.ErrNotExist
				},
				ReadFile: func(name string) ([]byte, error) {
					rel, _ := filepath.Rel("/home/u", name)
					if s, ok := tc.files[rel]; ok {
						return []byte(s), nil
					}
					return nil, fs.ErrNotExist
				},
				Executable: func(string) bool { return tc.runnable },
			}
			rows := checkCodingAgents(context.Background(), &Env{Clients: c})
			got := map[string]Status{}
			all := ""
			for _, r := range rows {
				if !strings.HasSuffix(r.Subject, " MCP server") {
					continue
				}
				got[r.Subject] = r.Status
				all += r.Message + "\n"
				if r.Status != OK && r.Fix == "" {
					t.Errorf("row %+v has no fix", r)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("rows %+v, want %v", rows, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Fatalf("rows %+v, want %v", rows, tc.want)
				}
			}
			if !strings.Contains(all, tc.wantMsg) {
				t.Fatalf("messages %q lack %q", all, tc.wantMsg)
			}
		})
	}
}
