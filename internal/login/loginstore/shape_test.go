package loginstore

import (
	"regexp"
	"testing"
)

// The package's patterns, as the reference store writes them; the hand
// checks (validService, rfc3339Shape) must agree with them on every
// input.
var (
	serviceSlugRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,79}$`)
	rfc3339RE     = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$`)
)

var shapeSeeds = []string{
	"", "collie", "c", "-collie", "Collie", "col.lie_x-1", "collie/x", string(make([]byte, 81)),
	"2026-12-04T03:33:12Z", "2026-12-04T03:33:12.123456789Z", "2026-12-04T03:33:12+01:00", "2026-12-04T03:33:12.5-07:30",
	"2026-12-04T03:33:12.Z", "2026-12-04T03:33:12", "2026-12-04 03:33:12Z", "2026-12-04T03:33:12+0100", "2026-12-04T03:33:12z",
	"٢٠٢٦-12-04T03:33:12Z", "2026-12-04T03:33:12Z\n", "2026-12-04T03:33:12+01:00:00",
}

func FuzzValidService(f *testing.F) {
	for _, s := range shapeSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validService(s), serviceSlugRE.MatchString(s); got != want {
			t.Fatalf("validService(%q) = %v, the pattern says %v", s, got, want)
		}
	})
}

func FuzzRFC3339Shape(f *testing.F) {
	for _, s := range shapeSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := rfc3339Shape(s), rfc3339RE.MatchString(s); got != want {
			t.Fatalf("rfc3339Shape(%q) = %v, the pattern says %v", s, got, want)
		}
	})
}
