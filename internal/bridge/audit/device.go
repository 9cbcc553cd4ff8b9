package audit

// Events of a device's own settings: writes a paired device makes on the
// bridge rather than on a durable agent. Their lines name no session.

const (
	// EventPushSubscribe: the device turned notifications on, storing its
	// browser's Web Push subscription.
	EventPushSubscribe = "push.subscribe"
	// EventPushUnsubscribe: the device turned notifications off.
	EventPushUnsubscribe = "push.unsubscribe"
)

// PushSubscribe: a device turned notifications on. The line keeps
// service, the push service's origin (never the endpoint, which is a
// capability: who holds it can push to the device), "" when the write was
// refused before its subscription was read; a result and reason only when
// it was not OK.
type PushSubscribe struct {
	Service string
	Result  Result
}

func (PushSubscribe) Name() string                 { return EventPushSubscribe }
func (p PushSubscribe) values(dst []value) []value { return append(dst, str(p.Service)) }
func (p PushSubscribe) result() Result             { return p.Result }

// PushUnsubscribe: a device turned notifications off. The line keeps no
// field of its own; a result and reason only when it was not OK.
type PushUnsubscribe struct {
	Result Result
}

func (PushUnsubscribe) Name() string               { return EventPushUnsubscribe }
func (PushUnsubscribe) values(dst []value) []value { return dst }
func (p PushUnsubscribe) result() Result           { return p.Result }

// deviceEvents are the events of a device's own settings, by the name
// the device API gives the write.
var deviceEvents = map[string]func(r Result) Event{
	EventPushSubscribe:   func(r Result) Event { return PushSubscribe{Result: r} },
	EventPushUnsubscribe: func(r Result) Event { return PushUnsubscribe{Result: r} },
}

// Audited reports whether the audit log has an event for the device
// write called name: one of the protocol's writes (wire.Writes) or of a
// device's own settings. The device API records every write it serves,
// done or refused, and a route whose write is not audited fails its
// tests.
func Audited(name string) bool {
	if _, ok := deviceEvents[name]; ok {
		return true
	}
	_, err := EventOf(name, nil, OK)
	return err == nil
}
