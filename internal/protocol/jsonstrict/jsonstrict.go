// Package jsonstrict decodes JSON the one way Collie reads it: exactly one
// value, member names matched to struct fields with their exact case, a
// member name given twice refused, a member the Go type does not know
// refused (unless the schema is open), data after the value refused, and
// invalid UTF-8 (a lone UTF-16 surrogate escape included) refused unless the
// caller asks for it to be replaced by U+FFFD.
//
// encoding/json matches names case-insensitively ("ID" fills the field
// tagged "id") and keeps the last of two members with the same name, so two
// readers of the same bytes can disagree about what they say. This package
// uses github.com/go-json-experiment/json (the proposed encoding/json/v2),
// whose defaults are exact-case, duplicate-free and UTF-8-only.
//
// Errors are *Error. Their text quotes member names and JSON pointers, which
// come from the input, in ASCII-only Go syntax and clipped, so an error may
// be logged or shown without carrying control or direction characters.
package jsonstrict

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Option changes one rule of Unmarshal.
type Option uint8

const (
	// Open lets members the Go type does not know through, ignored: for a
	// schema that is not Collie's (Claude Code's hook input). Names are
	// still exact-case and a name given twice is still refused.
	Open Option = 1 << iota
	// ReplaceInvalidUTF8 replaces invalid UTF-8, and a lone UTF-16
	// surrogate escape such as "\ud800", by U+FFFD instead of refusing
	// the input: for display text that is cleaned anyway.
	ReplaceInvalidUTF8
)

// Kind says which rule an input broke.
type Kind uint8

// Kinds of Error.
const (
	Syntax        Kind = iota + 1 // not JSON
	Empty                         // no value at all
	Truncated                     // the input ends inside the value
	Trailing                      // something after the value
	UnknownMember                 // a member the closed schema does not have (names are exact-case)
	DuplicateName                 // a member name given twice in one object
	InvalidUTF8                   // a string that is not valid UTF-8
	WrongType                     // a value of the wrong JSON kind or range for its field
)

// Error is a refusal, with where it happened.
type Error struct {
	Kind Kind
	// Pointer is the RFC 6901 JSON pointer of the value (for UnknownMember
	// and DuplicateName: of the member) the error is about; "" is the
	// top. It comes from the input: quote it before showing it.
	Pointer string
	// Offset is the byte offset in the input where the error was found.
	Offset int64
	// Want and Got name, for WrongType, the kind of value the field needs
	// ("a string", "an array", "a whole number") and the JSON kind found
	// ("a number"); never the value itself.
	Want, Got string
	// detail is a cleaned phrase for Syntax and WrongType.
	detail string
}

// Name is the member name of an UnknownMember or DuplicateName error (from
// the input: quote it before showing it).
func (e *Error) Name() string { return jsontext.Pointer(e.Pointer).LastToken() }

func (e *Error) Error() string {
	switch e.Kind {
	case Empty:
		return "there is no JSON value"
	case Truncated:
		return "the JSON value is cut short"
	case Trailing:
		return fmt.Sprintf("there is data after the JSON value, at byte %d", e.Offset)
	case UnknownMember:
		return fmt.Sprintf("unknown field %s in %s (names are case-sensitive)", Quote(e.Name()), where(parent(e.Pointer)))
	case DuplicateName:
		return fmt.Sprintf("field %s appears twice in %s", Quote(e.Name()), where(parent(e.Pointer)))
	case InvalidUTF8:
		return fmt.Sprintf("%s is not valid UTF-8", what(e.Pointer))
	case WrongType:
		return fmt.Sprintf("%s: %s", what(e.Pointer), e.detail)
	}
	return fmt.Sprintf("not valid JSON at byte %d: %s", e.Offset, e.detail)
}

// maxQuoted bounds how much of a name or pointer an error quotes.
const maxQuoted = 64

// Quote quotes s from the input for an error message or a log: Go syntax,
// ASCII only (every other character escaped), cut to 64 bytes with "...".
func Quote(s string) string {
	if len(s) > maxQuoted {
		cut := maxQuoted
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return strconv.QuoteToASCII(s[:cut]) + "..."
	}
	return strconv.QuoteToASCII(s)
}

func where(ptr string) string {
	if ptr == "" {
		return "the top-level object"
	}
	return Quote(ptr)
}

func what(ptr string) string {
	if ptr == "" {
		return "the top-level value"
	}
	return "the value at " + Quote(ptr)
}

func parent(ptr string) string {
	if i := strings.LastIndexByte(ptr, '/'); i >= 0 {
		return ptr[:i]
	}
	return ""
}

// Unmarshal decodes data, exactly one JSON value, into v (a non-nil
// pointer) by the rules of the package doc. v may be partly filled when an
// error is returned; do not use it then.
func Unmarshal(data []byte, v any, opts ...Option) error {
	if rv := reflect.ValueOf(v); rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("jsonstrict: decode into %T, not a non-nil pointer", v)
	}
	var o Option
	for _, x := range opts {
		o |= x
	}
	err := json.Unmarshal(data, v, jsonOptions(o))
	if err == nil {
		return nil
	}
	return diagnose(data, reflect.TypeOf(v), o, err)
}

// Prebuilt option sets, so a decode allocates none.
var (
	optClosed        = json.JoinOptions(json.RejectUnknownMembers(true))
	optOpen          = json.JoinOptions(json.RejectUnknownMembers(false))
	optClosedReplace = json.JoinOptions(json.RejectUnknownMembers(true), jsontext.AllowInvalidUTF8(true))
	optOpenReplace   = json.JoinOptions(json.RejectUnknownMembers(false), jsontext.AllowInvalidUTF8(true))
)

func jsonOptions(o Option) json.Options {
	switch o & (Open | ReplaceInvalidUTF8) {
	case Open:
		return optOpen
	case ReplaceInvalidUTF8:
		return optClosedReplace
	case Open | ReplaceInvalidUTF8:
		return optOpenReplace
	}
	return optClosed
}

// diagnose turns a decoding error into an *Error. It runs only on failure,
// so it may decode again to tell causes apart.
func diagnose(data []byte, t reflect.Type, o Option, err error) error {
	var (
		sem *json.SemanticError
		syn *jsontext.SyntacticError
	)
	switch {
	case errors.As(err, &syn):
		e := &Error{Kind: Syntax, Pointer: string(syn.JSONPointer), Offset: syn.ByteOffset, detail: clean(syn.Err)}
		switch {
		case errors.Is(syn.Err, jsontext.ErrDuplicateName):
			e.Kind = DuplicateName
		case len(bytes.TrimSpace(data)) == 0:
			e.Kind = Empty
		case errors.Is(syn.Err, io.ErrUnexpectedEOF):
			e.Kind = Truncated
		case o&ReplaceInvalidUTF8 == 0 && brokenUTF8(data, o, syn.ByteOffset):
			e.Kind = InvalidUTF8
		case oneValue(data):
			e.Kind = Trailing
		}
		return e
	case errors.As(err, &sem):
		// A syntax error further on is the better report: a broken file
		// is broken before it has wrong values.
		if _, serr := syntaxError(data, o); serr != nil {
			var e *Error
			if errors.As(serr, &e) {
				return e
			}
			return diagnose(data, t, o, serr)
		}
		e := &Error{Kind: WrongType, Pointer: string(sem.JSONPointer), Offset: sem.ByteOffset}
		switch {
		case errors.Is(sem.Err, json.ErrUnknownName):
			e.Kind = UnknownMember
		case errors.Is(sem.Err, io.ErrUnexpectedEOF):
			e.Kind = Truncated
		default:
			e.detail, e.Want, e.Got = typeDetail(sem)
		}
		return e
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		if len(bytes.TrimSpace(data)) == 0 {
			return &Error{Kind: Empty}
		}
		return &Error{Kind: Truncated}
	}
	// An invalid target (not a non-nil pointer) is the caller's bug.
	return fmt.Errorf("jsonstrict: %w", err)
}

// brokenUTF8 reports whether a syntax error at offset is invalid UTF-8: a
// syntax check with invalid UTF-8 allowed gets past it. That is the only
// difference between the two, so no error text is parsed.
func brokenUTF8(data []byte, o Option, offset int64) bool {
	at, err := syntaxError(data, o|ReplaceInvalidUTF8)
	return err == nil || at > offset
}

// syntaxError returns the first syntactic error in data (a duplicate name,
// invalid UTF-8 and data after the value included) and its offset, or nil.
// The error is a *jsontext.SyntacticError, or an *Error of kind Trailing.
func syntaxError(data []byte, o Option) (int64, error) {
	d := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowInvalidUTF8(o&ReplaceInvalidUTF8 != 0))
	_, err := d.ReadValue()
	if err == nil {
		end := d.InputOffset()
		switch _, err = d.ReadToken(); {
		case err == io.EOF:
			return 0, nil
		case err == nil:
			at := end + int64(len(data[end:])-len(bytes.TrimLeft(data[end:], " \t\r\n")))
			return at, &Error{Kind: Trailing, Offset: at}
		}
	}
	var syn *jsontext.SyntacticError
	if errors.As(err, &syn) {
		return syn.ByteOffset, err
	}
	return int64(len(data)), err
}

// oneValue reports whether data starts with one whole JSON value (so what
// broke it is what follows).
func oneValue(data []byte) bool {
	d := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
	_, err := d.ReadValue()
	return err == nil
}

// typeDetail says what kind of value was wanted and what came, naming JSON
// kinds only, never the value.
func typeDetail(sem *json.SemanticError) (detail, want, got string) {
	want = "another kind of value"
	if sem.GoType != nil {
		want = goKind(sem.GoType)
	}
	got = "a value"
	switch sem.JSONKind {
	case 'n':
		got = "null"
	case 'f', 't':
		got = "a boolean"
	case '"':
		got = "a string"
	case '0':
		got = "a number"
	case '{':
		got = "an object"
	case '[':
		got = "an array"
	}
	if sem.JSONKind == '0' && (sem.GoType == nil || isNumber(sem.GoType) || sem.GoType.Kind() == reflect.Interface) {
		if sem.GoType != nil && strings.HasPrefix(want, "a whole") {
			return "the number does not fit: want a whole number in range", want, got
		}
		return "the number does not fit: it is out of range", want, got
	}
	return "want " + want + ", got " + got, want, got
}

func isNumber(t reflect.Type) bool {
	if t == nil {
		return false
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

func goKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean (true or false)"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "another kind of value"
}

// clean makes a decoder's own phrase safe to show: it may quote input
// characters, so every non-ASCII or control byte is escaped, and it is cut.
func clean(err error) string {
	if err == nil {
		return "syntax error"
	}
	q := strconv.QuoteToASCII(err.Error())
	q = q[1 : len(q)-1]
	if len(q) > 2*maxQuoted {
		q = q[:2*maxQuoted] + "..."
	}
	return q
}
