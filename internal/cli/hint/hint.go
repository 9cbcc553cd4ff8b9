// Package hint is an error that carries, apart from its message, what the
// user can do about it. The two are printed on lines of their own, as age
// prints them (see internal/cli):
//
//	collie: error: 1 check failed
//	collie: hint: run the fix shown under it, then collie doctor again
//
// The message says what went wrong; the hint says what to do. Kept apart,
// the hint is a field of its own where output is read by programs: "hint"
// in the JSON of --json and of the device API, HINT in the journal.
package hint

import (
	"errors"
	"fmt"
)

// Error is an error with a hint. Error() is the message alone; the hint
// is read with [Of].
type Error struct {
	Err  error
	Hint string
}

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the error the hint is about.
func (e *Error) Unwrap() error { return e.Err }

// New returns an error with the message msg and the hint h.
func New(msg, h string) error { return &Error{Err: errors.New(msg), Hint: h} }

// Errorf returns an error with the hint h and the message of
// fmt.Errorf(format, a...), %w included.
func Errorf(h, format string, a ...any) error {
	return &Error{Err: fmt.Errorf(format, a...), Hint: h}
}

// Wrap gives err the hint h; nil stays nil.
func Wrap(err error, h string) error {
	if err == nil {
		return nil
	}
	return &Error{Err: err, Hint: h}
}

// Of returns the hint of the outermost [Error] in err's chain, "" when
// there is none. An error wrapped with context (fmt.Errorf("...: %w"))
// keeps its hint.
func Of(err error) string {
	var h *Error
	if errors.As(err, &h) {
		return h.Hint
	}
	return ""
}
