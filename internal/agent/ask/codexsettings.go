package ask

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/collie-linux/collie/internal/agent/ask/hook"
)

// Codex CLI 0.169 reads hooks from $CODEX_HOME/config.toml (default
// ~/.codex/config.toml) as [[hooks.EVENT]] groups of [[hooks.EVENT.hooks]]
// command hooks, timeouts in seconds, and runs a hook only when
// [hooks.state."FILE:EVENT_KEY:GROUP:HOOK"] records trusted_hash, the
// sha256 of the hook's identity: {"event_name", "hooks": [{"async":
// false, "command", "timeout", "type": "command"}], "matcher"} as compact
// JSON with sorted keys. Setup appends its groups (the rest of the file
// stays as it is, byte for byte) and records their trust.
var codexSettings = &SettingsFormat{
	UserFile: ".codex/config.toml", ProjectFile: ".codex/config.toml", HomeEnv: "CODEX_HOME",
	Matcher: "*", TimeoutUnit: time.Second, format: codexFormat{},
}

type codexFormat struct{}

var codexEventKeys = map[string]string{"PreToolUse": "pre_tool_use", "PermissionRequest": "permission_request"}

// codexGroup is a [[hooks.EVENT]] group as go-toml reads it.
type codexGroup struct {
	Matcher string           `toml:"matcher"`
	Hooks   []map[string]any `toml:"hooks"`
}

type codexFile struct {
	Hooks struct {
		PreToolUse        []codexGroup `toml:"PreToolUse"`
		PermissionRequest []codexGroup `toml:"PermissionRequest"`
		State             map[string]struct {
			TrustedHash string `toml:"trusted_hash"`
		} `toml:"state"`
	} `toml:"hooks"`
}

func (f *codexFile) groups(event string) []codexGroup {
	if event == "PermissionRequest" {
		return f.Hooks.PermissionRequest
	}
	return f.Hooks.PreToolUse
}

func readCodex(data []byte) (*codexFile, error) {
	var f codexFile
	if err := toml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSettings, err)
	}
	return &f, nil
}

// codexTrustHash is the trusted_hash Codex records for one command hook.
func codexTrustHash(event, matcher, command string, timeout int64) string {
	id := map[string]any{"event_name": codexEventKeys[event], "hooks": []any{map[string]any{
		"async": false, "command": command, "timeout": timeout, "type": "command"}}}
	if matcher != "" {
		id["matcher"] = matcher
	}
	b, _ := json.Marshal(id) // sorted keys, compact
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func codexStateKey(path, event string, group, hook int) string {
	return fmt.Sprintf("%s:%s:%d:%d", path, codexEventKeys[event], group, hook)
}

func (codexFormat) find(h *HookClient, data []byte, path string) ([]HookEntry, error) {
	f, err := readCodex(data)
	if err != nil {
		return nil, err
	}
	var found []HookEntry
	for _, event := range h.Events {
		for gi, g := range f.groups(event) {
			for hi, m := range g.Hooks {
				cmd, _ := m["command"].(string)
				if !h.isOurs(cmd) {
					continue
				}
				e := h.entryOf(cmd, g.Matcher, m["timeout"])
				timeout, _ := m["timeout"].(int64)
				e.Untrusted = f.Hooks.State[codexStateKey(path, event, gi, hi)].TrustedHash != codexTrustHash(event, g.Matcher, cmd, timeout)
				found = append(found, e)
			}
		}
	}
	return found, nil
}

func (c codexFormat) merge(h *HookClient, old []byte, path, collie string, wait time.Duration) ([]byte, bool, error) {
	f, err := readCodex(old)
	if err != nil {
		return nil, false, err
	}
	command := h.HookCommand(collie, wait)
	timeout := int64(hook.ClientTimeoutFor(wait) / time.Second)
	var add bytes.Buffer
	for _, event := range h.Events {
		groups := f.groups(event)
		ours := false
		for _, g := range groups {
			for _, m := range g.Hooks {
				if cmd, _ := m["command"].(string); h.isOurs(cmd) {
					if cmd != command || m["timeout"] != timeout || g.Matcher != h.Settings.Matcher {
						return nil, false, fmt.Errorf("%w: it has a collie hook for %s that is not the one to write (%q); remove that [[hooks.%s]] group and its [hooks.state] entry",
							ErrSettings, event, cmd, event)
					}
					ours = true
				}
			}
		}
		if ours {
			continue
		}
		fmt.Fprintf(&add, "\n# collie setup codex: ask the phone before a tool runs; deny on any failure.\n[[hooks.%s]]\nmatcher = %s\n[[hooks.%s.hooks]]\ntype = \"command\"\ncommand = %s\ntimeout = %d\n",
			event, strconv.Quote(h.Settings.Matcher), event, strconv.Quote(command), timeout)
		fmt.Fprintf(&add, "\n[hooks.state.%s]\ntrusted_hash = %q\n",
			strconv.Quote(codexStateKey(path, event, len(groups), 0)), codexTrustHash(event, h.Settings.Matcher, command, timeout))
	}
	if add.Len() == 0 {
		found, err := c.find(h, old, path)
		if err != nil {
			return nil, false, err
		}
		for _, e := range found {
			if e.Untrusted {
				return nil, false, fmt.Errorf("%w: its collie hooks are there but Codex's trust of them is not recorded for this file; remove them and run collie setup codex again, or trust them in Codex's /hooks panel", ErrSettings)
			}
		}
		return old, false, nil
	}
	out := append([]byte{}, old...)
	if len(out) > 0 && !strings.HasSuffix(string(out), "\n") {
		out = append(out, '\n')
	}
	out = append(out, add.Bytes()...)
	if _, err := readCodex(out); err != nil {
		return nil, false, fmt.Errorf("%w: adding collie's hooks would make it unreadable (%v); add them by hand as collie(1) shows", ErrSettings, err)
	}
	return out, true, nil
}
