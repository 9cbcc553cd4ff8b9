package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/agent/ask"
	"github.com/collie-linux/collie/internal/bridge/audit"
	"github.com/collie-linux/collie/internal/bridge/doctor"
)

// update rewrites the completions from the command table:
//
//	go test ./cmd/collie -run TestCompletionsGenerated -update
//
// (make completions).
var update = flag.Bool("update", false, "write packaging/completions from the command table")

// TestCompletionsGenerated_L4: the completions the package installs are
// generated from the command table, each command's flags as its --help
// gives them, doctor's checks, audit's events and the hook clients: a
// command or flag added to the table is offered once make completions
// has run, and this test fails until it has.
func TestCompletionsGenerated_L4(t *testing.T) {
	cmds := completionModel(t)
	for shell, gen := range map[string]func([]compCmd) string{"bash": genBash, "zsh": genZsh, "fish": genFish} {
		got := gen(cmds)
		if *update {
			if err := writeFileAtomic(completions[shell], []byte(got)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := os.ReadFile(completions[shell])
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != got {
			t.Errorf("%s is not what the command table makes; run make completions and commit the result", completions[shell])
		}
	}
}

func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// compCmd is a command as the completions offer it.
type compCmd struct {
	name    string // "durable attach"
	summary string
	flags   []compFlag
	args    compValue // what its arguments complete to
	subs    []string  // a group word's subcommands (durable: attach detach list)
}

type compFlag struct {
	name, help string
	value      compValue // novalue for a flag without a value
}

// compValue is what a flag's value or an argument completes to.
type compValue struct {
	kind  string   // "" none, "any", "files", "dirs", "vars", "agents", "words", "command"
	words []string // kind "words"
}

// completionModel is the command table with each command's flags from
// its --help (cli.WriteUsage's "  --flag VALUE  what it does").
func completionModel(t *testing.T) []compCmd {
	flagLine := regexp.MustCompile(`(?m)^  --([a-z][a-z-]*)(?: (\S+))?\s{2,}(.*)$`)
	var out []compCmd
	table := commands()
	for _, c := range table {
		cc := compCmd{name: c.name, summary: c.summary}
		_, help, _ := collie(t, append(strings.Fields(c.name), "--help")...)
		for _, m := range flagLine.FindAllStringSubmatch(help, -1) {
			cc.flags = append(cc.flags, compFlag{name: m[1], help: shortHelp(m[3]), value: flagValue(m[1], m[2])})
		}
		cc.args = argValue(c)
		out = append(out, cc)
	}
	// Group words (durable) and words with subcommands (devices): their
	// subcommands, in the table's order.
	for _, c := range table {
		first, sub, ok := strings.Cut(c.name, " ")
		if !ok {
			continue
		}
		i := slices.IndexFunc(out, func(cc compCmd) bool { return cc.name == first })
		if i < 0 { // a word that only groups commands, where its first one stands
			i = slices.IndexFunc(out, func(cc compCmd) bool { return cc.name == c.name })
			out = slices.Insert(out, i, compCmd{name: first, summary: "commands: " + sub})
		} else if len(out[i].subs) == 0 && !strings.HasPrefix(out[i].summary, "commands: ") {
			out[i].summary = strings.TrimSuffix(out[i].summary, ".")
		}
		out[i].subs = append(out[i].subs, sub)
		if strings.HasPrefix(out[i].summary, "commands: ") {
			out[i].summary = "commands: " + strings.Join(out[i].subs, ", ")
		}
	}
	return out
}

// shortHelp is a flag's help for a completion menu: up to its first
// parenthesis or semicolon.
func shortHelp(s string) string {
	if i := strings.IndexAny(s, "(;"); i > 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// flagValue is what flag name's VALUE completes to.
func flagValue(name, value string) compValue {
	switch {
	case value == "":
		return compValue{}
	case name == "check":
		return compValue{kind: "words", words: doctor.Names()}
	case name == "event":
		return compValue{kind: "words", words: audit.Events}
	case name == "hook":
		var names []string
		for _, h := range ask.HookClients() {
			if h.HasHook() {
				names = append(names, h.Name)
			}
		}
		return compValue{kind: "words", words: names}
	case name == "agent":
		return compValue{kind: "agents"}
	case value == "PATH" || value == "FILE":
		return compValue{kind: "files"}
	case value == "DIR":
		return compValue{kind: "dirs"}
	case value == "VAR":
		return compValue{kind: "vars"}
	}
	return compValue{kind: "any"}
}

// argValue is what command c's arguments complete to, from its synopsis:
// a first word of the form a|b|c is one of those words; an agent's NAME
// to detach is an attached agent; FILE... files; -- COMMAND a command.
func argValue(c command) compValue {
	syn := strings.Join(c.synopsis, " ")
	fields := strings.Fields(syn)
	switch {
	case len(fields) > 0 && strings.Contains(fields[0], "|") && !strings.HasPrefix(fields[0], "-") && !strings.HasPrefix(fields[0], "["):
		return compValue{kind: "words", words: strings.Split(fields[0], "|")}
	case c.name == "durable detach":
		return compValue{kind: "agents"}
	case strings.Contains(syn, "FILE..."):
		return compValue{kind: "files"}
	case strings.Contains(syn, "-- COMMAND"):
		return compValue{kind: "command"}
	}
	return compValue{}
}

func flagNames(fs []compFlag) string {
	var names []string
	for _, f := range fs {
		names = append(names, "--"+f.name)
	}
	return strings.Join(names, " ")
}

func topWords(cmds []compCmd) []string {
	var w []string
	for _, c := range cmds {
		if !strings.Contains(c.name, " ") {
			w = append(w, c.name)
		}
	}
	return w
}

const agentsFromSources = `sed -n 's/^ *"name": *"\([^"]*\)".*/\1/p'`

// genBash is collie.bash.
func genBash(cmds []compCmd) string {
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# bash completion for collie(1)                            -*- shell-script -*-\n")
	p("# Generated from collie's command table: make completions. Do not edit.\n\n")
	p("_collie_agents()\n{\n    # Names of the attached agents, from sources.json; no daemon needed.\n")
	p("    local f=${XDG_CONFIG_HOME:-$HOME/.config}/collie/sources.json\n    [[ -r $f ]] && %s \"$f\"\n}\n\n", agentsFromSources)
	p("_collie()\n{\n    local cur prev words cword\n    _init_completion || return\n\n")
	p("    if ((cword == 1)); then\n        COMPREPLY=($(compgen -W %q -- \"$cur\"))\n        return\n    fi\n\n", strings.Join(topWords(cmds), " "))
	p("    local cmd=${words[1]} first=2\n")
	p("    if ((cword > 2)); then\n        case \"${words[1]} ${words[2]}\" in\n")
	var twos []string
	for _, c := range cmds {
		if strings.Contains(c.name, " ") {
			twos = append(twos, fmt.Sprintf("%q", c.name))
		}
	}
	p("            %s)\n                cmd=\"${words[1]} ${words[2]}\" first=3\n                ;;\n        esac\n    fi\n\n", strings.Join(twos, " | "))
	p("    case $cmd in\n")
	for _, c := range cmds {
		p("        %q)\n", c.name)
		var cases []string
		for _, f := range c.flags {
			if act := bashValue(f.value); f.value.kind != "" {
				cases = append(cases, fmt.Sprintf("                --%s)\n                    %s\n                    return\n                    ;;\n", f.name, act))
			}
		}
		if len(cases) > 0 {
			p("            case $prev in\n%s            esac\n", strings.Join(cases, ""))
		}
		words := flagNames(c.flags)
		if len(c.subs) > 0 {
			p("            if ((cword == first)); then\n                COMPREPLY=($(compgen -W %q -- \"$cur\"))\n                return\n            fi\n", strings.TrimSpace(strings.Join(c.subs, " ")+" "+words))
		}
		switch c.args.kind {
		case "words":
			words = strings.TrimSpace(strings.Join(c.args.words, " ") + " " + words)
		case "agents":
			words = strings.TrimSpace("$(_collie_agents) " + words)
		case "command":
			p("            local i\n            for ((i = first; i < cword; i++)); do\n                if [[ ${words[i]} == -- ]]; then\n                    _command_offset $((i + 1))\n                    return\n                fi\n            done\n")
		}
		if words != "" {
			p("            COMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))\n", words)
		}
		if c.args.kind == "files" {
			p("            _filedir\n")
		}
		p("            ;;\n")
	}
	p("    esac\n} &&\n    complete -F _collie collie\n\n# ex: filetype=sh\n")
	return b.String()
}

func bashValue(v compValue) string {
	switch v.kind {
	case "files":
		return "_filedir"
	case "dirs":
		return "_filedir -d"
	case "vars":
		return `COMPREPLY=($(compgen -v -- "$cur"))`
	case "agents":
		return `COMPREPLY=($(compgen -W "$(_collie_agents)" -- "$cur"))`
	case "words":
		return fmt.Sprintf(`COMPREPLY=($(compgen -W %q -- "$cur"))`, strings.Join(v.words, " "))
	}
	return ":"
}

// zq is s inside a single-quoted zsh _arguments spec or _describe
// entry: its quotes closed and reopened, brackets and colons, which
// the spec reads, as parentheses and a comma.
func zq(s string) string {
	return strings.NewReplacer("'", `'\''`, "[", "(", "]", ")", ":", ",").Replace(s)
}

func zshValue(v compValue) string {
	switch v.kind {
	case "files":
		return "_files"
	case "dirs":
		return "_files -/"
	case "vars":
		return "_parameters"
	case "agents":
		return "_collie_agents"
	case "words":
		return "(" + strings.Join(v.words, " ") + ")"
	case "command":
		return "_normal"
	}
	return " "
}

// genZsh is _collie.
func genZsh(cmds []compCmd) string {
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("#compdef collie\n# zsh completion for collie(1)\n# Generated from collie's command table: make completions. Do not edit.\n\n")
	p("_collie_agents() {\n  local f=${XDG_CONFIG_HOME:-$HOME/.config}/collie/sources.json\n  local -a names\n")
	p("  [[ -r $f ]] && names=(${(f)\"$(%s $f)\"})\n  _describe -t agents 'attached agent' names\n}\n\n", agentsFromSources)
	p("_collie() {\n  local curcontext=$curcontext state line\n  local -a cmds\n  cmds=(\n")
	for _, c := range cmds {
		if !strings.Contains(c.name, " ") {
			p("    '%s:%s'\n", c.name, zq(c.summary))
		}
	}
	p("  )\n  _arguments -C '1:command:->cmd' '*::arg:->args'\n  case $state in\n    cmd) _describe -t commands 'collie command' cmds; return ;;\n  esac\n")
	p("  local cmd=$line[1]\n  if (( CURRENT > 2 )); then\n    case \"$line[1] $line[2]\" in\n")
	var twos []string
	for _, c := range cmds {
		if strings.Contains(c.name, " ") {
			twos = append(twos, "'"+c.name+"'")
		}
	}
	p("      %s) cmd=\"$line[1] $line[2]\"; shift words; (( CURRENT-- )) ;;\n    esac\n  fi\n", strings.Join(twos, "|"))
	p("  case $cmd in\n")
	for _, c := range cmds {
		var specs []string
		for _, f := range c.flags {
			s := fmt.Sprintf("'--%s[%s]", f.name, zq(f.help))
			if f.value.kind != "" {
				s += ":" + strings.ToLower(f.name) + ":" + zshValue(f.value)
			}
			specs = append(specs, s+"'")
		}
		switch {
		case len(c.subs) > 0:
			specs = append(specs, "'1:subcommand:("+strings.Join(c.subs, " ")+")'")
		case c.args.kind == "command":
			specs = append(specs, "'*::command:_normal'")
		case c.args.kind == "files":
			specs = append(specs, "'*:file:_files'")
		case c.args.kind != "":
			specs = append(specs, "'1:argument:"+zshValue(c.args)+"'")
		}
		if len(specs) == 0 {
			p("    '%s') ;;\n", c.name)
			continue
		}
		p("    '%s')\n      _arguments \\\n        %s ;;\n", c.name, strings.Join(specs, " \\\n        "))
	}
	p("  esac\n}\n\n_collie \"$@\"\n")
	return b.String()
}

// fq quotes s for fish in single quotes.
func fq(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}

// genFish is collie.fish.
func genFish(cmds []compCmd) string {
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# fish completion for collie(1)\n# Generated from collie's command table: make completions. Do not edit.\n\n")
	p("function __collie_agents\n    set -l f (set -q XDG_CONFIG_HOME; and echo $XDG_CONFIG_HOME; or echo $HOME/.config)/collie/sources.json\n")
	p("    test -r $f; and %s $f\nend\n\n", agentsFromSources)
	p("# __collie_is CMD: the command line so far runs collie CMD (one word or two).\n")
	p("function __collie_is\n    set -l w (commandline -opc)\n    set -e w[1]\n    set -l args\n    for a in $w\n        string match -q -- '-*' $a; or set -a args $a\n    end\n")
	p("    test (count $argv) -le (count $args); or return 1\n    for i in (seq (count $argv))\n        test \"$argv[$i]\" = \"$args[$i]\"; or return 1\n    end\n")
	p("    # collie devices is not collie devices revoke\n    test (count $argv) -eq 1; and contains -- \"$argv[1] $args[2]\" $__collie_twos; and return 1\n    return 0\nend\n\n")
	var twos []string
	for _, c := range cmds {
		if strings.Contains(c.name, " ") {
			twos = append(twos, fq(c.name))
		}
	}
	p("set -g __collie_twos %s\n", strings.Join(twos, " "))
	p("complete -c collie -f\n")
	top := strings.Join(topWords(cmds), " ")
	for _, c := range cmds {
		if !strings.Contains(c.name, " ") {
			p("complete -c collie -n \"not __fish_seen_subcommand_from %s\" -a %s -d %s\n", top, c.name, fq(c.summary))
		}
	}
	for _, c := range cmds {
		cond := fq("__collie_is " + c.name)
		p("\n")
		for _, f := range c.flags {
			line := fmt.Sprintf("complete -c collie -n %s -l %s", cond, f.name)
			switch f.value.kind {
			case "":
			case "files":
				line += " -r -F"
			case "dirs":
				line += " -r -a '(__fish_complete_directories)'"
			case "vars":
				line += " -x -a '(set -n)'"
			case "agents":
				line += " -x -a '(__collie_agents)'"
			case "words":
				line += " -x -a " + fq(strings.Join(f.value.words, " "))
			default:
				line += " -x"
			}
			p("%s -d %s\n", line, fq(f.help))
		}
		if len(c.subs) > 0 {
			p("complete -c collie -n %s -a %s\n", cond, fq(strings.Join(c.subs, " ")))
		}
		switch c.args.kind {
		case "words":
			p("complete -c collie -n %s -a %s\n", cond, fq(strings.Join(c.args.words, " ")))
		case "agents":
			p("complete -c collie -n %s -a '(__collie_agents)'\n", cond)
		case "files", "command":
			p("complete -c collie -n %s -F\n", cond)
		}
	}
	return b.String()
}
