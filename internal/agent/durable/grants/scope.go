package grants

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/collie-linux/collie/internal/protocol/sanitize"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// ScopeFor is the "always allow" offer for a tool call: the tool, and the
// first word of its command (the second too when it is a subcommand such
// as "status" in "git status"), for d.
func ScopeFor(t wire.ToolRef, d time.Duration) wire.Scope {
	sc := wire.Scope{Tool: t.Name, CommandPrefix: commandPrefix(t.Command), DurationSeconds: int64(d / time.Second)}
	what := "every " + t.Name + " call"
	if sc.CommandPrefix != "" {
		what = fmt.Sprintf("%s commands starting with %q (without shell operators)", t.Name, sc.CommandPrefix)
	}
	sc.Text = fmt.Sprintf("%s, for %s", what, humanDuration(d))
	sc.Text, _ = sanitize.Line(sc.Text, sanitize.TitleBytes)
	return sc
}

func commandPrefix(cmd string) string {
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return ""
	}
	p := f[0]
	if len(f) > 1 && isSubcommand(f[1]) {
		p += " " + f[1]
	}
	if len(p) > 128 {
		p = p[:128]
	}
	return p
}

func isSubcommand(w string) bool {
	if w == "" || w[0] < 'a' || w[0] > 'z' {
		return false
	}
	for _, c := range w {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// commandMatches reports whether command falls under a grant's prefix: its
// words start with the prefix's words, and it holds nothing a shell would
// use to run a second command or redirect ("git status; rm -rf ~" starts
// with "git status" too).
func commandMatches(prefix, command string) bool {
	if prefix == "" {
		return true
	}
	if strings.ContainsAny(command, ";&|`$<>()\n\r\\") {
		return false
	}
	p, c := strings.Fields(prefix), strings.Fields(command)
	return len(c) >= len(p) && slices.Equal(c[:len(p)], p)
}

// humanDuration says d the way a person would: "1 hour", "90 minutes".
func humanDuration(d time.Duration) string {
	plural := func(n int64, unit string) string {
		if n == 1 {
			return "1 " + unit
		}
		return strconv.FormatInt(n, 10) + " " + unit + "s"
	}
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return plural(int64(d/(24*time.Hour)), "day")
	case d >= time.Hour && d%time.Hour == 0:
		return plural(int64(d/time.Hour), "hour")
	case d >= time.Minute && d%time.Minute == 0:
		return plural(int64(d/time.Minute), "minute")
	}
	return plural(int64(d/time.Second), "second")
}
