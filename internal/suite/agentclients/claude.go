//go:build linux

package agentclients

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"
)

// Claude Code: `claude -p PROMPT --output-format json`, pointed at the fake
// API by ANTHROPIC_BASE_URL; settings in $HOME/.claude/settings.json.

// ClaudeEnv returns the environment that points Claude Code at the
// Anthropic API at apiURL (the fake), with a made-up key, and everything
// else through the recording proxy (see Offline).
func ClaudeEnv(apiURL string) []string {
	return append([]string{"ANTHROPIC_BASE_URL=" + apiURL, "ANTHROPIC_API_KEY=sk-ant-collie-test"}, Offline(apiURL)...)
}

// ClaudeHook is one command hook of a PreToolUse entry.
type ClaudeHook struct {
	Command string
	// Timeout is the hook's "timeout" in seconds; 0 leaves it out (the
	// client's default).
	Timeout int
	// OnFailure is the hook's "onFailure" ("block"); "" leaves it out.
	OnFailure string
}

// ClaudeSettings returns a settings.json whose PreToolUse hooks, for the
// tools matcher matches, are hooks.
func ClaudeSettings(matcher string, hooks ...ClaudeHook) []byte {
	var hs []map[string]any
	for _, h := range hooks {
		m := map[string]any{"type": "command", "command": h.Command}
		if h.Timeout > 0 {
			m["timeout"] = h.Timeout
		}
		if h.OnFailure != "" {
			m["onFailure"] = h.OnFailure
		}
		hs = append(hs, m)
	}
	settings := map[string]any{}
	if len(hs) > 0 {
		settings["hooks"] = map[string]any{"PreToolUse": []any{map[string]any{"matcher": matcher, "hooks": hs}}}
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		panic(err) // maps of strings and ints always marshal
	}
	return b
}

// ClaudeSettingsPath is the user's settings file in the sandbox.
func (s *Sandbox) ClaudeSettingsPath() string {
	return filepath.Join(s.Home, ".claude", "settings.json")
}

// ClaudeOutput is the part of `claude -p --output-format json`'s result
// the tests read.
type ClaudeOutput struct {
	Type              string `json:"type"`
	Subtype           string `json:"subtype"`
	IsError           bool   `json:"is_error"`
	Result            string `json:"result"`
	NumTurns          int    `json:"num_turns"`
	PermissionDenials []struct {
		ToolName  string         `json:"tool_name"`
		ToolUseID string         `json:"tool_use_id"`
		ToolInput map[string]any `json:"tool_input"`
	} `json:"permission_denials"`
}

// ParseClaudeOutput reads the JSON result Claude Code prints last.
func ParseClaudeOutput(stdout []byte) (ClaudeOutput, error) {
	var o ClaudeOutput
	if err := json.Unmarshal(stdout, &o); err != nil {
		return o, fmt.Errorf("reading claude's JSON result: %w", err)
	}
	return o, nil
}

// RunClaude runs `claude -p prompt --output-format json args...` as the
// user in the project folder, against the Anthropic API at apiURL.
func (s *Sandbox) RunClaude(ctx context.Context, timeout time.Duration, apiURL, prompt string, args ...string) (Result, error) {
	argv := append([]string{"-p", prompt, "--output-format", "json"}, args...)
	return s.Run(ctx, timeout, nil, ClaudeEnv(apiURL), Path(Claude), argv...)
}
