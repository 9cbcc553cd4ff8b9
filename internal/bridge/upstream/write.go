package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Refused is an agent's refusal of a write (wire.Refused), so that the
// device API reads it without this package. Made by newRefused, which
// cleans it: it comes from the agent. Status is 400 to 599 (any other
// becomes 502) and Code a lower-case code ("unknown" when the agent gave
// none or a malformed one).
type Refused = wire.Refused

func (r *reader) write(ctx context.Context, path string, req wire.WriteRequest) (*wire.WriteReply, error) {
	w, err := wire.WriteAt(path)
	if err != nil {
		return nil, err
	}
	if err := w.Check(req); err != nil {
		return nil, err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode the request: %w", err)
	}
	if len(body) > wire.WriteCap {
		return nil, fmt.Errorf("%w: the cap is %d bytes; send less", wire.ErrBodyTooLarge, wire.WriteCap)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set(wire.VersionHeader, strconv.Itoa(wire.Version))
	if r.token != "" {
		hreq.Header.Set("Authorization", "Bearer "+r.token)
	}
	// A write is done once per request id, so it may be sent again when a
	// kept connection turns out closed before the agent answered: a nil
	// entry tells net/http so without sending the header.
	hreq.Header["X-Idempotency-Key"] = nil
	resp, err := r.do(hreq, 0)
	if err != nil {
		var u *Unreachable
		if errors.As(err, &u) {
			return nil, u
		}
		return nil, wire.NewCleanError("send to the agent: "+agentText(unwrapURL(err).Error()), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		var reply wire.WriteReply
		if err := wire.DecodeReply(resp.Body, resp.ContentLength, &reply); err != nil {
			return nil, wire.NewCleanError("read the agent's reply: "+agentText(err.Error()), err)
		}
		if err := checkReply(&reply); err != nil {
			return nil, err
		}
		return &reply, nil
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode/100 == 3 {
		return nil, statusError(resp)
	}
	data, _ := wire.ReadCapped(resp.Body, -1, 4<<10)
	code, msg, ok := wire.DecodeError(data)
	if !ok {
		// resp.Status carries the agent's own reason phrase: never shown.
		code, msg = "unknown", "the agent answered "+wire.StatusText(resp.StatusCode)
	}
	return nil, newRefused(resp.StatusCode, code, msg)
}
