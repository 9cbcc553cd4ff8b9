package bridge

import (
	"context"

	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/bridge/push/dispatch"
)

// Pushes (D4, D9). The one place a snapshot is applied (apply)
// hands every question it had not seen in the agent's last snapshot to
// the dispatcher, after the devices were told: the card is on the devices
// first, pushed or not, and the guard's decision never touches it. The
// guard decides each (agent, tool call) once, so the same question seen
// by two reads at once, or again after a restart, is decided once.

// newQuestions returns the questions of a's snapshot that were not in its
// last one, and remembers the snapshot's. Closed conversations ask
// nothing. Callers hold b.mu.
func (b *Bridge) newQuestions(a *agent) []dispatch.Question {
	if a.snap == nil {
		return nil
	}
	seen := make(map[string]struct{}, len(a.asked))
	var out []dispatch.Question
	for _, sp := range a.snap.Spaces {
		for _, tb := range sp.Tabs {
			for _, c := range tb.Conversations {
				if c.Closed {
					continue
				}
				for _, q := range c.Questions {
					dq := dispatch.Question{
						Agent: a.src.Name, AgentTitle: a.status.Agent,
						Conversation: c.ID, ConversationTitle: c.Title,
						ID: q.ID, ToolCall: q.ToolCall, Title: q.Title, Push: q.Push,
					}
					k := dq.Key()
					seen[k] = struct{}{}
					if _, ok := a.asked[k]; !ok {
						out = append(out, dq)
					}
				}
			}
		}
	}
	a.asked = seen
	return out
}

// pushQuestions gives qs to the dispatcher: decided at once, never
// waiting on a provider.
func (b *Bridge) pushQuestions(qs []dispatch.Question) {
	for _, q := range qs {
		b.o.Push.Question(q)
	}
}

// webURL is the address a push opens: the device API's web app, once it
// listens; "" without one.
func (b *Bridge) webURL() string {
	u, _ := b.web.Load().(string)
	return u
}

// WebURL is webURL, for the dispatcher's Options.URL.
func (b *Bridge) WebURL() string { return b.webURL() }

// PushStatus implements control.PushBackend: the providers in use, and
// the others with why (left out by config.toml, or with nowhere to
// deliver to).
func (b *Bridge) PushStatus() control.PushStatus {
	s := control.PushStatus{Providers: []string{}, Last: map[string]control.PushResult{}}
	if b.o.PushOff != nil {
		s.Off = b.o.PushOff()
	}
	if b.o.Config != nil {
		c := b.o.Config()
		s.Config = &c
	}
	d := b.o.Push
	if d == nil {
		return s
	}
	s.Providers = d.Providers()
	s.Off = append(s.Off, d.Idle()...)
	s.Preview = d.Preview()
	for name, r := range d.Last() {
		s.Last[name] = control.PushResult{At: r.At, Kind: r.Kind, OK: r.OK, Answer: r.Answer, Attempts: r.Attempts}
	}
	g := d.Guard()
	s.Sent, s.Held, s.Summaries, s.Tests, s.Undelivered = g.Sent, g.Held, g.Summaries, g.Tests, g.Undelivered
	s.SentLastHour, s.HoldingBack, s.Until = g.SentLastHour, g.HoldingBack, g.Until
	return s
}

// PushTest implements control.PushBackend.
func (b *Bridge) PushTest(ctx context.Context) control.PushTest {
	t := control.PushTest{Answers: []control.PushAnswer{}}
	if b.o.Push == nil {
		return t
	}
	out := b.o.Push.Test(ctx)
	t.Held, t.Until = out.Held, out.Until
	for _, a := range out.Answers {
		t.Answers = append(t.Answers, control.PushAnswer{Provider: a.Provider, OK: a.OK, Idle: a.Idle, Answer: a.Answer})
	}
	return t
}
