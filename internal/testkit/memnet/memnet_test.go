package memnet

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// TestServeInBubble: an HTTP server on the listener answers a client that
// dials through it, and its write timeout runs on the bubble's clock.
func TestServeInBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New()
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				time.Sleep(time.Hour) // fake time: past the write timeout
			}
			io.WriteString(w, "hello")
		}), WriteTimeout: time.Minute}
		go srv.Serve(l)
		hc := &http.Client{Transport: &http.Transport{DialContext: l.DialContext}}
		resp, err := hc.Get("http://mem/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "hello" || l.Dials() != 1 {
			t.Fatalf("got %q after %d dials", body, l.Dials())
		}
		start := time.Now()
		// A POST, which the client does not retry on a broken connection.
		if _, err := hc.Post("http://mem/slow", "text/plain", nil); err == nil {
			t.Fatal("a reply past the write timeout arrived")
		}
		if took := time.Since(start); took != time.Hour {
			t.Errorf("the slow request ended after %v of fake time, want the handler's hour", took)
		}
		srv.Close()
		hc.CloseIdleConnections()
	})
}

// TestClosed: a closed listener refuses Accept and DialContext, with
// DialClosed when set.
func TestClosed(t *testing.T) {
	l := New()
	l.Close()
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept: %v", err)
	}
	if _, err := l.DialContext(context.Background(), "", ""); !errors.Is(err, net.ErrClosed) {
		t.Errorf("DialContext: %v", err)
	}
	gone := errors.New("gone")
	l.DialClosed = gone
	if _, err := l.DialContext(context.Background(), "", ""); !errors.Is(err, gone) {
		t.Errorf("DialContext with DialClosed: %v", err)
	}
}
