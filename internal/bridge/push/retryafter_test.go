package push

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

var raNow = time.Date(2026, 12, 3, 20, 0, 0, 0, time.UTC)

// TestRetryAfter: both forms of Retry-After are read, the date in each of
// its three formats, against the caller's clock; a past date is "now"; a
// huge number is cut without wrapping; anything else is not read.
func TestRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30", 30 * time.Second, true},
		{"0", 0, true},
		{" 120\t", 2 * time.Minute, true},
		{"000000000000000000000000000007", 7 * time.Second, true},
		{"86400", 24 * time.Hour, true},
		{"86401", MaxRetryAfter, true},
		{"99999999999999999999999999999", MaxRetryAfter, true},
		{"Thu, 03 Dec 2026 20:00:45 GMT", 45 * time.Second, true}, // IMF-fixdate
		{"Thursday, 03-Dec-26 20:01:00 GMT", time.Minute, true},   // RFC 850
		{"Thu Dec  3 20:02:00 2026", 2 * time.Minute, true},       // asctime
		{"Thu, 03 Dec 2026 19:59:00 GMT", 0, true},                // past: now
		{"Sat, 01 Jan 2000 00:00:00 GMT", 0, true},                // long past
		{"Fri, 31 Dec 9999 23:59:59 GMT", MaxRetryAfter, true},    // far future: cut
		{"", 0, false},
		{"   ", 0, false},
		{"-5", 0, false},
		{"+5", 0, false},
		{"1.5", 0, false},
		{"5s", 0, false},
		{"0x10", 0, false},
		{"Thu, 03 Dec 2026 20:00:45 +0000", 0, false}, // not an HTTP-date
		{"2026-12-03T20:00:45Z", 0, false},
		{"٣٠", 0, false}, // Arabic-Indic digits are not DIGIT
	} {
		d, ok := RetryAfter(tc.in, raNow)
		if d != tc.want || ok != tc.ok {
			t.Errorf("RetryAfter(%q) = %v, %v; want %v, %v", tc.in, d, ok, tc.want, tc.ok)
		}
	}
}

// FuzzRetryAfter: whatever a server sends, RetryAfter never panics, and
// what it returns is a wait in [0, MaxRetryAfter], 0 when not ok; a run of
// digits is always read as seconds; a date written in each of the three
// formats reads back as the same wait.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"30", "Thu, 03 Dec 2026 20:00:45 GMT", "Thursday, 03-Dec-26 20:01:00 GMT", "Thu Dec  3 20:02:00 2026", "-1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := RetryAfter(s, raNow)
		if d < 0 || d > MaxRetryAfter || (!ok && d != 0) {
			t.Fatalf("RetryAfter(%q) = %v, %v", s, d, ok)
		}
		v := strings.Trim(s, " \t")
		if v != "" && strings.Trim(v, "0123456789") == "" {
			n, err := strconv.ParseInt(v, 10, 64)
			want := MaxRetryAfter
			if err == nil && n < int64(MaxRetryAfter/time.Second) {
				want = time.Duration(n) * time.Second
			}
			if !ok || d != want {
				t.Fatalf("digits %q read as %v, %v; want %v", s, d, ok, want)
			}
		}
		if ok {
			// The wait as a date, in each format, reads back the same
			// (to the second: a date has no finer grain).
			at := raNow.Add(d.Truncate(time.Second))
			for _, layout := range httpDates {
				if at.Year() > 2068 && layout == httpDates[1] {
					continue // a two-digit year cannot say it
				}
				back, ok2 := RetryAfter(at.Format(layout), raNow)
				if !ok2 || back != d.Truncate(time.Second) {
					t.Fatalf("%v as %q reads back as %v, %v", d, at.Format(layout), back, ok2)
				}
			}
		}
	})
}
