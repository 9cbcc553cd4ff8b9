package push

import (
	"strings"
	"time"
)

// MaxRetryAfter is the longest wait RetryAfter gives: a longer one is cut
// to it. The dispatcher gives up on a wait longer than its own bound, so
// the cut only keeps the arithmetic whole.
const MaxRetryAfter = 24 * time.Hour

// The three forms of an HTTP-date (RFC 9110 §5.6.7): the preferred one
// and the two obsolete ones a recipient must still read.
var httpDates = []string{
	"Mon, 02 Jan 2006 15:04:05 GMT",  // IMF-fixdate
	"Monday, 02-Jan-06 15:04:05 GMT", // RFC 850
	"Mon Jan _2 15:04:05 2006",       // asctime
}

// RetryAfter reads an HTTP Retry-After header value (RFC 9110 §10.2.3):
// either a number of seconds or an HTTP-date, which is read against now.
// It returns how long to wait, at most MaxRetryAfter; a date already past
// is 0 (try now). ok is false for a value that is neither form (an empty
// one, a negative or fractional number, a date in another format): the
// caller then waits as it would without the header.
func RetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.Trim(v, " \t")
	if v == "" {
		return 0, false
	}
	if secs, ok := delaySeconds(v); ok {
		return secs, true
	}
	for _, layout := range httpDates {
		t, err := time.Parse(layout, v)
		if err != nil {
			continue
		}
		d := t.Sub(now) // saturates rather than wraps
		return min(max(d, 0), MaxRetryAfter), true
	}
	return 0, false
}

// delaySeconds reads 1*DIGIT as seconds, saturating at MaxRetryAfter.
func delaySeconds(v string) (time.Duration, bool) {
	const most = int64(MaxRetryAfter / time.Second)
	var n int64
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n <= most { // past most it stays past most: no overflow
			n = n*10 + int64(c-'0')
		}
	}
	return time.Duration(min(n, most)) * time.Second, true
}
