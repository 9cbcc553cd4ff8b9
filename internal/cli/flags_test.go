package cli

import (
	"flag"
	"strings"
	"testing"
	"time"
)

// TestParse_DurationSaysTheForm_L4: every duration flag that does not
// parse says the accepted form with examples, never the flag package's
// bare "parse error".
func TestParse_DurationSaysTheForm_L4(t *testing.T) {
	for _, arg := range [][]string{{"--timeout", "5"}, {"--timeout=5"}, {"-timeout", "ten minutes"}, {"--wait", "1x"}} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.Duration("timeout", 0, "")
		var d time.Duration
		fs.DurationVar(&d, "wait", 0, "")
		_, err := Parse(fs, arg, func() {})
		if err == nil || !IsUsage(err) || strings.Contains(err.Error(), "parse error") ||
			!strings.Contains(err.Error(), "is not a duration: give a number with its unit, such as 30s, 10m or 1h30m") {
			t.Errorf("%q: err %v; want the form with examples", arg, err)
		}
	}
}

// TestParseDuration_L4: the one parser of durations for the command line
// and the config files.
func TestParseDuration_L4(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"30s", 30 * time.Second, false}, {"10m", 10 * time.Minute, false}, {"1h30m", 90 * time.Minute, false},
		{" 2m ", 2 * time.Minute, false}, {"5", 0, true}, {"", 0, true}, {"soon", 0, true}, {"1d", 0, true},
	} {
		d, err := ParseDuration(tt.in)
		if (err != nil) != tt.err || d != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v", tt.in, d, err)
		}
		if err != nil && !strings.Contains(err.Error(), "such as 30s, 10m or 1h30m") {
			t.Errorf("ParseDuration(%q): %v; want the form with examples", tt.in, err)
		}
	}
}

// TestParse_RepeatedFlag_L4: a flag that keeps one value, given twice, is
// refused (the flag package would keep the last silently, and "--check
// config --check daemon" would run one check); a list keeps every value;
// a flag without a value may be given twice.
func TestParse_RepeatedFlag_L4(t *testing.T) {
	for _, tt := range []struct {
		name  string
		args  []string
		err   string
		check []string
	}{
		{name: "list", args: []string{"--check", "config", "x", "--check=daemon"}, check: []string{"config", "daemon"}},
		{name: "single_twice", args: []string{"--socket", "/a", "--socket", "/b"}, err: "--socket is given more than once, and it takes one value; give it once"},
		{name: "single_twice_equals", args: []string{"-socket=/a", "--socket=/b"}, err: "--socket is given more than once"},
		{name: "duration_twice", args: []string{"--timeout", "1s", "--timeout", "2s"}, err: "--timeout is given more than once"},
		{name: "bool_twice", args: []string{"--json", "--json"}},
		{name: "value_looks_like_flag", args: []string{"--socket", "--socket"}},
		{name: "after_dashdash", args: []string{"--socket", "/a", "--", "--socket", "/b"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fs, _, _ := flags()
			var check Strings
			fs.Var(&check, "check", "")
			_, err := Parse(fs, tt.args, func() {})
			switch {
			case tt.err != "":
				if err == nil || !IsUsage(err) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v; want %q", err, tt.err)
				}
			case err != nil:
				t.Fatalf("err %v", err)
			case strings.Join(check, ",") != strings.Join(tt.check, ","):
				t.Fatalf("--check %q; want %q", check, tt.check)
			}
		})
	}
}

// TestParse_UnknownFlagDidYouMean_L4: an unknown flag near a known one
// says which was meant; one near none says nothing more.
func TestParse_UnknownFlagDidYouMean_L4(t *testing.T) {
	for _, tt := range []struct{ arg, want string }{
		{"--jsn", "flag provided but not defined: --jsn; did you mean --json?"},
		{"--sokcet=/x", "flag provided but not defined: --sokcet; did you mean --socket?"},
		{"-tiemout", "flag provided but not defined: --tiemout; did you mean --timeout?"},
		{"--zzzzzz", "flag provided but not defined: --zzzzzz"},
	} {
		fs, _, _ := flags()
		_, err := Parse(fs, []string{tt.arg}, func() {})
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: err %v; want %q", tt.arg, err, tt.want)
		}
	}
}

// TestSuggest_L4: the nearest word by edit distance, only when near.
func TestSuggest_L4(t *testing.T) {
	words := []string{"show", "doctor", "durable", "devices", "pair", "audit", "version"}
	for _, tt := range []struct{ in, want string }{
		{"shwo", "show"}, {"shw", "show"}, {"doctr", "doctor"}, {"docter", "doctor"}, {"Devices", "devices"},
		{"pari", "pair"}, {"x", ""}, {"nothinglike", ""}, {"versoin", "version"}, {"", ""},
	} {
		if got := Suggest(tt.in, words); got != tt.want {
			t.Errorf("Suggest(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}
