package ask

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/collie-linux/collie/internal/agent/ask/hook"
	"github.com/pelletier/go-toml/v2"
)

// MCPServerName is the name collie setup gives collie mcp in a client's
// MCP servers: the client calls its tools mcp__collie__ask_yes_no and so on.
const MCPServerName = hook.MCPServerName

// MCPArgs are the arguments of the server's command after collie itself.
var MCPArgs = []string{"mcp"}

// MCPFormat is where a client keeps its MCP servers and how collie
// setup writes collie's entry there; the HookClient row carries it.
type MCPFormat struct {
	UserFile    string // under the home folder
	ProjectFile string // under the project folder
	// HomeEnv names the variable that moves the user's file's folder
	// (Codex's CODEX_HOME); UserFile's base name is then under it.
	HomeEnv string
	// HomeEnvFile is the file's path under the HomeEnv folder; "" is
	// UserFile's base name.
	HomeEnvFile string
	// Key is the JSON object of servers ("mcpServers"); "" is Codex's
	// TOML [mcp_servers.NAME] tables.
	Key string
	// Type is the entry's "type" where the client writes one itself.
	Type string
	// CommandArray is OpenCode's entry: "command" is collie and its
	// arguments in one array (no "args"), with "enabled": true.
	CommandArray bool
}

// Claude Code keeps a user's MCP servers in ~/.claude.json (what `claude
// mcp add --scope user` writes) and a project's in .mcp.json.
var claudeMCP = &MCPFormat{UserFile: ".claude.json", ProjectFile: ".mcp.json", Key: "mcpServers", Type: "stdio"}

// Gemini CLI keeps them in its settings files, beside the hooks.
var geminiMCP = &MCPFormat{UserFile: ".gemini/settings.json", ProjectFile: ".gemini/settings.json", Key: "mcpServers"}

// Codex CLI keeps them in config.toml as [mcp_servers.NAME] tables.
var codexMCP = &MCPFormat{UserFile: ".codex/config.toml", ProjectFile: ".codex/config.toml", HomeEnv: "CODEX_HOME"}

// OpenCode keeps them under "mcp" in opencode.json: the user's in
// $XDG_CONFIG_HOME/opencode (~/.config/opencode), a project's at its top.
var opencodeMCP = &MCPFormat{UserFile: ".config/opencode/opencode.json", ProjectFile: "opencode.json",
	HomeEnv: "XDG_CONFIG_HOME", HomeEnvFile: "opencode/opencode.json", Key: "mcp", Type: "local", CommandArray: true}

// MCPPath is the file collie setup writes the MCP server into: the
// user's under home (or the HomeEnv folder), or the project's.
func (h *HookClient) MCPPath(getenv func(string) string, home, project string) string {
	m := h.MCP
	if project != "" {
		return filepath.Join(project, m.ProjectFile)
	}
	if m.HomeEnv != "" && getenv != nil {
		if d := getenv(m.HomeEnv); d != "" {
			if m.HomeEnvFile != "" {
				return filepath.Join(d, m.HomeEnvFile)
			}
			return filepath.Join(d, filepath.Base(m.UserFile))
		}
	}
	return filepath.Join(home, m.UserFile)
}

// MCPEntry is collie's MCP server entry as a client's file holds it.
type MCPEntry struct {
	Command string
	Args    []string
}

// Right reports whether the entry runs collie mcp (of whichever collie).
func (e *MCPEntry) Right() bool { return slices.Equal(e.Args, MCPArgs) }

// FindMCP returns collie's MCP server entry in a client's file, nil when
// there is none.
func (h *HookClient) FindMCP(data []byte) (*MCPEntry, error) {
	if h.MCP.Key == "" {
		var f struct {
			Servers map[string]MCPEntry `toml:"mcp_servers"`
		}
		if err := toml.Unmarshal(data, &f); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSettings, err)
		}
		if e, ok := f.Servers[MCPServerName]; ok {
			return &e, nil
		}
		return nil, nil
	}
	top, err := parseObject(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSettings, err)
	}
	servers, err := parseObject(top.get(h.MCP.Key))
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrSettings, h.MCP.Key, err)
	}
	raw := servers.get(MCPServerName)
	if raw == nil {
		return nil, nil
	}
	if h.MCP.CommandArray {
		var e struct {
			Command []string `json:"command"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("%w: %q.%q: %v", ErrSettings, h.MCP.Key, MCPServerName, err)
		}
		if len(e.Command) == 0 {
			return &MCPEntry{}, nil
		}
		return &MCPEntry{Command: e.Command[0], Args: e.Command[1:]}, nil
	}
	var e struct {
		Command string   `json:"command"`
		Args    []string `json:"args"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, fmt.Errorf("%w: %q.%q: %v", ErrSettings, h.MCP.Key, MCPServerName, err)
	}
	return &MCPEntry{Command: e.Command, Args: e.Args}, nil
}

// MergeMCP returns old (the file's content, nil for none) with collie's
// MCP server entry running the collie at collie, and whether that changed
// anything. Everything else is kept in its order, and so are the other
// keys of an earlier collie entry (its "env", say).
func (h *HookClient) MergeMCP(old []byte, collie string) ([]byte, bool, error) {
	if h.MCP.Key == "" {
		return h.mergeMCPTOML(old, collie)
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrSettings}, a...)...)
	}
	top, err := parseObject(old)
	if err != nil {
		return nil, false, bad("%v", err)
	}
	servers, err := parseObject(top.get(h.MCP.Key))
	if err != nil {
		return nil, false, bad("%q: %v", h.MCP.Key, err)
	}
	entry, err := parseObject(servers.get(MCPServerName))
	if err != nil {
		return nil, false, bad("%q.%q: %v", h.MCP.Key, MCPServerName, err)
	}
	before := entry.marshal()
	if h.MCP.Type != "" {
		entry.setJSON("type", h.MCP.Type)
	}
	if h.MCP.CommandArray {
		entry.setJSON("command", append([]string{collie}, MCPArgs...))
		entry.setJSON("enabled", true)
	} else {
		entry.setJSON("command", collie)
		entry.setJSON("args", MCPArgs)
	}
	if servers.get(MCPServerName) != nil && sameJSON(before, entry.marshal()) {
		return old, false, nil
	}
	servers.set(MCPServerName, entry.marshal())
	top.set(h.MCP.Key, servers.marshal())
	var out bytes.Buffer
	if err := json.Indent(&out, top.marshal(), "", "  "); err != nil {
		return nil, false, err
	}
	out.WriteByte('\n')
	return out.Bytes(), true, nil
}

// mergeMCPTOML appends a [mcp_servers.collie] table to a Codex
// config.toml; the rest of the file stays as it is, byte for byte.
func (h *HookClient) mergeMCPTOML(old []byte, collie string) ([]byte, bool, error) {
	e, err := h.FindMCP(old)
	if err != nil {
		return nil, false, err
	}
	if e != nil {
		if e.Command == collie && e.Right() {
			return old, false, nil
		}
		return nil, false, fmt.Errorf("%w: it has an [mcp_servers.%s] table that runs %q %q, not %q %q; remove that table and run collie setup %s again",
			ErrSettings, MCPServerName, e.Command, e.Args, collie, MCPArgs, h.Name)
	}
	var args []string
	for _, a := range MCPArgs {
		args = append(args, strconv.Quote(a))
	}
	out := append([]byte{}, old...)
	if len(out) > 0 && !bytes.HasSuffix(out, []byte("\n")) {
		out = append(out, '\n')
	}
	out = fmt.Appendf(out, "\n# collie setup %s: the model can ask you on your phone (collie mcp).\n[mcp_servers.%s]\ncommand = %s\nargs = [%s]\n",
		h.Name, MCPServerName, strconv.Quote(collie), strings.Join(args, ", "))
	if e, err := h.FindMCP(out); err != nil || e == nil || e.Command != collie {
		return nil, false, fmt.Errorf("%w: adding collie's MCP server would make it unreadable (%v); add it by hand as collie(1) shows", ErrSettings, err)
	}
	return out, true, nil
}
