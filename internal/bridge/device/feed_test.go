package device

import (
	"context"
	"github.com/collie-linux/collie/internal/bridge/device/policy"
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// TestWatchingFollowsStreams_K8: one stream closes while another opens.
// The close's report ("nobody watching") is on its way when the open
// happens; the bridge must end up told that a device is watching, or it
// polls at the idle cadence while one is (K8).
func TestWatchingFollowsStreams_K8(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var reports []bool
		opened := make(chan func(), 1)
		var f *feed
		raced := false
		f = newFeed(func(string) (store.Device, bool) { return store.Device{ID: "d-1"}, true }, func(on bool) {
			if !on && !raced {
				raced = true
				// While this report is on its way, another stream opens
				// and runs as far as it can.
				go func() {
					_, _, _, leave, _ := f.enter(context.Background(), "c", true)
					opened <- leave
				}()
				synctest.Wait()
			}
			mu.Lock()
			reports = append(reports, on)
			mu.Unlock()
		})
		last := func() bool {
			mu.Lock()
			defer mu.Unlock()
			return reports[len(reports)-1]
		}
		_, _, _, leave1, _ := f.enter(context.Background(), "c", true)
		if !last() {
			t.Fatal("K8: an open stream was not reported")
		}
		leave1()
		leave2 := <-opened
		synctest.Wait()
		if !last() {
			t.Fatalf("K8: a stream is open, but the bridge was last told nobody watches: %v", reports)
		}
		leave2()
		synctest.Wait()
		if last() {
			t.Fatalf("K8: no stream is open, but the bridge was last told one is: %v", reports)
		}
	})
}

// streamAPI is an API on a fresh store with one paired device, for the
// revoke tests.
func streamAPI(t *testing.T, back Backend) (*API, store.Device, string) {
	t.Helper()
	st, err := store.OpenStore(filepath.Join(t.TempDir(), "devices.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	d, cred, err := st.Add("phone")
	if err != nil {
		t.Fatal(err)
	}
	a := NewAPI(Options{Backend: back, Store: st, Pairings: store.NewPairings(nil), Site: policy.NewSite("http", "127.0.0.1", "8780")})
	t.Cleanup(a.Close)
	return a, d, cred
}

// TestRevokeRacesNewStream: the device is revoked after its event
// stream's request arrived (authenticated, under the old code) and before
// the stream is registered. The stream must not stay open: registration
// checks the device under the lock revoke takes. And a
// revoke just after registration cuts the stream.
func TestRevokeRacesNewStream(t *testing.T) {
	for _, tt := range []struct {
		name   string
		before bool // revoke between arrival and registration
		status int
	}{
		{"revoke_between_arrival_and_registration", true, http.StatusUnauthorized},
		{"revoke_after_registration", false, http.StatusOK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, d, cred := streamAPI(t, &agentSide{})
				if tt.before {
					a.beforeStream = func() {
						if err := a.Revoke(d.ID); err != nil {
							t.Error(err)
						}
					}
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				req := httptest.NewRequest("GET", "http://127.0.0.1:8780/api/v1/events", nil).WithContext(ctx)
				req.Header.Set("Authorization", "Bearer "+cred)
				w := httptest.NewRecorder()
				done := make(chan struct{})
				go func() {
					a.Handler().ServeHTTP(w, req)
					close(done)
				}()
				synctest.Wait()
				if !tt.before {
					if a.feed.open(d.ID) != 1 {
						t.Fatal("the stream did not open")
					}
					if err := a.Revoke(d.ID); err != nil {
						t.Fatal(err)
					}
					synctest.Wait()
				}
				select {
				case <-done:
				default:
					t.Fatal("the event stream of a revoked device is still open")
				}
				if w.Code != tt.status || a.feed.open(d.ID) != 0 {
					t.Fatalf("status %d (want %d), %d requests open", w.Code, tt.status, a.feed.open(d.ID))
				}
			})
		})
	}
}

// blockingAgent holds every write until its context ends.
type blockingAgent struct{ agentSide }

func (b *blockingAgent) Forward(ctx context.Context, agent, path string, req wire.WriteRequest) (*wire.WriteReply, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestRevokeCutsWriteInFlight: the same class for writes. A revoke while
// a device's write is on its way to the agent cancels it: nothing of a
// revoked device stays in flight, and the line says it failed.
func TestRevokeCutsWriteInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, d, cred := streamAPI(t, &blockingAgent{})
		rec := &auditLog{}
		a.o.Audit = rec
		req := httptest.NewRequest("POST", "http://127.0.0.1:8780/api/v1/agents/demo/send", strings.NewReader(`{"requestId":"r","conversation":"c","text":"hi"}`))
		req.Header.Set("Authorization", "Bearer "+cred)
		req.Header.Set(WriteHeader, "1")
		w := httptest.NewRecorder()
		done := make(chan struct{})
		go func() {
			a.Handler().ServeHTTP(w, req)
			close(done)
		}()
		synctest.Wait()
		if a.feed.open(d.ID) != 1 {
			t.Fatal("the write is not in flight")
		}
		if err := a.Revoke(d.ID); err != nil {
			t.Fatal(err)
		}
		<-done
		if w.Code != http.StatusBadGateway || a.feed.open(d.ID) != 0 || !strings.Contains(rec.last(), d.ID+" demo send failed") {
			t.Fatalf("status %d, %d open, audit %q", w.Code, a.feed.open(d.ID), rec.last())
		}
	})
}
