package bridge

import (
	"testing"

	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/bridge/device"
)

// TestLinkOf_D6: pairing links and pushes use public_url when it is set,
// without the listener's fingerprint (the phone sees the proxy's
// certificate), and say who can open them.
func TestLinkOf_D6(t *testing.T) {
	for _, tt := range []struct {
		name           string
		l              device.Listener
		url, fp, reach string
	}{
		{"loopback", device.Listener{URL: "http://127.0.0.1:8780"}, "http://127.0.0.1:8780", "", control.ReachThisMachine},
		{"localhost_tls", device.Listener{URL: "https://localhost:8780", Fingerprint: "AA"}, "https://localhost:8780", "AA", control.ReachThisMachine},
		{"lan_self_signed", device.Listener{URL: "https://box:8780", Fingerprint: "AA"}, "https://box:8780", "AA", control.ReachNetwork},
		{"public_url", device.Listener{URL: "http://127.0.0.1:8780", Public: "https://collie.example.ts.net"}, "https://collie.example.ts.net", "", control.ReachPublic},
		{"public_url_on_own_listener", device.Listener{URL: "https://box:8780", Fingerprint: "AA", Public: "https://collie.home.arpa:8780"}, "https://collie.home.arpa:8780", "", control.ReachPublic},
		{"public_url_loopback", device.Listener{URL: "http://127.0.0.1:8780", Public: "https://localhost:8443"}, "https://localhost:8443", "", control.ReachThisMachine},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url, fp, reach := linkOf(&tt.l)
			if url != tt.url || fp != tt.fp || reach != tt.reach {
				t.Fatalf("linkOf = %q %q %q, want %q %q %q", url, fp, reach, tt.url, tt.fp, tt.reach)
			}
		})
	}
}
