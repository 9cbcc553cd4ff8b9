package ask

import (
	"strings"

	"github.com/collie-linux/collie/internal/agent/ask/hook"
)

// HookClient is one coding agent's row: its hook adapter (the part the
// hook program runs on every tool call, hook.Adapter) and the files
// `collie setup` writes and `collie doctor` reads for it.
type HookClient struct {
	*hook.Adapter
	// Settings is the client's config file and how our entry merges into
	// it (settings.go); nil when collie setup cannot write it yet.
	Settings *SettingsFormat
	// OrBlock is a shell tail for the command setup writes, for a client
	// that lets the tool run when its hook dies: the shell turns any
	// failure of the hook (not found, killed) into the blocking status.
	OrBlock string
	// MCP is where the client keeps its MCP servers (mcpconfig.go):
	// collie setup adds collie mcp there, collie doctor checks it.
	MCP *MCPFormat
	// Plugin is the plugin file that runs the adapter, for a client
	// whose hook is a plugin (OpenCode, opencode.go); nil for the others.
	Plugin *PluginFormat
}

var (
	claudeHook     = &HookClient{Adapter: hook.Claude, Settings: claudeSettings, MCP: claudeMCP}
	codexHook      = &HookClient{Adapter: hook.Codex, Settings: codexSettings, MCP: codexMCP, OrBlock: " || exit 2"}
	geminiHook     = &HookClient{Adapter: hook.Gemini, Settings: geminiSettings, MCP: geminiMCP, OrBlock: " || exit 2"}
	opencodeClient = &HookClient{Adapter: hook.OpenCode, Settings: opencodeSettings, MCP: opencodeMCP, Plugin: opencodePlugin}
)

// HookClients is the table of clients, one row per client. A row
// without a hook would have only its MCP part.
func HookClients() []*HookClient {
	return []*HookClient{claudeHook, codexHook, geminiHook, opencodeClient}
}

// HasHook reports whether the client has a command hook collie ask
// --hook answers and collie setup writes.
func (h *HookClient) HasHook() bool { return h.Print != nil && h.Settings != nil }

// HookClientNamed returns the row called name, or nil.
func HookClientNamed(name string) *HookClient {
	for _, h := range HookClients() {
		if h.Name == name {
			return h
		}
	}
	return nil
}

func hookNames() string {
	var names []string
	for _, h := range HookClients() {
		if h.HasHook() {
			names = append(names, h.Name)
		}
	}
	return strings.Join(names, ", ")
}
