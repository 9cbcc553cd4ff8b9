package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/cli/hint"
)

func flags() (*flag.FlagSet, *string, *bool) {
	fs := flag.NewFlagSet("collie durable attach", flag.ContinueOnError)
	socket := fs.String("socket", "", "the agent's Unix socket `path`")
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Duration("timeout", 0, "wait `DURATION`")
	fs.String("agent", "demo", "the agent's `name`")
	return fs, socket, asJSON
}

// TestParse_L4: flags and positional arguments in any order, "--" ends
// the flags, help is flag.ErrHelp after the usage, and a bad flag is a
// UsageError naming it as --flag.
func TestParse_L4(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    []string
		pos     []string
		socket  string
		err     string
		help    bool
		isUsage bool
	}{
		{name: "name_first", args: []string{"demo", "--socket", "/s"}, pos: []string{"demo"}, socket: "/s"},
		{name: "name_last", args: []string{"--socket", "/s", "demo"}, pos: []string{"demo"}, socket: "/s"},
		{name: "name_between", args: []string{"--json", "demo", "-socket=/s", "x"}, pos: []string{"demo", "x"}, socket: "/s"},
		{name: "dashdash", args: []string{"--socket", "/s", "--", "--json", "-x"}, pos: []string{"--json", "-x"}, socket: "/s"},
		{name: "help_long", args: []string{"demo", "--help"}, help: true},
		{name: "help_short", args: []string{"-h"}, help: true},
		{name: "unknown", args: []string{"--nope"}, err: "flag provided but not defined: --nope", isUsage: true},
		{name: "unknown_single_dash", args: []string{"-nope"}, err: "flag provided but not defined: --nope", isUsage: true},
		{name: "no_value", args: []string{"--socket"}, err: "flag needs an argument: --socket", isUsage: true},
		{name: "bad_value", args: []string{"--timeout", "soon"}, err: `--timeout "soon" is not a duration: give a number with its unit, such as 30s, 10m or 1h30m`, isUsage: true},
		{name: "bad_bool", args: []string{"--json=maybe"}, err: `invalid boolean value "maybe" for --json: parse error`, isUsage: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fs, socket, _ := flags()
			helped := false
			pos, err := Parse(fs, tt.args, func() { helped = true })
			switch {
			case tt.help:
				if !errors.Is(err, flag.ErrHelp) || !helped {
					t.Fatalf("err %v, helped %v; want flag.ErrHelp after help", err, helped)
				}
			case tt.err != "":
				if err == nil || err.Error() != tt.err || IsUsage(err) != tt.isUsage {
					t.Fatalf("err %v; want usage error %q", err, tt.err)
				}
			default:
				if err != nil || strings.Join(pos, " ") != strings.Join(tt.pos, " ") || *socket != tt.socket {
					t.Fatalf("pos %q socket %q err %v; want %q %q", pos, *socket, err, tt.pos, tt.socket)
				}
			}
		})
	}
}

// TestWriteUsage_L4: usage names every flag as --flag VALUE, as the man
// pages do, never -flag.
func TestWriteUsage_L4(t *testing.T) {
	fs, _, _ := flags()
	var b bytes.Buffer
	WriteUsage(&b, []string{"collie durable attach NAME --socket PATH", "collie durable attach NAME --url URL"}, "Attach an agent.", fs)
	out := b.String()
	for _, want := range []string{
		"Usage: collie durable attach NAME --socket PATH\n       collie durable attach NAME --url URL\n\nAttach an agent.\n\nFlags:\n",
		"  --socket PATH ", "  --json ", "  --timeout DURATION ", "the agent's name (default demo)", "  -h, --help ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("usage lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "-") && !strings.HasPrefix(f[0], "--") && f[0] != "-h," {
			t.Errorf("a flag in -flag form: %q", line)
		}
	}
}

// TestWriteError_L4: age's two lines, or one JSON object; a plain error
// has no hint line and no hint field.
func TestWriteError_L4(t *testing.T) {
	withHint := hint.New("1 check failed", "run the fix shown under it, then collie doctor again")
	for _, tt := range []struct {
		name   string
		err    error
		json   bool
		exit   int
		want   string
		report *Report
	}{
		{name: "text_hint", err: withHint, exit: 1, want: "collie: error: 1 check failed\ncollie: hint: run the fix shown under it, then collie doctor again\n"},
		{name: "text_plain", err: errors.New("boom"), exit: 1, want: "collie: error: boom\n"},
		{name: "text_control_chars", err: errors.New("bad \x1b]0;pwned\x07 name\nforged"), exit: 1},
		{name: "json_hint", err: withHint, exit: 1, json: true, report: &Report{Error: "1 check failed", Hint: "run the fix shown under it, then collie doctor again", Exit: 1}},
		{name: "json_plain", err: Usagef("unexpected argument %q", "x"), exit: 2, json: true, report: &Report{Error: `unexpected argument "x"`, Exit: 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			WriteError(&b, "collie", tt.err, tt.exit, tt.json)
			out := b.String()
			if tt.want != "" && out != tt.want {
				t.Errorf("got %q; want %q", out, tt.want)
			}
			if strings.ContainsAny(out, "\x1b\x07") || strings.Count(out, "\n") != 1+btoi(!tt.json && hint.Of(tt.err) != "") {
				t.Errorf("not one clean line per part: %q", out)
			}
			if tt.report != nil {
				var got Report
				if err := json.Unmarshal(b.Bytes(), &got); err != nil || got != *tt.report {
					t.Errorf("got %q (%v); want %+v", out, err, *tt.report)
				}
				if tt.report.Hint == "" && strings.Contains(out, "hint") {
					t.Errorf("an empty hint is written: %q", out)
				}
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestText(t *testing.T) {
	if got := Text(hint.New("a", "b")); got != "a; b" {
		t.Errorf("Text = %q", got)
	}
	if got := Text(errors.New("a")); got != "a" {
		t.Errorf("Text = %q", got)
	}
}

func TestWantsJSON(t *testing.T) {
	fs, _, _ := flags()
	fs.Parse([]string{"--json"})
	if !WantsJSON(fs, nil) {
		t.Error("--json parsed is not JSON")
	}
	fs, _, _ = flags()
	if !WantsJSON(fs, []string{"--nope", "--json"}) || WantsJSON(fs, []string{"--", "--json"}) || WantsJSON(fs, []string{"x"}) {
		t.Error("WantsJSON from args is wrong")
	}
}
