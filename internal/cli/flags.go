package cli

import (
	"flag"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// Strings is a flag that may be given more than once; each value is kept,
// in order: doctor's --check NAME --check NAME.
type Strings []string

// String implements flag.Value.
func (s *Strings) String() string { return strings.Join(*s, ",") }

// Set implements flag.Value: it adds one value.
func (s *Strings) Set(v string) error { *s = append(*s, v); return nil }

// Get implements flag.Getter; a slice says the flag is repeatable.
func (s *Strings) Get() any { return []string(*s) }

// DurationForm is the form every duration on the command line and in a
// config file takes, as the sentence that tells a user how to write one.
const DurationForm = "give a number with its unit, such as 30s, 10m or 1h30m"

// ParseDuration reads a duration as the command line and the config files
// take it (Go's form: 30s, 10m, 1h30m). A number without a unit, or
// anything else that is not a duration, is an error that says the form
// with examples.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: %s", s, DurationForm)
	}
	return d, nil
}

// isDuration reports whether f takes a duration (flag.Duration or
// fs.DurationVar).
func isDuration(f *flag.Flag) bool {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return false
	}
	_, ok = g.Get().(time.Duration)
	return ok
}

// isBool reports whether f is a flag without a value (--json).
func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// repeatable reports whether f may be given more than once: a list
// (Strings, or a Getter whose value is a slice), or a flag.Value of its
// own without Get, which decides for itself what a second value means
// (collie ask's --choice). The flag package's own flags keep only the
// last value given, so a second one would silently undo the first.
func repeatable(f *flag.Flag) bool {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return true
	}
	v := g.Get()
	return v != nil && reflect.TypeOf(v).Kind() == reflect.Slice
}

// checkRepeats refuses a flag given twice that keeps only one value
// ("--check config --check daemon" would run the last check only). Flags
// without a value (--json) may be given twice: they mean the same thing.
func checkRepeats(fs *flag.FlagSet, args []string) error {
	seen := map[string]bool{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return nil
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := fs.Lookup(name)
		if f == nil {
			continue // Parse says it is unknown
		}
		if isBool(f) {
			continue
		}
		if !hasValue {
			i++ // the value is the next argument
		}
		if seen[name] && !repeatable(f) {
			return fmt.Errorf("--%s is given more than once, and it takes one value; give it once", name)
		}
		seen[name] = true
	}
	return nil
}

// explain makes the flag package's error for a flag a sentence that says
// what to do: an unknown flag gets "did you mean", a duration that does
// not parse the form with examples.
func explain(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		name = strings.TrimLeft(name, "-")
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if s := Suggest(name, names); s != "" {
			return fmt.Errorf("flag provided but not defined: --%s; did you mean --%s?", name, s)
		}
		return flagError(err)
	}
	// invalid value "5" for flag -timeout: parse error
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		if i := strings.Index(rest, " for flag -"); i >= 0 {
			name, _, _ := strings.Cut(strings.TrimLeft(rest[i+len(" for flag -"):], "-"), ":")
			if f := fs.Lookup(name); f != nil && isDuration(f) {
				return fmt.Errorf("--%s %s is not a duration: %s", name, rest[:i], DurationForm)
			}
		}
	}
	return flagError(err)
}

// Suggest returns the word of words nearest to w when it is near enough to
// be what was meant (a typo: at most a third of its letters wrong, and no
// more than 2), else "". Ties go to the earlier word.
func Suggest(w string, words []string) string {
	best, bestD := "", 0
	limit := min(2, max(1, len(w)/3))
	for _, c := range words {
		d := distance(strings.ToLower(w), strings.ToLower(c))
		if d <= limit && (best == "" || d < bestD) {
			best, bestD = c, d
		}
	}
	return best
}

// distance is the edit distance between a and b (insertions, deletions,
// substitutions and swaps of two neighbours, each 1), over bytes.
func distance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
