package bridge

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/bridge/device"
	"github.com/collie-linux/collie/internal/bridge/push"
	"github.com/collie-linux/collie/internal/bridge/push/webpush"
	"github.com/collie-linux/collie/internal/bridge/push/webpush/pushtest"
)

// TestWebPushWired_D6: the daemon's Web Push provider and the device API
// meet in the bridge: the API serves the provider's VAPID key, a paired
// device's subscription posted through the write gate is where the
// provider pushes (the double decrypts it), and revoking the device ends
// its pushes.
func TestWebPushWired_D6(t *testing.T) {
	svc := pushtest.New(t, nil)
	state := t.TempDir()
	wp, err := webpush.New(webpush.Options{StateDir: state, Client: svc.Client()})
	if err != nil {
		t.Fatal(err)
	}
	b := New(Options{Paths: config.Paths{State: state}, Devices: &device.ListenConfig{Addr: "127.0.0.1:0"},
		WebPush: wp, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	stop, err := b.startDevices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	dev, cred, err := b.devices.Add("phone")
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, b.apiURL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+cred)
		req.Header.Set(device.WriteHeader, "1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	status, body := do("GET", "/api/v1/push", "")
	var key device.PushReply
	json.Unmarshal([]byte(body), &key)
	if status != 200 || key.PublicKey != wp.PublicKey() {
		t.Fatalf("GET /api/v1/push: %d %s, want the provider's key", status, body)
	}
	sub := svc.Subscribe(t, key.PublicKey)
	if status, body := do("POST", "/api/v1/push/subscription", string(sub.JSON())); status != 200 {
		t.Fatalf("subscribe: %d %s", status, body)
	}
	if err := wp.Send(context.Background(), push.Message{Title: "demo: a question", URL: b.apiURL + "/"}); err != nil {
		t.Fatal(err)
	}
	if got := svc.Pushes(); len(got) != 1 || got[0].Problem != "" || !strings.Contains(string(got[0].Payload), `"title":"demo: a question"`) {
		t.Fatalf("the double got %+v", got)
	}
	if err := b.api.Revoke(dev.ID); err != nil {
		t.Fatal(err)
	}
	if answer, err := wp.SendReport(context.Background(), push.Message{Title: "again"}); err != nil || answer != webpush.NoSubscriptions || len(svc.Pushes()) != 1 {
		t.Fatalf("after revoking: %q, %v, %d pushes", answer, err, len(svc.Pushes()))
	}
}
