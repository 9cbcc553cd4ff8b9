package grants

import (
	"testing"
	"time"
)

func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{time.Hour: "1 hour", 90 * time.Minute: "90 minutes", 48 * time.Hour: "2 days", 45 * time.Second: "45 seconds"} {
		if got := humanDuration(d); got != want {
			t.Errorf("humanDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
