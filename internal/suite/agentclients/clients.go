//go:build linux

package agentclients

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Codex CLI: `codex exec --skip-git-repo-check PROMPT`, its settings in
// $CODEX_HOME/config.toml, which names the fake API as a provider.

// CodexHome is the sandbox's $CODEX_HOME.
func (s *Sandbox) CodexHome() string { return filepath.Join(s.Home, ".codex") }

// CodexConfig returns a config.toml that points Codex at the OpenAI
// Responses API at apiURL as the provider "fake", with update checks and
// analytics off, followed by extra (hooks, for instance; tables, so that
// it goes last).
func CodexConfig(apiURL, extra string) string {
	return fmt.Sprintf(`model = "gpt-fake"
model_provider = "fake"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.fake]
name = "fake"
base_url = %q
wire_api = "responses"
env_key = "FAKE_API_KEY"

%s`, apiURL+"/v1", extra)
}

// CodexHook is one command hook of a Codex hook event.
type CodexHook struct {
	Event   string // "PreToolUse", "PermissionRequest"
	Matcher string // "" for none
	Command string
	Timeout int // seconds; 0 leaves it out
}

// codexEventKeys are the events' names in Codex's trust keys.
var codexEventKeys = map[string]string{
	"PreToolUse": "pre_tool_use", "PermissionRequest": "permission_request",
	"PostToolUse": "post_tool_use", "SessionStart": "session_start",
	"UserPromptSubmit": "user_prompt_submit", "Stop": "stop",
}

// TOML returns the hook as a [[hooks.EVENT]] group of config.toml and,
// when configPath is not empty, the [hooks.state."KEY"] table that marks
// it trusted there: Codex skips, silently, a hook whose trusted_hash does
// not match (TestCodex_HookTrust). The key is the config file's path, the
// event's key and the group's and hook's indexes (both 0 here); the hash
// is sha256 of the hook's identity as compact JSON with sorted keys.
func (h CodexHook) TOML(configPath string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[[hooks.%s]]\n", h.Event)
	if h.Matcher != "" {
		fmt.Fprintf(&b, "matcher = %s\n", strconv.Quote(h.Matcher))
	}
	fmt.Fprintf(&b, "[[hooks.%s.hooks]]\ntype = \"command\"\ncommand = %s\n", h.Event, strconv.Quote(h.Command))
	if h.Timeout > 0 {
		fmt.Fprintf(&b, "timeout = %d\n", h.Timeout)
	}
	if configPath != "" {
		fmt.Fprintf(&b, "\n[hooks.state.%s]\ntrusted_hash = %q\n",
			strconv.Quote(configPath+":"+codexEventKeys[h.Event]+":0:0"), h.TrustedHash())
	}
	return b.String()
}

// TrustedHash is the hash Codex 0.169 records for a trusted hook: the
// identity {"event_name", "matcher" (when set), "hooks": [{"async":
// false, "command", "timeout", "type": "command"}]} as compact JSON with
// sorted keys (encoding/json sorts map keys). A hook without a timeout
// must be hashed with Codex's default, so set Timeout where it matters.
func (h CodexHook) TrustedHash() string {
	hook := map[string]any{"async": false, "command": h.Command, "type": "command"}
	if h.Timeout > 0 {
		hook["timeout"] = h.Timeout
	}
	id := map[string]any{"event_name": codexEventKeys[h.Event], "hooks": []any{hook}}
	if h.Matcher != "" {
		id["matcher"] = h.Matcher
	}
	b, err := json.Marshal(id)
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// RunCodex runs `codex exec --skip-git-repo-check args... prompt` as the
// user, with CODEX_HOME in the sandbox and the fake API's key. The
// config must have been written (CodexConfig) to CodexHome/config.toml.
func (s *Sandbox) RunCodex(ctx context.Context, timeout time.Duration, apiURL, prompt string, args ...string) (Result, error) {
	argv := append(append([]string{"exec", "--skip-git-repo-check"}, args...), prompt)
	env := append([]string{"CODEX_HOME=" + s.CodexHome(), "FAKE_API_KEY=sk-collie-test"}, Offline(apiURL)...)
	return s.Run(ctx, timeout, nil, env, Path(Codex), argv...)
}

// Gemini CLI: `gemini -p PROMPT --output-format json -m MODEL`, settings
// in $HOME/.gemini/settings.json. An explicit model keeps it from asking
// a router model first (a JSON-schema request the fake does not answer in
// kind, which Gemini retries for a minute and a half).

// GeminiModel is the model the tests name with -m.
const GeminiModel = "gemini-2.5-pro"

// GeminiSettingsPath is the user's settings file in the sandbox.
func (s *Sandbox) GeminiSettingsPath() string {
	return filepath.Join(s.Home, ".gemini", "settings.json")
}

// GeminiHook is one command hook of hooks.BeforeTool.
type GeminiHook struct {
	Matcher   string // a tool name such as "run_shell_command"
	Command   string
	TimeoutMS int // milliseconds; 0 leaves it out
}

// GeminiSettings returns a settings.json with API-key auth, telemetry and
// update checks off, and hooks as hooks.BeforeTool.
func GeminiSettings(hooks ...GeminiHook) []byte {
	var groups []any
	for _, h := range hooks {
		m := map[string]any{"type": "command", "command": h.Command}
		if h.TimeoutMS > 0 {
			m["timeout"] = h.TimeoutMS
		}
		groups = append(groups, map[string]any{"matcher": h.Matcher, "hooks": []any{m}})
	}
	settings := map[string]any{
		"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"telemetry": map[string]any{"enabled": false},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"general":   map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true},
	}
	if len(groups) > 0 {
		settings["hooks"] = map[string]any{"BeforeTool": groups}
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		panic(err)
	}
	return b
}

// RunGemini runs `gemini -p prompt --output-format json -m GeminiModel
// args...` as the user against the Gemini API at apiURL, with the
// workspace trusted.
func (s *Sandbox) RunGemini(ctx context.Context, timeout time.Duration, apiURL, prompt string, args ...string) (Result, error) {
	argv := append([]string{"-p", prompt, "--output-format", "json", "-m", GeminiModel}, args...)
	env := append([]string{"GEMINI_API_KEY=collie-test", "GOOGLE_GEMINI_BASE_URL=" + apiURL,
		"GEMINI_CLI_TRUST_WORKSPACE=true"}, Offline(apiURL)...)
	return s.Run(ctx, timeout, nil, env, Path(Gemini), argv...)
}

// OpenCode: `opencode run PROMPT`, its settings in
// $HOME/.config/opencode/opencode.json; the built-in anthropic provider
// with its baseURL pointed at the fake (a provider with an "npm" package
// would be downloaded at run time).

// OpenCodeConfigPath is the user's config file in the sandbox.
func (s *Sandbox) OpenCodeConfigPath() string {
	return filepath.Join(s.Home, ".config", "opencode", "opencode.json")
}

// OpenCodeConfig returns an opencode.json that sends the anthropic
// provider to apiURL with permission as its "permission" setting (nil
// for none).
func OpenCodeConfig(apiURL string, permission map[string]any) []byte {
	cfg := map[string]any{
		"$schema":    "https://opencode.ai/config.json",
		"autoupdate": false,
		"share":      "disabled",
		"provider": map[string]any{"anthropic": map[string]any{
			"options": map[string]any{"baseURL": apiURL + "/v1", "apiKey": "sk-ant-collie-test"}}},
		"model": "anthropic/claude-sonnet-4-5",
	}
	if permission != nil {
		cfg["permission"] = permission
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		panic(err)
	}
	return b
}

// RunOpenCode runs `opencode run args... prompt` as the user.
func (s *Sandbox) RunOpenCode(ctx context.Context, timeout time.Duration, apiURL, prompt string, args ...string) (Result, error) {
	argv := append(append([]string{"run"}, args...), prompt)
	return s.Run(ctx, timeout, nil, Offline(apiURL), Path(OpenCode), argv...)
}
