package ask

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/collie-linux/collie/internal/agent/ask/hook"
)

// OpenCode 1.18 has no command hook, and its plugin hook "permission.ask"
// is declared but never called. What it does call, before every tool
// runs, is a plugin's "tool.execute.before"; an error thrown there stops
// the tool, and its message is the tool's result the model reads. So
// collie setup opencode writes a plugin (opencode_plugin.js) that asks
// collie ask --hook opencode, and throws unless the answer is a yes.
//
// Without the plugin loaded (deleted, broken), OpenCode must still not
// run a command unasked: setup also writes "permission": "ask" for the
// tools that matter into opencode.json, so OpenCode asks in its own window
// (and opencode run refuses). While the plugin is loaded, its "config"
// hook turns those "ask" into "allow": the phone is asked instead, once.
// OpenCode's own "always" never comes up, so a yes is never a standing
// grant there; "always allow" is the durable agent's grant, with its
// second tap.

//go:embed opencode_plugin.js
var opencodePluginTemplate string

// OpenCodePermissions are the permissions setup sets to "ask" in
// opencode.json, and the plugin answers instead (edit covers OpenCode's
// write and apply_patch tools too).
var OpenCodePermissions = []string{"bash", "edit", "webfetch", "websearch"}

// PluginFormat is where a client loads a plugin file from: the user's
// file under home (or under the HomeEnv folder), a project's under it.
type PluginFormat struct {
	UserFile, ProjectFile string
	HomeEnv, HomeEnvFile  string
}

// OpenCode loads every .js file in the plugin folder of its config folders.
var opencodePlugin = &PluginFormat{
	UserFile: ".config/opencode/plugin/collie.js", ProjectFile: ".opencode/plugin/collie.js",
	HomeEnv: "XDG_CONFIG_HOME", HomeEnvFile: "opencode/plugin/collie.js",
}

// opencode.json, the user's and a project's; the same file as the MCP
// server's.
var opencodeSettings = &SettingsFormat{
	UserFile: ".config/opencode/opencode.json", ProjectFile: "opencode.json",
	HomeEnv: "XDG_CONFIG_HOME", HomeEnvFile: "opencode/opencode.json",
	TimeoutUnit: time.Millisecond, format: opencodeFormat{},
}

// PluginPath is the plugin file collie setup writes.
func (h *HookClient) PluginPath(getenv func(string) string, home, project string) string {
	p := h.Plugin
	if project != "" {
		return filepath.Join(project, p.ProjectFile)
	}
	if p.HomeEnv != "" && getenv != nil {
		if d := getenv(p.HomeEnv); d != "" {
			return filepath.Join(d, p.HomeEnvFile)
		}
	}
	return filepath.Join(home, p.UserFile)
}

// PluginVersion is the plugin's version: a plugin file of another version
// is replaced by setup and reported by doctor.
const PluginVersion = 1

// PluginSource is the plugin file that runs prog, collie's hook program
// or collie itself (with ask), and a wait of wait; the plugin gives up on
// it (and denies) at ClientTimeoutFor.
func PluginSource(prog string, wait time.Duration) []byte {
	c, _ := json.Marshal(prog) // a JS string literal: json.Marshal escapes U+2028 and U+2029
	args := `spawn(COLLIE, ["ask", "--hook"`
	if hook.IsProgram(prog) {
		args = `spawn(COLLIE, ["--hook"`
	}
	r := strings.NewReplacer(
		`spawn(COLLIE, ["ask", "--hook"`, args,
		"__COLLIE__", string(c),
		"__WAIT_SECONDS__", strconv.Itoa(int(wait/time.Second)),
		"__DEADLINE_MS__", strconv.FormatInt(hook.ClientTimeoutFor(wait).Milliseconds(), 10),
		"collie-plugin 1", "collie-plugin "+strconv.Itoa(PluginVersion))
	return []byte(r.Replace(opencodePluginTemplate))
}

// PluginInfo is what a plugin file says about itself.
type PluginInfo struct {
	Version    int
	Collie     string // the program it runs: collie's hook program, or collie
	Wait       time.Duration
	Deadline   time.Duration // when the plugin stops waiting for collie
	Current    bool          // byte for byte what setup writes for Collie and Wait
	Recognized bool          // a collie plugin at all
}

// The plugin's marks, compiled on first use: collie's hook adapter starts
// once per tool call and reads no plugin.
var (
	pluginVersionRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`collie-plugin (\d+)`) })
	pluginCollieRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^const COLLIE = ("(?:[^"\\]|\\.)*");$`) })
	pluginWaitRE     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^const WAIT_SECONDS = (\d+);$`) })
	pluginDeadlineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^const DEADLINE_MS = (\d+);$`) })
)

// ReadPlugin reads a plugin file setup wrote.
func ReadPlugin(data []byte) PluginInfo {
	var p PluginInfo
	m := pluginVersionRE().FindSubmatch(data)
	c := pluginCollieRE().FindSubmatch(data)
	w := pluginWaitRE().FindSubmatch(data)
	d := pluginDeadlineRE().FindSubmatch(data)
	if m == nil || c == nil || w == nil || d == nil {
		return p
	}
	p.Recognized = true
	p.Version, _ = strconv.Atoi(string(m[1]))
	if json.Unmarshal(c[1], &p.Collie) != nil {
		return PluginInfo{}
	}
	s, _ := strconv.Atoi(string(w[1]))
	p.Wait = time.Duration(s) * time.Second
	ms, _ := strconv.Atoi(string(d[1]))
	p.Deadline = time.Duration(ms) * time.Millisecond
	p.Current = bytes.Equal(data, PluginSource(p.Collie, p.Wait))
	return p
}

// MergePlugin returns the plugin file that runs prog (see PluginSource),
// and whether it differs from old.
func (h *HookClient) MergePlugin(old []byte, prog string, wait time.Duration) ([]byte, bool, error) {
	want := PluginSource(prog, wait)
	if bytes.Equal(old, want) {
		return old, false, nil
	}
	if len(bytes.TrimSpace(old)) > 0 && !ReadPlugin(old).Recognized {
		return nil, false, fmt.Errorf("%w: it is not collie's plugin; move it away (or rename it) and run collie setup %s again", ErrSettings, h.Name)
	}
	return want, true, nil
}

// opencodeFormat is opencode.json's "permission": setup sets the gated
// permissions to "ask", so that OpenCode asks itself whenever the plugin
// is not loaded.
type opencodeFormat struct{}

// permissionState says what OpenCode does for a permission without the
// plugin: its last rule for the name or for "*" (OpenCode's last matching
// rule wins).
func permissionState(perm *object, name string) string {
	last := lastRule(perm, name)
	if last == "" {
		return "allow" // OpenCode's default for these tools
	}
	var s string
	if json.Unmarshal(perm.get(last), &s) == nil {
		return s
	}
	var m map[string]string
	if json.Unmarshal(perm.get(last), &m) != nil {
		return "allow"
	}
	for _, v := range m {
		if v != "ask" && v != "deny" {
			return "allow" // some calls run unasked
		}
	}
	return "ask"
}

// lastRule is the last key of perm that is name or "*", or "".
func lastRule(perm *object, name string) string {
	last := ""
	for _, k := range perm.keys {
		if k == name || k == "*" {
			last = k
		}
	}
	return last
}

func (opencodeFormat) merge(h *HookClient, old []byte, _, _ string, _ time.Duration) ([]byte, bool, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrSettings}, a...)...)
	}
	top, err := parseObject(old)
	if err != nil {
		return nil, false, bad("%v", err)
	}
	raw := top.get("permission")
	var all string
	if raw != nil && json.Unmarshal(raw, &all) == nil {
		if all == "deny" {
			return old, false, nil // nothing runs at all
		}
		raw, _ = json.Marshal(map[string]string{"*": all})
	}
	perm, err := parseObject(raw)
	if err != nil {
		return nil, false, bad("\"permission\": %v", err)
	}
	changed := false
	for _, name := range OpenCodePermissions {
		st := permissionState(perm, name)
		if st == "deny" || (st == "ask" && lastRule(perm, name) == name) {
			continue // denied outright (kept), or asked already
		}
		// Remove and add it last, so that no "*" rule after it wins.
		perm.remove(name)
		perm.setJSON(name, "ask")
		changed = true
	}
	if !changed {
		return old, false, nil
	}
	top.set("permission", perm.marshal())
	var out bytes.Buffer
	if err := json.Indent(&out, top.marshal(), "", "  "); err != nil {
		return nil, false, err
	}
	out.WriteByte('\n')
	return out.Bytes(), true, nil
}

// find reports, as HookEntry rows, the gated permissions OpenCode would
// not ask for without the plugin (Command is the permission's name).
func (opencodeFormat) find(_ *HookClient, data []byte, _ string) ([]HookEntry, error) {
	top, err := parseObject(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSettings, err)
	}
	raw := top.get("permission")
	var all string
	if raw != nil && json.Unmarshal(raw, &all) == nil {
		raw, _ = json.Marshal(map[string]string{"*": all})
	}
	perm, err := parseObject(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: \"permission\": %v", ErrSettings, err)
	}
	var open []HookEntry
	for _, name := range OpenCodePermissions {
		if st := permissionState(perm, name); st != "ask" && st != "deny" {
			open = append(open, HookEntry{Command: name})
		}
	}
	return open, nil
}

func (o *object) remove(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	for i, x := range o.keys {
		if x == k {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			break
		}
	}
}
