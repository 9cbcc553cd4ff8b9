package ask

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/collie-linux/collie/internal/agent/ask/hook"
)

// SettingsFormat is a client's JSON settings file as collie setup writes
// it and collie doctor reads it: hooks.EVENT is a list of matcher groups,
// each with a list of command hooks (Claude Code's and Gemini CLI's
// shape; they differ in the file's place, the timeout's unit and
// onFailure).
type SettingsFormat struct {
	UserFile    string // under the home folder
	ProjectFile string // under the project folder
	Matcher     string // the tools the hook gates
	TimeoutUnit time.Duration
	// OnFailure is the hook's "onFailure" value, "" for a client that has
	// none.
	OnFailure string
	// HomeEnv names the variable that moves the user's file's folder
	// (Codex's CODEX_HOME); UserFile's base name is then under it.
	HomeEnv string
	// HomeEnvFile is the file's path under the HomeEnv folder; "" is
	// UserFile's base name.
	HomeEnvFile string
	// format reads and writes the file; nil is the JSON hooks.EVENT shape.
	format settingsFile
}

// settingsFile is a settings file format other than the JSON one.
type settingsFile interface {
	merge(h *HookClient, old []byte, path, collie string, wait time.Duration) ([]byte, bool, error)
	find(h *HookClient, data []byte, path string) ([]HookEntry, error)
}

// Claude Code reads ~/.claude/settings.json, and a project's
// .claude/settings.local.json (the one that is not shared: it names this
// machine's collie). The matcher is every tool that changes something or
// reaches out; reading and searching files are left to Claude Code.
var claudeSettings = &SettingsFormat{
	UserFile: ".claude/settings.json", ProjectFile: ".claude/settings.local.json",
	Matcher:     "Bash|Write|Edit|MultiEdit|NotebookEdit|WebFetch|WebSearch|mcp__.*",
	TimeoutUnit: time.Second, OnFailure: "block",
}

// Gemini CLI reads ~/.gemini/settings.json and .gemini/settings.json.
var geminiSettings = &SettingsFormat{
	UserFile: ".gemini/settings.json", ProjectFile: ".gemini/settings.json",
	Matcher:     "run_shell_command|write_file|replace|web_fetch|google_web_search|mcp_.*",
	TimeoutUnit: time.Millisecond,
}

// SettingsPath is the file setup writes: the user's under home (or under
// the folder the client's HomeEnv names), or the project's under project
// when it is not "".
func (h *HookClient) SettingsPath(getenv func(string) string, home, project string) string {
	if project != "" {
		return filepath.Join(project, h.Settings.ProjectFile)
	}
	if h.Settings.HomeEnv != "" && getenv != nil {
		if d := getenv(h.Settings.HomeEnv); d != "" {
			if h.Settings.HomeEnvFile != "" {
				return filepath.Join(d, h.Settings.HomeEnvFile)
			}
			return filepath.Join(d, filepath.Base(h.Settings.UserFile))
		}
	}
	return filepath.Join(home, h.Settings.UserFile)
}

// HookCommand is the hook's command line that runs prog: collie's hook
// program (hook.ProgramFor), or, where there is none, collie itself as
// collie ask --hook.
func (h *HookClient) HookCommand(prog string, wait time.Duration) string {
	ask := " ask"
	if hook.IsProgram(prog) {
		ask = ""
	}
	return shellQuote(prog) + ask + " --hook " + h.Name + " --timeout " + fmt.Sprintf("%ds", int(wait/time.Second)) + h.OrBlock
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// entry is the hook entry setup writes, its keys in the order a person
// would write them.
func (h *HookClient) entry(collie string, wait time.Duration) *object {
	e := &object{vals: map[string]json.RawMessage{}}
	if h.Name == "gemini" {
		e.setJSON("name", "collie")
	}
	e.setJSON("type", "command")
	e.setJSON("command", h.HookCommand(collie, wait))
	e.setJSON("timeout", int64(hook.ClientTimeoutFor(wait)/h.Settings.TimeoutUnit))
	if h.Settings.OnFailure != "" {
		e.setJSON("onFailure", h.Settings.OnFailure)
	}
	return e
}

// ErrSettings marks a settings file collie cannot read; nothing is
// written over it.
var ErrSettings = errors.New("settings file")

// MergeSettings returns old (the file's content, nil for none) with the
// adapter's hook entry that runs prog (HookCommand), and whether that changed
// anything. Everything else in the file is kept, in its order; an entry
// of an earlier collie ask --hook for this client is replaced in place.
func (h *HookClient) MergeSettings(old []byte, path, prog string, wait time.Duration) ([]byte, bool, error) {
	if h.Settings.format != nil {
		return h.Settings.format.merge(h, old, path, prog, wait)
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrSettings}, a...)...)
	}
	top, err := parseObject(old)
	if err != nil {
		return nil, false, bad("%v", err)
	}
	hooks, err := parseObject(top.get("hooks"))
	if err != nil {
		return nil, false, bad("\"hooks\": %v", err)
	}
	event := h.Events[0]
	var groups []json.RawMessage
	if raw := hooks.get(event); raw != nil {
		if err := json.Unmarshal(raw, &groups); err != nil {
			return nil, false, bad("\"hooks\".%q is not a list of matcher groups: %v", event, err)
		}
	}
	want := h.entry(prog, wait).marshal()
	matcher, _ := json.Marshal(h.Settings.Matcher)
	found, changed := false, false
	for gi, graw := range groups {
		g, err := parseObject(graw)
		if err != nil {
			return nil, false, bad("\"hooks\".%q[%d]: %v", event, gi, err)
		}
		var list []json.RawMessage
		if raw := g.get("hooks"); raw != nil {
			if err := json.Unmarshal(raw, &list); err != nil {
				return nil, false, bad("\"hooks\".%q[%d].hooks is not a list: %v", event, gi, err)
			}
		}
		for i, x := range list {
			var m struct {
				Command string `json:"command"`
			}
			if json.Unmarshal(x, &m) != nil || !h.isOurs(m.Command) {
				continue
			}
			found = true
			if !sameJSON(x, want) || !sameJSON(g.get("matcher"), matcher) {
				list[i] = want
				lraw, _ := json.Marshal(list)
				g.set("hooks", lraw)
				g.set("matcher", matcher)
				groups[gi] = g.marshal()
				changed = true
			}
		}
	}
	if !found {
		g := &object{vals: map[string]json.RawMessage{}}
		g.set("matcher", matcher)
		lraw, _ := json.Marshal([]json.RawMessage{want})
		g.set("hooks", lraw)
		groups = append(groups, g.marshal())
		changed = true
	}
	if !changed {
		return old, false, nil
	}
	graw, err := json.Marshal(groups)
	if err != nil {
		return nil, false, err
	}
	hooks.set(event, graw)
	top.set("hooks", hooks.marshal())
	var out bytes.Buffer
	if err := json.Indent(&out, top.marshal(), "", "  "); err != nil {
		return nil, false, err
	}
	out.WriteByte('\n')
	return out.Bytes(), true, nil
}

// isOurs reports whether a hook command is this adapter's: the hook
// program's, or collie ask --hook's as setup wrote it before there was a
// hook program.
func (h *HookClient) isOurs(cmd string) bool {
	return strings.Contains(cmd, " ask --hook "+h.Name) ||
		hook.IsProgram(programOf(cmd)) && strings.Contains(cmd, " --hook "+h.Name)
}

// sameJSON reports whether two JSON texts are the same value.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// HookEntry is the adapter's entry as a settings file holds it.
type HookEntry struct {
	Command       string
	Matcher       string
	ClientTimeout time.Duration // the client's default when the entry has none
	OnFailure     string
	Wait          time.Duration // the --timeout in the command, or the default
	OrBlock       bool          // the command ends in the client's OrBlock, where it has one
	// Untrusted is set where the client runs only trusted hooks and this
	// one's trust is not recorded (or no longer matches it).
	Untrusted bool
}

// FindHook reads the settings file at path and returns the adapter's
// entries in it.
func (h *HookClient) FindHook(data []byte, path string) ([]HookEntry, error) {
	if h.Settings.format != nil {
		return h.Settings.format.find(h, data, path)
	}
	top, err := parseObject(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSettings, err)
	}
	hooks, err := parseObject(top.get("hooks"))
	if err != nil {
		return nil, fmt.Errorf("%w: \"hooks\": %v", ErrSettings, err)
	}
	var groups []struct {
		Matcher string           `json:"matcher"`
		Hooks   []map[string]any `json:"hooks"`
	}
	if raw := hooks.get(h.Events[0]); raw != nil {
		if err := json.Unmarshal(raw, &groups); err != nil {
			return nil, fmt.Errorf("%w: \"hooks\".%q: %v", ErrSettings, h.Events[0], err)
		}
	}
	var found []HookEntry
	for _, g := range groups {
		for _, m := range g.Hooks {
			cmd, _ := m["command"].(string)
			if !h.isOurs(cmd) {
				continue
			}
			e := h.entryOf(cmd, g.Matcher, m["timeout"])
			e.OnFailure, _ = m["onFailure"].(string)
			found = append(found, e)
		}
	}
	return found, nil
}

// entryOf reads an entry's command and timeout (a number in the client's
// unit, or none).
func (h *HookClient) entryOf(cmd, matcher string, timeout any) HookEntry {
	e := HookEntry{Command: cmd, Matcher: matcher, ClientTimeout: h.ClientDefault, Wait: h.DefaultWait()}
	var t float64
	switch v := timeout.(type) {
	case float64:
		t = v
	case int64:
		t = float64(v)
	}
	if t > 0 {
		e.ClientTimeout = time.Duration(t * float64(h.Settings.TimeoutUnit))
	}
	e.OrBlock = h.OrBlock == "" || strings.HasSuffix(cmd, h.OrBlock)
	if _, after, ok := strings.Cut(cmd, " --timeout "); ok {
		w, _, _ := strings.Cut(after, " ")
		if d, err := time.ParseDuration(w); err == nil {
			e.Wait = d
		}
	}
	return e
}

// Program is the program an entry's command runs: collie's hook
// program, or collie.
func (e HookEntry) Program() string { return programOf(e.Command) }

// ViaAsk reports whether the entry runs collie ask --hook rather than
// collie's hook program, which costs less CPU per tool call.
func (e HookEntry) ViaAsk() bool { return !hook.IsProgram(e.Program()) }

// programOf is the program a command line runs, as HookCommand quotes it.
func programOf(cmd string) string {
	if strings.HasPrefix(cmd, "'") {
		if i := strings.Index(cmd[1:], "'"); i >= 0 {
			return cmd[1 : i+1]
		}
	}
	p, _, _ := strings.Cut(cmd, " ")
	return p
}

// object is a JSON object that keeps its keys' order.
type object struct {
	keys []string
	vals map[string]json.RawMessage
}

func parseObject(data []byte) (*object, error) {
	o := &object{vals: map[string]json.RawMessage{}}
	if len(bytes.TrimSpace(data)) == 0 {
		return o, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("not JSON: %v", err)
		}
		k := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("not JSON at %q: %v", k, err)
		}
		if _, dup := o.vals[k]; dup {
			return nil, fmt.Errorf("%q is there twice", k)
		}
		o.keys = append(o.keys, k)
		o.vals[k] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("more than one JSON value")
	}
	return o, nil
}

func (o *object) get(k string) json.RawMessage { return o.vals[k] }

func (o *object) set(k string, v json.RawMessage) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *object) setJSON(k string, v any) {
	b, _ := json.Marshal(v)
	o.set(k, b)
}

func (o *object) marshal() json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(o.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}
