package device

import (
	"crypto/rand"
	"errors"
	"sync"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Errors of redeem; the device is told them by apierr's rows
// (ConfirmExpired, ConfirmMismatch).
var (
	errConfirmExpired  = errors.New("the confirmation for always allow has expired or was used")
	errConfirmMismatch = errors.New("the confirmation for always allow was made for another question, revision, option or device")
)

// ConfirmTTL is how long the second tap of "always allow" may come (D7).
const ConfirmTTL = 2 * time.Minute

// decisionTTL bounds how long a decision is remembered in memory.
const decisionTTL = 24 * time.Hour

// Decision is who answered a question, and when (D9).
type Decision struct {
	Device     string    `json:"device"`
	DeviceName string    `json:"deviceName"`
	At         time.Time `json:"at"`
	RequestID  string    `json:"requestId"`
}

// decisions makes every question decided once, keyed by (agent, tool call)
// or, for a question with no tool-call key, by (agent, conversation,
// question). A key is reserved while its answer is on its way, so two
// devices tapping at once cannot both get through.
type decisions struct {
	now func() time.Time

	mu      sync.Mutex
	decided map[string]Decision
	pending map[string]bool
	confirm map[string]confirmation // token → what it confirms
}

type confirmation struct {
	device, agent, conversation, question, option string
	revision                                      int64
	expires                                       time.Time
}

func newDecisions(now func() time.Time) *decisions {
	return &decisions{now: now, decided: map[string]Decision{}, pending: map[string]bool{}, confirm: map[string]confirmation{}}
}

func decisionKey(agent, conversation string, q wire.Question) string {
	if q.ToolCall != "" {
		return agent + "\x00tool\x00" + q.ToolCall
	}
	return agent + "\x00question\x00" + conversation + "\x00" + q.ID
}

// reserve claims key for an answer in flight. It fails with the earlier
// decision when the question was decided already.
func (d *decisions) reserve(key string) (Decision, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.prune()
	if dec, ok := d.decided[key]; ok {
		return dec, false
	}
	if d.pending[key] {
		return Decision{DeviceName: "another device", At: d.now().UTC()}, false
	}
	d.pending[key] = true
	return Decision{}, true
}

// get returns the decision recorded under key.
func (d *decisions) get(key string) (Decision, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.prune()
	dec, ok := d.decided[key]
	return dec, ok
}

// settle ends a reservation: as a decision when the agent took the answer,
// or released so the question can be answered again.
func (d *decisions) settle(key string, dec *Decision) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.pending, key)
	if dec != nil {
		d.decided[key] = *dec
	}
}

// prune forgets old decisions and expired confirmations. Callers hold d.mu.
func (d *decisions) prune() {
	now := d.now()
	for k, dec := range d.decided {
		if now.Sub(dec.At) > decisionTTL {
			delete(d.decided, k)
		}
	}
	for t, c := range d.confirm {
		if now.After(c.expires) {
			delete(d.confirm, t)
		}
	}
}

// offer makes the confirmation an "always allow" answer needs: a token
// bound to this device, question, revision and option (D7).
func (d *decisions) offer(c confirmation) (string, time.Time) {
	tok := rand.Text() // 130 random bits; never fails
	c.expires = d.now().Add(ConfirmTTL)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.prune()
	d.confirm[tok] = c
	return tok, c.expires
}

// redeem checks and uses up a confirmation token for c.
func (d *decisions) redeem(tok string, c confirmation) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.prune()
	got, ok := d.confirm[tok]
	if !ok {
		return errConfirmExpired
	}
	delete(d.confirm, tok) // used up, matched or not: a wrong try cannot be repeated
	got.expires = time.Time{}
	if got != c {
		return errConfirmMismatch
	}
	return nil
}
