package bridge

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/collie-linux/collie/internal/bridge/device/store"
)

// TestDevicesNoneIsEmptyList: with no device paired, the list is [], not
// null, so collie devices --json prints [].
func TestDevicesNoneIsEmptyList(t *testing.T) {
	st, err := store.OpenStore(filepath.Join(t.TempDir(), "devices.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	b := &Bridge{devices: st}
	devs, err := b.Devices()
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := json.Marshal(devs); string(out) != "[]" {
		t.Fatalf("no devices is %s, want []", out)
	}
}
