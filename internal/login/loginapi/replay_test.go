package loginapi

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestReplayCacheFullSaysWhen: when the bridge holds as many unexpired
// platform assertions as it keeps, the refusal says when room frees (the
// oldest's expiry), and that is true: a new assertion is taken then, not
// a second before. (It used to say "try again shortly".)
func TestReplayCacheFullSaysWhen(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	now := t0
	p := NewPlatform(nil, func() time.Time { return now })
	for i := range maxSeen {
		exp := t0.Add(time.Minute + time.Duration(i)*time.Millisecond).Unix()
		if err := p.remember(Claims{Jti: fmt.Sprint("jti-", i), Exp: exp}); err != nil {
			t.Fatalf("assertion %d: %v", i, err)
		}
	}
	// The oldest may be forgotten after exp (t0+60 s) plus the skew.
	now = t0.Add(10 * time.Second)
	err := p.remember(Claims{Jti: "one-more", Exp: now.Add(time.Minute).Unix()})
	if err == nil || !strings.Contains(err.Error(), "the oldest expires in 1m21s: try again then") || strings.Contains(err.Error(), "shortly") {
		t.Fatalf("full: %v", err)
	}
	now = t0.Add(10*time.Second + 1*time.Minute + 20*time.Second)
	if err := p.remember(Claims{Jti: "one-more", Exp: now.Add(time.Minute).Unix()}); err == nil {
		t.Fatal("taken a second before the time the refusal said")
	}
	now = t0.Add(10*time.Second + 1*time.Minute + 21*time.Second)
	if err := p.remember(Claims{Jti: "one-more", Exp: now.Add(time.Minute).Unix()}); err != nil {
		t.Fatalf("at the time the refusal said: %v", err)
	}
}
