package wire

// Waiting reads. The hello and snapshot schemas are closed, so
// the capability travels in headers, never in the JSON:
//
//   - The bridge sends GET /v1/snapshot with If-None-Match and
//     "Collie-Wait: <seconds>" (1 to MaxWait).
//   - An agent that knows the header holds the request until its ETag
//     differs from If-None-Match, then answers 200 with the new snapshot at
//     once, or answers 304 when the wait ends. It marks either answer with
//     "Collie-Waited: <seconds>", the wait it applied (it may apply less than
//     asked, never more than MaxWait). A request whose ETag is already stale
//     is answered 200 at once, marked.
//   - An agent that does not know the header ignores it and answers at once,
//     unmarked; the bridge then polls it at the seed's cadence (K8).
const (
	WaitHeader   = "Collie-Wait"
	WaitedHeader = "Collie-Waited"
	// MaxWait is the longest wait, in seconds, a bridge asks for and an
	// agent applies.
	MaxWait = 60
)

// ParseWait reads the value of a Collie-Wait or Collie-Waited header:
// decimal seconds, digits only, at least 1. A value over MaxWait counts as
// MaxWait. ok is false for anything else (empty, 0, a sign, a space, a
// fraction), which the agent treats as no wait at all.
func ParseWait(v string) (seconds int, ok bool) {
	if v == "" || len(v) > 16 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n <= MaxWait {
			n = n*10 + int(c-'0')
		}
	}
	if n == 0 {
		return 0, false
	}
	return min(n, MaxWait), true
}
