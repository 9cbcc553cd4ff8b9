package main

import (
	"testing"

	"github.com/collie-linux/collie/internal/bridge/device"
	"github.com/collie-linux/collie/internal/bridge/doctor"
)

// TestHealthzBodyAgrees: collie doctor's public_url row knows the bridge
// by what its /healthz answers.
func TestHealthzBodyAgrees(t *testing.T) {
	if got := doctor.HealthzBody(); got != device.HealthzBody {
		t.Fatalf("doctor expects %q, the device API answers %q", got, device.HealthzBody)
	}
}
