// Package cancelrule holds a test over the whole module: every cancel
// function of a derived context (context.WithCancel, WithTimeout,
// WithDeadline and their Cause forms, signal.NotifyContext) is either only
// called where it is made, which go vet's lostcancel check follows, or
// listed here with the place that calls it. go vet does not follow a
// cancel stored in a field, a map or a closure, passed on or returned: a
// context whose cancel is dropped stays among its parent's children until
// the parent ends, which for a daemon's long-lived parents is a leak.
package cancelrule
