package wire

import (
	"strconv"
	"testing"
)

func TestParseWait(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"1", 1, true},
		{"30", 30, true},
		{"60", 60, true},
		{"61", MaxWait, true},
		{"007", 7, true},
		{"99999999999999", MaxWait, true},
		{"", 0, false},
		{"0", 0, false},
		{"000", 0, false},
		{"-1", 0, false},
		{"+5", 0, false},
		{" 5", 0, false},
		{"5 ", 0, false},
		{"1.5", 0, false},
		{"5s", 0, false},
		{"99999999999999999", 0, false}, // longer than any sane number
		{"\u0665", 0, false},            // a digit, but not an ASCII one
	} {
		got, ok := ParseWait(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseWait(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzParseWait: a wait is either refused or 1 to MaxWait seconds, and any
// number it accepts is what strconv reads, capped.
func FuzzParseWait(f *testing.F) {
	for _, s := range []string{"30", "60", "61", "0", "", "-1", "1.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		n, ok := ParseWait(v)
		if !ok {
			if n != 0 {
				t.Fatalf("ParseWait(%q) refused but gave %d", v, n)
			}
			return
		}
		if n < 1 || n > MaxWait {
			t.Fatalf("ParseWait(%q) = %d, outside 1..%d", v, n, MaxWait)
		}
		for i := 0; i < len(v); i++ {
			if v[i] < '0' || v[i] > '9' {
				t.Fatalf("ParseWait(%q) accepted a non-digit", v)
			}
		}
		if u, err := strconv.ParseUint(v, 10, 64); err == nil && int(min(u, MaxWait)) != n {
			t.Fatalf("ParseWait(%q) = %d, strconv reads %d", v, n, u)
		}
	})
}
