// Package devicetest is a paired device in tests: it redeems the offer
// `collie pair --local --json` prints, reads the state a phone reads from
// the device API and taps answers as the phone does. The end-to-end tests
// (internal/suite/e2e) and the real coding-agent tests (internal/suite/agentclients)
// share it, so the device's side of the API is written once.
package devicetest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/bridge/device"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Device is a paired device talking to the device API at Base.
type Device struct {
	T    testing.TB
	Base string // scheme, host and port of the device API
	Cred string // the bearer credential pairing gave ("" before)
	Host string // the Host header, when not Base's
	// HC is the HTTP client; nil is one with a 30 s timeout.
	HC *http.Client
}

// Pair redeems the offer `collie pair --local --json` printed (pairJSON)
// as a device called name would, and returns that device and the reply.
// The code the bridge showed must match the one the device got.
func Pair(t testing.TB, pairJSON, name string) (*Device, device.PairReply) {
	t.Helper()
	var p control.Pairing
	if err := json.Unmarshal([]byte(pairJSON), &p); err != nil {
		t.Fatalf("devicetest: reading collie pair's offer %q: %v", pairJSON, err)
	}
	base, secret, _ := strings.Cut(p.URL, "/#pair=")
	d := &Device{T: t, Base: base}
	body, _ := json.Marshal(map[string]string{"secret": secret, "name": name})
	var paired device.PairReply
	if status := d.Call("POST", "/api/v1/pair", string(body), map[string]string{device.WriteHeader: "1"}, &paired); status != 200 || paired.Code != p.Code {
		t.Fatalf("devicetest: pair: %d %+v (collie pair showed %s)", status, paired, p.Code)
	}
	d.Cred = paired.Credential
	return d, paired
}

// Call sends a request with the device's credential and the headers hdr,
// decodes a JSON reply into out (when not nil) and returns the status. A
// request that gets no reply fails the test.
func (d *Device) Call(method, path, body string, hdr map[string]string, out any) int {
	d.T.Helper()
	req, err := http.NewRequest(method, d.Base+path, strings.NewReader(body))
	if err != nil {
		d.T.Fatalf("devicetest: %v", err)
	}
	if d.Host != "" {
		req.Host = d.Host
	}
	if d.Cred != "" {
		req.Header.Set("Authorization", "Bearer "+d.Cred)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	hc := d.HC
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		d.T.Fatalf("devicetest: %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		json.Unmarshal(b, out)
	}
	return resp.StatusCode
}

// State reads GET /api/v1/state, what the phone shows.
func (d *Device) State() device.State {
	d.T.Helper()
	var st device.State
	if status := d.Call("GET", "/api/v1/state", "", nil, &st); status != 200 {
		d.T.Fatalf("devicetest: GET /api/v1/state: %d", status)
	}
	return st
}

// Card is a question open on the device API: what the phone shows as a
// card, and where it is.
type Card struct {
	Agent        string
	Conversation string
	ConvTitle    string
	wire.Question
}

// Cards returns every question open in st.
func Cards(st device.State) []Card {
	var out []Card
	for _, a := range st.Agents {
		if a.Snapshot == nil {
			continue
		}
		for _, sp := range a.Snapshot.Spaces {
			for _, tab := range sp.Tabs {
				for _, c := range tab.Conversations {
					for _, q := range c.Questions {
						out = append(out, Card{Agent: a.Name, Conversation: c.ID, ConvTitle: c.Title, Question: q})
					}
				}
			}
		}
	}
	return out
}

// Answer taps option (with the note reason) on c, as the user does on
// the phone, and returns the status; the reply's body goes into out when
// it is not nil.
func (d *Device) Answer(c Card, option, reason string, out any) int {
	d.T.Helper()
	b, _ := json.Marshal(wire.AnswerRequest{Header: wire.Header{RequestID: fmt.Sprintf("tap-%s-%d", c.ID, time.Now().UnixNano())},
		Conversation: c.Conversation, Question: c.ID, Revision: c.Revision, OptionIDs: []string{option}, Reason: reason})
	return d.Call("POST", "/api/v1/agents/"+c.Agent+"/answer", string(b), map[string]string{device.WriteHeader: "1"}, out)
}
