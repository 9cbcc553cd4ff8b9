package push

import (
	"context"
	"errors"
	"time"
)

// What a provider's Send may return beyond a plain error. The caller (the
// dispatcher) retries a plain error with backoff; these tell it more.

// PermanentError is a failure a retry cannot fix: a refused token, a
// topic the server will not take, a malformed message. The dispatcher
// stops retrying and reports it.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent marks err as one a retry cannot fix.
func Permanent(err error) error { return &PermanentError{Err: err} }

// IsPermanent reports whether err was marked Permanent.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}

// RetryAfterError is a failure the provider was told to wait out (HTTP 429
// or 503 with Retry-After): the dispatcher waits at least After before the
// next try, within its own bounds.
type RetryAfterError struct {
	After time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string { return e.Err.Error() }
func (e *RetryAfterError) Unwrap() error { return e.Err }

// Reporter is a Provider that can say what the other side answered on
// success ("ntfy.sh accepted it, message id …"), for collie push test. A
// provider that is not a Reporter is reported as "sent".
type Reporter interface {
	Provider
	// SendReport is Send, with the answer on success. The answer, like an
	// error, never holds a secret.
	SendReport(ctx context.Context, m Message) (answer string, err error)
}

// PartialError is a failure of a provider with several destinations (the
// browsers of several devices) that still delivered to Delivered of them:
// the push reached someone, and counts as delivered; the dispatcher may
// still retry for the rest. It may be wrapped by Permanent or in a
// RetryAfterError.
type PartialError struct {
	Delivered int
	Err       error
}

func (e *PartialError) Error() string { return e.Err.Error() }
func (e *PartialError) Unwrap() error { return e.Err }

// DeliveredTo is how many destinations err says a failed send still
// reached (a PartialError's Delivered), 0 for any other error.
func DeliveredTo(err error) int {
	var p *PartialError
	if errors.As(err, &p) {
		return p.Delivered
	}
	return 0
}
