package cli

import (
	"errors"
	"flag"
	"fmt"
)

// The exit statuses of collie and collie-agent: one table for both, the
// one in EXIT STATUS of collie(1) and collie-agent(1). A status means the
// same wherever two commands share it.
const (
	ExitOK        = 0 // done; also --help; ask: answered yes, or answered
	ExitFailed    = 1 // the command failed; ask: answered no
	ExitUsage     = 2 // a mistake on the command line: nothing was done
	ExitTimedOut  = 3 // ask: no answer before --timeout; denied by default
	ExitWithdrawn = 4 // ask: withdrawn from a device, or its conversation closed
	ExitUnasked   = 5 // ask: could not ask; the agent unreachable, or it refused
)

// The decisions of a question other than yes, as a command returns them.
// What they mean was said already (the answer on stdout, why on stderr),
// so Main says nothing more; their statuses are ExitFailed, ExitTimedOut
// and ExitWithdrawn.
var (
	ErrNo        = errors.New("answered no")
	ErrTimedOut  = errors.New("no answer in time; denied by default")
	ErrWithdrawn = errors.New("the question was withdrawn")
)

// Unasked is what kept a question from being asked, or its answer from
// coming back: the agent could not be found or reached, or it refused.
// Its status is ExitUnasked, and Main says it.
type Unasked struct{ Err error }

func (u *Unasked) Error() string { return u.Err.Error() }

// Unwrap returns the reason.
func (u *Unasked) Unwrap() error { return u.Err }

// Exited is an error that is an exit status a command chose and said
// already: the status of collie run's command, a hook's decision as its
// client reads it.
type Exited interface {
	error
	ExitStatus() int
}

// Status is an Exited of the status it is.
type Status int

func (s Status) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// ExitStatus is s.
func (s Status) ExitStatus() int { return int(s) }

// exitKind is one row of the exit table: the errors of a kind, their
// status, and whether the command said them already.
type exitKind struct {
	name string
	is   func(error) (code int, ok bool)
	said bool
}

// is matches errors that are target (errors.Is), with status code.
func is(target error, code int) func(error) (int, bool) {
	return func(err error) (int, bool) { return code, errors.Is(err, target) }
}

// exits is the table, first match wins; an error of no kind is
// ExitFailed, and Main says it.
var exits = []exitKind{
	{"help", is(flag.ErrHelp, ExitOK), true},
	{"usage", func(err error) (int, bool) { return ExitUsage, IsUsage(err) }, false},
	{"exited", func(err error) (int, bool) {
		var x Exited
		if errors.As(err, &x) {
			return x.ExitStatus(), true
		}
		return 0, false
	}, true},
	{"no", is(ErrNo, ExitFailed), true},
	{"timed out", is(ErrTimedOut, ExitTimedOut), true},
	{"withdrawn", is(ErrWithdrawn, ExitWithdrawn), true},
	{"unasked", func(err error) (int, bool) {
		var u *Unasked
		return ExitUnasked, errors.As(err, &u)
	}, false},
}

// ExitCode is err's exit status, from the one table: 0 for nil and help,
// 2 for a UsageError, 1 for an error of no other kind.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	for _, k := range exits {
		if code, ok := k.is(err); ok {
			return code
		}
	}
	return ExitFailed
}

// Said reports whether the command said err already, so that Main says
// nothing more: help, an Exited, and ask's decisions other than yes.
func Said(err error) bool {
	if err == nil {
		return false
	}
	for _, k := range exits {
		if _, ok := k.is(err); ok {
			return k.said
		}
	}
	return false
}
