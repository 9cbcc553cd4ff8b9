package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"

	"github.com/collie-linux/collie/internal/agent/runcmd"
	"github.com/collie-linux/collie/internal/cli"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
	"github.com/collie-linux/collie/internal/protocol/tomlstrict"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Config is collie-agent's configuration file, TOML:
// $XDG_CONFIG_HOME/collie-agent/NAME.toml for collie-agent@NAME.
type Config struct {
	// Title is the title of the agent's main conversation, where
	// questions from local programs appear.
	Title string `toml:"title" example:"\"Deploys\""`
	// CallerCheck is "on" (the default where it works: Linux) or "off"
	// (C3). Off, any process of the user may answer the agent's questions.
	CallerCheck string `toml:"CallerCheck" example:"\"off\""`
	// Question is a standing yes/no question shown at start (the demo's).
	Question *QuestionConfig `toml:"question"`
	// Always configures "always allow" (D7). Off by default.
	Always AlwaysConfig `toml:"always"`
	// Belt holds up to four buttons (D2); Starters any number.
	Belt     []CommandConfig `toml:"belt"`
	Starters []CommandConfig `toml:"starter"`
	// HTTPS serves the agent over the token transport too (K1–K7).
	HTTPS *HTTPSConfig `toml:"https"`
}

// QuestionConfig describes the standing question.
type QuestionConfig struct {
	Title     string `toml:"title" example:"\"Restart nginx?\""`
	Rationale string `toml:"rationale" example:"\"It is stuck.\""`
}

// AlwaysConfig says whether questions that name a tool offer "always
// allow", and for how long a grant lasts.
type AlwaysConfig struct {
	Enabled  bool   `toml:"enabled"`
	Duration string `toml:"duration" example:"\"1h\""`

	duration time.Duration
}

// CommandConfig is a belt button or a starter: a fixed command.
type CommandConfig struct {
	ID      string   `toml:"id" example:"\"deploy\""`
	Label   string   `toml:"label" example:"\"Deploy\""`
	Command []string `toml:"command" example:"[\"/usr/bin/make\", \"deploy\"]"` // argv; command[0] is an absolute path
	Dir     string   `toml:"dir" example:"\"/home/me/src\""`                    // absolute; default $HOME
	Env     []string `toml:"env" example:"[\"PATH\", \"HOME\"]"`                // names passed on from the agent's environment
	Timeout string   `toml:"timeout" example:"\"10m\""`                         // Go duration; default 10m

	timeout time.Duration
}

// Defaults for commands.
var (
	DefaultEnv     = []string{"PATH", "HOME", "LANG", "LC_ALL", "USER", "LOGNAME", "TZ", "XDG_RUNTIME_DIR"}
	DefaultTimeout = 10 * time.Minute
	MaxTimeout     = 24 * time.Hour
	DefaultAlways  = time.Hour
	MaxAlways      = 7 * 24 * time.Hour
)

// demoQuestion is the standing question of an agent with no config file.
var demoQuestion = QuestionConfig{
	Title:     "Deploy the demo to staging?",
	Rationale: "This is the demo question of collie-agent. Write a config file to change it.",
}

// defaultConfig is what the agent shows when it has no configuration file.
func defaultConfig(name string) Config {
	q := demoQuestion
	return Config{Title: "Demo conversation (" + name + ")", Question: &q}
}

// loadConfig reads path; a missing file gives the defaults, and a file with
// unknown keys, bad syntax or a bad value is refused with what to fix.
func loadConfig(path, name string) (Config, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		cfg := defaultConfig(name)
		return cfg, cfg.check(path)
	}
	if err != nil {
		return Config{}, fmt.Errorf("read the config: %w", err)
	}
	cfg := Config{Title: "Questions (" + name + ")"}
	if err := tomlstrict.Decode(data, &cfg); err != nil {
		var ce *tomlstrict.CaseError
		if errors.As(err, &ce) {
			return Config{}, fmt.Errorf("%s, %v; fix the file (see collie-agent(1))", path, ce)
		}
		var te *tomlstrict.TypeError
		if errors.As(err, &te) {
			return Config{}, fmt.Errorf("%s, %v; fix the file (see collie-agent(1))", path, te)
		}
		var sm *toml.StrictMissingError
		if errors.As(err, &sm) && len(sm.Errors) > 0 {
			row, _ := sm.Errors[0].Position()
			return Config{}, fmt.Errorf("%s, line %d: unknown setting %q; fix the file (see collie-agent(1))", path, row, strings.Join(sm.Errors[0].Key(), "."))
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return Config{}, fmt.Errorf("%s, line %d column %d: %s; fix the file or remove it to use the defaults", path, row, col, de.Error())
		}
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	if err := cfg.check(path); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// check validates the whole file and fills in defaults; the first problem
// is returned as a sentence naming the file and the setting.
func (c *Config) check(path string) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%s: %s", path, fmt.Sprintf(format, a...))
	}
	if t, _ := sanitize.Line(c.Title, sanitize.TitleBytes); strings.TrimSpace(t) == "" {
		return bad("title is empty; give the main conversation a title")
	}
	switch c.CallerCheck {
	case "", "on", "off":
	default:
		return bad("CallerCheck = %q; use \"on\" or \"off\"", c.CallerCheck)
	}
	if c.Question != nil && strings.TrimSpace(c.Question.Title) == "" {
		return bad("question.title is empty; give the question a title or remove [question]")
	}
	c.Always.duration = DefaultAlways
	if c.Always.Duration != "" {
		d, err := cli.ParseDuration(c.Always.Duration)
		if err != nil {
			return bad("always.duration = %v", err)
		}
		if d < time.Minute || d > MaxAlways {
			return bad("always.duration = %q; give a duration from 1m to %s, such as \"1h\"", c.Always.Duration, MaxAlways)
		}
		c.Always.duration = d
	}
	if len(c.Belt) > wire.MaxBelt {
		return bad("%d belt buttons; an agent shows at most %d: remove %d", len(c.Belt), wire.MaxBelt, len(c.Belt)-wire.MaxBelt)
	}
	for _, list := range []struct {
		what  string
		cmds  []CommandConfig
		chars int // label limit in characters, or 0
		bytes int
	}{{"belt", c.Belt, sanitize.BeltChars, 0}, {"starter", c.Starters, 0, sanitize.LabelBytes}} {
		seen := map[string]bool{}
		for i := range list.cmds {
			cc := &list.cmds[i]
			where := fmt.Sprintf("%s %d", list.what, i+1)
			if cc.ID != "" {
				where = fmt.Sprintf("%s %q", list.what, cc.ID)
			}
			if !sanitize.ValidID(cc.ID) {
				return bad("%s: id %q is not valid; use 1 to 128 bytes without spaces, '/', '?' or '#'", where, cc.ID)
			}
			if seen[cc.ID] {
				return bad("%s: the id is used twice; give each %s its own id", where, list.what)
			}
			seen[cc.ID] = true
			label, changed := sanitize.Line(cc.Label, 1<<20)
			switch {
			case strings.TrimSpace(label) == "":
				return bad("%s: label is empty; give it a label", where)
			case changed:
				return bad("%s: label contains control or invisible characters; remove them", where)
			case list.chars > 0 && utf8.RuneCountInString(label) > list.chars:
				return bad("%s: label %q has %d characters; a belt button's label has at most %d", where, label, utf8.RuneCountInString(label), list.chars)
			case list.bytes > 0 && len(label) > list.bytes:
				return bad("%s: label is %d bytes; a starter's label has at most %d", where, len(label), list.bytes)
			}
			cc.timeout = DefaultTimeout
			if cc.Timeout != "" {
				d, err := cli.ParseDuration(cc.Timeout)
				if err != nil {
					return bad("%s: timeout = %v", where, err)
				}
				if d <= 0 || d > MaxTimeout {
					return bad("%s: timeout = %q; give a duration above 0 and at most %s, such as \"10m\"", where, cc.Timeout, MaxTimeout)
				}
				cc.timeout = d
			}
			if cc.Env == nil {
				cc.Env = DefaultEnv
			}
			for _, e := range cc.Env {
				if !envName.MatchString(e) {
					return bad("%s: env lists %q, which is not a variable name; list names only, such as \"PATH\"", where, e)
				}
			}
			for _, a := range cc.Command {
				if strings.ContainsRune(a, 0) {
					return bad("%s: the command holds a NUL byte", where)
				}
			}
			spec := runcmd.Spec{Argv: cc.Command, Dir: cc.Dir, Timeout: cc.timeout}
			if err := spec.Check(); err != nil {
				return bad("%s: %v", where, err)
			}
		}
	}
	return nil
}

// spec is the command to run for cc, with the environment built from the
// allow-list and the agent's own variables for `collie ask`.
func (cc CommandConfig) spec(getenv func(string) string, home, agent, socket string) runcmd.Spec {
	env := make([]string, 0, len(cc.Env)+2)
	for _, k := range cc.Env {
		if v := getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	env = append(env, "COLLIE_AGENT="+agent, "COLLIE_AGENT_SOCKET="+socket)
	dir := cc.Dir
	if dir == "" {
		dir = home
	}
	if !filepath.IsAbs(dir) {
		dir = "/"
	}
	return runcmd.Spec{Argv: cc.Command, Dir: dir, Env: env, Timeout: cc.timeout}
}
