package control

import (
	"context"
	"net/http"
	"time"
)

// PushStatus is what `collie doctor`'s push row shows of the running
// daemon: its providers, the last push's result at each, and the guard
// (D9) now.
type PushStatus struct {
	// Providers are the providers the daemon sends through.
	Providers []string `json:"providers"`
	// Off lists providers that are configured or expected but not in use,
	// each with the reason ("desktop: no notification server …").
	Off     []string `json:"off,omitempty"`
	Preview bool     `json:"preview"`
	// Last is each provider's last push, by provider.
	Last map[string]PushResult `json:"last"`
	// The guard's counters since the daemon started, and its state now.
	Sent         int64     `json:"sent"`
	Held         int64     `json:"held"`
	Summaries    int64     `json:"summaries"`
	SentLastHour int       `json:"sentLastHour"`
	Tests        int64     `json:"tests"`                 // test pushes delivered
	Undelivered  int64     `json:"undelivered"`           // pushes no provider delivered anywhere (not counted)
	HoldingBack  string    `json:"holdingBack,omitempty"` // why a push now would be held back
	Until        time.Time `json:"until,omitzero"`        // when pushes go out again
	// Config is config.toml as the daemon applied it; nil when the daemon
	// does not read one (collie demo).
	Config *ConfigState `json:"config,omitempty"`
}

// ConfigState is what the daemon made of config.toml: when it read it
// last (at start or on a reload), what changed since the start that
// applies only after a restart, and why the last reload was refused.
type ConfigState struct {
	ReadAt time.Time `json:"readAt"`
	// Restart lists settings changed since the daemon started that a
	// reload cannot apply ("[devices]", …).
	Restart []string `json:"restart,omitempty"`
	// Error is why the last reload kept the running settings; "" when it
	// applied.
	Error string `json:"error,omitempty"`
}

// PushResult is the outcome of one push at one provider.
type PushResult struct {
	At       time.Time `json:"at"`
	Kind     string    `json:"kind"` // question, summary, test
	OK       bool      `json:"ok"`
	Answer   string    `json:"answer,omitempty"`
	Attempts int       `json:"attempts"`
}

// PushTest is what `collie push test` shows: each provider's answer, or
// why the guard held the push back.
type PushTest struct {
	Held string `json:"held,omitempty"`
	// Until is when a test push can go out again, when Held.
	Until   time.Time    `json:"until,omitzero"`
	Answers []PushAnswer `json:"answers"`
}

// PushAnswer is one provider's answer to the test push.
type PushAnswer struct {
	Provider string `json:"provider"`
	OK       bool   `json:"ok"`
	// Idle: the provider has nowhere to deliver to (Answer says why), so
	// nothing was sent through it.
	Idle   bool   `json:"idle,omitempty"`
	Answer string `json:"answer"`
}

// PushBackend is a Backend that sends pushes (the bridge).
type PushBackend interface {
	PushStatus() PushStatus
	PushTest(ctx context.Context) PushTest
}

// Paths of the push routes.
const (
	pushPath     = "/v1/push"
	pushTestPath = "/v1/push/test"
)

// pushTestTimeout bounds collie push test at the daemon: a provider's
// single try (ntfy's 10 s) and the reply.
const pushTestTimeout = 12 * time.Second

func servePush(mux *http.ServeMux, b Backend) {
	pb, ok := b.(PushBackend)
	if !ok {
		return
	}
	mux.HandleFunc("GET "+pushPath, func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, pb.PushStatus()) })
	mux.HandleFunc("POST "+pushTestPath, func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), pushTestTimeout)
		defer cancel()
		writeJSON(w, http.StatusOK, pb.PushTest(ctx))
	})
}

// PushStatus asks the daemon for its push providers and guard.
func (c *Client) PushStatus(ctx context.Context) (PushStatus, error) {
	var s PushStatus
	return s, c.do(ctx, http.MethodGet, pushPath, &s)
}

// PushTest asks the daemon to send one test push through its guard and
// every provider.
func (c *Client) PushTest(ctx context.Context) (PushTest, error) {
	var t PushTest
	return t, c.doBody(ctx, http.MethodPost, pushTestPath, nil, &t)
}
