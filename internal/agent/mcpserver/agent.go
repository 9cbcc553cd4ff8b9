package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// agent is the durable agent's socket, as collie mcp talks to it: the
// local routes of collie-durable(7) (ask, withdraw, and a conversation of
// its own), never a write.
type agent struct {
	hc    *http.Client
	where string // the socket's path, for messages
}

// refusal is the agent's error reply.
type refusal struct {
	status        int
	code, message string
}

func (r *refusal) Error() string { return r.message }

// unreachable is an error before the agent said anything.
type unreachable struct{ err error }

func (u *unreachable) Error() string { return u.err.Error() }
func (u *unreachable) Unwrap() error { return u.err }

func (a *agent) call(ctx context.Context, path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://agent"+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set(wire.VersionHeader, "1")
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &unreachable{wire.CleanErr(unwrapURL(err))}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := wire.ReadCapped(resp.Body, resp.ContentLength, wire.ReplyCap)
		if code, msg, ok := wire.DecodeError(data); ok {
			return &refusal{status: resp.StatusCode, code: code, message: msg}
		}
		return &refusal{status: resp.StatusCode, code: "unknown", message: "the agent answered " + wire.StatusText(resp.StatusCode)}
	}
	if err := wire.DecodeReply(resp.Body, resp.ContentLength, out); err != nil {
		return fmt.Errorf("the agent's reply: %w", wire.CleanErr(err))
	}
	return nil
}

func unwrapURL(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner
		}
	}
	return err
}

// ask asks r and waits for its decision: the agent holds each request up
// to wire.MaxAskWait seconds and replies pending, and the question is
// asked again with the same request id until it is decided or ctx ends.
// The agent's own timeout (r.TimeoutSeconds) decides a question nobody
// answers; a wait that outlives it by far means the agent lost it.
//
// Once the agent has the question, a connection that fails (the agent
// restarting under socket activation) is tried again every 2 seconds for
// up to 30, as collie ask does; the question is asked again with the same
// request id.
func (a *agent) ask(ctx context.Context, r wire.AskRequest) (wire.AskReply, error) {
	const retryFor, retryEvery = 30 * time.Second, 2 * time.Second
	limit := time.Now().Add(time.Duration(r.TimeoutSeconds)*time.Second + 30*time.Second)
	asked := false
	var failingSince time.Time
	for {
		left := time.Until(limit)
		if left <= 0 {
			return wire.AskReply{Status: wire.StatusTimedOut, Reason: "no answer in time; denied by default"}, nil
		}
		r.WaitSeconds = min(wire.MaxAskWait, int64(left/time.Second)+1)
		rctx, cancel := context.WithTimeout(ctx, time.Duration(r.WaitSeconds)*time.Second+15*time.Second)
		var rep wire.AskReply
		err := a.call(rctx, wire.AskPath, r, &rep)
		cancel()
		var un *unreachable
		var ref *refusal
		switch {
		case ctx.Err() != nil:
			return wire.AskReply{}, ctx.Err()
		case !asked && errors.As(err, &ref):
			// An agent from before the shortened and detail fields: the same question
			// without it, once.
			if old, ok := r.WithoutExtensions(ref.code, ref.message); ok {
				r = old
				continue
			}
			return wire.AskReply{}, err
		case err == nil:
			if rep.Status != wire.StatusPending {
				return rep, nil
			}
			asked, failingSince = true, time.Time{}
			continue
		case !asked || !errors.As(err, &un):
			return wire.AskReply{}, err
		case failingSince.IsZero():
			failingSince = time.Now()
		case time.Since(failingSince) > retryFor:
			return wire.AskReply{}, &unreachable{fmt.Errorf("lost the agent while waiting: %w", un.err)}
		}
		select {
		case <-time.After(retryEvery):
		case <-ctx.Done():
			return wire.AskReply{}, ctx.Err()
		}
	}
}

// withdraw takes back the question asked with request id; it runs after
// ctx (the call's) ended, so it has a context of its own.
func (a *agent) withdraw(ctx context.Context, requestID string) (wire.AskReply, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	var rep wire.AskReply
	err := a.call(ctx, wire.WithdrawPath, wire.WithdrawRequest{RequestID: requestID}, &rep)
	return rep, err
}

func (a *agent) open(ctx context.Context, title string) (string, error) {
	var rep wire.LocalReply
	if err := a.call(ctx, wire.LocalOpenPath, wire.LocalOpenRequest{Title: title}, &rep); err != nil {
		return "", err
	}
	return rep.Conversation, nil
}

func (a *agent) note(ctx context.Context, conv, text string) error {
	var rep wire.LocalReply
	return a.call(ctx, wire.LocalNotePath, wire.LocalNoteRequest{Conversation: conv, Text: text}, &rep)
}

func (a *agent) close(ctx context.Context, conv string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	var rep wire.LocalReply
	return a.call(ctx, wire.LocalClosePath, wire.LocalCloseRequest{Conversation: conv}, &rep)
}
