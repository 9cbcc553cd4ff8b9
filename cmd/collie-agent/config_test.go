package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadConfig(t *testing.T) {
	belt := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString("[[belt]]\nid = \"b" + string(rune('0'+i)) + "\"\nlabel = \"B\"\ncommand = [\"/bin/true\"]\n")
		}
		return b.String()
	}
	tests := []struct {
		name    string
		content string // "" means no file
		wantErr string
	}{
		{name: "missing_file_gives_defaults"},
		{name: "good", content: "title = \"Ops\"\n[question]\ntitle = \"Restart nginx?\"\nrationale = \"It is stuck.\"\n"},
		{name: "D2_four_belt_buttons", content: belt(4)},
		{name: "D2_fifth_belt_button", content: belt(5), wantErr: "5 belt buttons; an agent shows at most 4 (D2): remove 1"},
		{name: "relative_command", content: "[[starter]]\nid = \"t\"\nlabel = \"T\"\ncommand = [\"make\", \"test\"]\n", wantErr: `starter "t": the command "make" is not an absolute path; give the full path, such as /usr/bin/make`},
		{name: "empty_command", content: "[[belt]]\nid = \"t\"\nlabel = \"T\"\ncommand = []\n", wantErr: "the command is empty"},
		{name: "relative_dir", content: "[[belt]]\nid = \"t\"\nlabel = \"T\"\ncommand = [\"/bin/true\"]\ndir = \"src\"\n", wantErr: "working directory \"src\" is not an absolute path"},
		{name: "bad_timeout", content: "[[belt]]\nid = \"t\"\nlabel = \"T\"\ncommand = [\"/bin/true\"]\ntimeout = \"forever\"\n", wantErr: `timeout = "forever" is not a duration: give a number with its unit, such as 30s, 10m or 1h30m`},
		{name: "L4_timeout_without_unit", content: "[[belt]]\nid = \"t\"\nlabel = \"T\"\ncommand = [\"/bin/true\"]\ntimeout = \"5\"\n", wantErr: `timeout = "5" is not a duration: give a number with its unit, such as 30s, 10m or 1h30m`},
		{name: "L4_always_duration_without_unit", content: "[always]\nenabled = true\nduration = \"90\"\n", wantErr: `always.duration = "90" is not a duration: give a number with its unit, such as 30s, 10m or 1h30m`},
		{name: "bad_env_name", content: "[[belt]]\nid = \"t\"\nlabel = \"T\"\ncommand = [\"/bin/true\"]\nenv = [\"PATH=/tmp\"]\n", wantErr: "list names only"},
		{name: "X4_belt_label_over_16_chars", content: "[[belt]]\nid = \"t\"\nlabel = \"Restart the web server\"\ncommand = [\"/bin/true\"]\n", wantErr: "at most 16"},
		{name: "X5_bad_id", content: "[[belt]]\nid = \"a b\"\nlabel = \"T\"\ncommand = [\"/bin/true\"]\n", wantErr: "is not valid"},
		{name: "repeated_id", content: "[[starter]]\nid = \"a\"\nlabel = \"A\"\ncommand = [\"/bin/true\"]\n[[starter]]\nid = \"a\"\nlabel = \"B\"\ncommand = [\"/bin/true\"]\n", wantErr: "used twice"},
		{name: "C3_caller_check_value", content: "CallerCheck = \"maybe\"\n", wantErr: `CallerCheck = "maybe"; use "on" or "off"`},
		{name: "always_duration", content: "[always]\nenabled = true\nduration = \"30d\"\n", wantErr: "always.duration"},
		{name: "unknown_key", content: "title = \"x\"\ncolour = \"red\"\n", wantErr: "unknown setting"},
		{name: "bad_syntax", content: "title = \n", wantErr: "line 1"},
		{name: "empty_question_title", content: "[question]\ntitle = \"\"\n", wantErr: "question.title is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "demo.toml")
			if tt.content != "" {
				os.WriteFile(path, []byte(tt.content), 0o600)
			}
			_, err := loadConfig(path, "demo")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), path) {
					t.Fatalf("err = %v, want it to name %s and say %q", err, path, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	cfg, err := loadConfig(filepath.Join(t.TempDir(), "none.toml"), "demo")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Question == nil || cfg.Question.Title != "Deploy the demo to staging?" || cfg.CallerCheck != "" || cfg.Always.Enabled {
		t.Fatalf("defaults = %+v", cfg)
	}
}

func TestExampleConfigParses(t *testing.T) {
	cfg, err := loadConfig("testdata/example.toml", "demo")
	if err != nil {
		t.Fatalf("the documented example config does not load: %v", err)
	}
	if len(cfg.Belt) != 2 || len(cfg.Starters) != 1 || !cfg.Always.Enabled || cfg.Always.duration != time.Hour {
		t.Fatalf("example = %+v", cfg)
	}
	if cfg.Belt[0].timeout != 30*time.Second || cfg.Starters[0].timeout != 30*time.Minute {
		t.Fatalf("timeouts %v %v", cfg.Belt[0].timeout, cfg.Starters[0].timeout)
	}
}

func TestCommandSpec(t *testing.T) {
	cc := CommandConfig{Command: []string{"/usr/bin/env"}, Env: []string{"PATH", "MISSING"}, timeout: time.Minute}
	env := map[string]string{"PATH": "/usr/bin", "SECRET": "x"}
	s := cc.spec(func(k string) string { return env[k] }, "/home/me", "demo", "/run/user/1/desk/demo.sock")
	got := strings.Join(s.Env, " ")
	if got != "PATH=/usr/bin COLLIE_AGENT=demo COLLIE_AGENT_SOCKET=/run/user/1/desk/demo.sock" {
		t.Fatalf("D8: env = %s", got)
	}
	if s.Dir != "/home/me" {
		t.Fatalf("dir = %s", s.Dir)
	}
}

func TestShellQuote(t *testing.T) {
	if got := shellQuote([]string{"/bin/sh", "-c", "echo 'hi' | wc"}); got != `/bin/sh -c 'echo '\''hi'\'' | wc'` {
		t.Fatal(got)
	}
}

func TestRunRefusesBadName(t *testing.T) {
	var out, errOut strings.Builder
	if code := run([]string{"--name", "../etc"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "is not valid") {
		t.Fatalf("code %d, stderr %q", code, errOut.String())
	}
}

func TestCheckConfigFlag(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("[[belt]]\nid = \"x\"\nlabel = \"X\"\ncommand = [\"rm\"]\n"), 0o600)
	var out, errOut strings.Builder
	if code := run([]string{"--check-config", "--config", bad}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "not an absolute path") {
		t.Fatalf("code %d, stderr %q", code, errOut.String())
	}
	out.Reset()
	if code := run([]string{"--check-config", "--config", "testdata/example.toml"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "is valid") {
		t.Fatalf("code %d, out %q", code, out.String())
	}
}
