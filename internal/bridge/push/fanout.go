package push

import (
	"context"
	"errors"
	"time"
)

// AttemptTimeout bounds one try of one push to one destination: connect,
// request and answer. A push service answers in well under a second when
// it works; one that holds its answer longer is treated as not answering,
// and the push is tried again later (the dispatcher's backoff) while the
// other destinations' pushes go on.
const AttemptTimeout = 5 * time.Second

// Destination is one place a Fanout provider delivers to: for Web Push,
// one device's push subscription.
type Destination struct {
	// Key tells the destination from the provider's others, and stays the
	// same while it is the same destination: the dispatcher keeps one
	// queue per key. It may be a capability (a Web Push endpoint): it is
	// never logged or shown.
	Key string
	// Name is how logs and doctor name it, holding no secret: "device
	// d-phone at https://fcm.googleapis.com".
	Name string
}

// Fanout is a Provider with several destinations, each sent to on its
// own: the dispatcher gives each destination its own queue and retries,
// so one that is slow or down holds up none of the others, and a push
// is tried again only where it was not taken. Send (and SendReport) still
// send to every destination at once, for collie push test.
type Fanout interface {
	Provider
	// Destinations lists where a push goes now.
	Destinations() []Destination
	// SendTo sends m to the destination key, once. When key is no longer a
	// destination (the device was revoked, the push service said the
	// subscription ended), it returns an error that wraps ErrGone: the
	// push was not taken there, and there is nothing to retry or warn
	// about. Other errors are as Send's.
	SendTo(ctx context.Context, key string, m Message) (answer string, err error)
}

// ErrGone is wrapped by SendTo's error when the destination has gone.
var ErrGone = errors.New("the destination is gone")
