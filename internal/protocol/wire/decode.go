package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/collie-linux/collie/internal/protocol/jsonstrict"
)

// ErrTooLarge reports a reply over its cap (X4). The reply is refused whole.
var ErrTooLarge = errors.New("reply is over its size cap")

// ErrLength reports a body that does not match its Content-Length.
var ErrLength = errors.New("the body does not match its Content-Length")

// ReadCapped reads all of r, refusing it once it passes limit bytes. It reads
// at most limit+1 bytes, so an endless body cannot hold the caller.
//
// length is the body's Content-Length, or -1 when unknown. A known length
// over the cap is refused before reading anything. Under the cap, the body
// is read straight into one buffer of exactly that length (no growing, no
// second copy), and it must be exactly that long: a shorter body, or one
// with a byte more, is refused with [ErrLength] (reading at most length+1
// bytes, so a lying length never lets more than it through). An unknown
// length grows a buffer as the body comes, up to the cap.
func ReadCapped(r io.Reader, length int64, limit int) ([]byte, error) {
	if length > int64(limit) {
		return nil, fmt.Errorf("%w: %d bytes, the cap is %d", ErrTooLarge, length, limit)
	}
	if length >= 0 {
		return readExactly(r, int(length))
	}
	buf := bytes.NewBuffer(make([]byte, 0, min(limit, 64<<10)+1))
	n, err := buf.ReadFrom(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("read reply: %w", err)
	}
	if n > int64(limit) {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	}
	return buf.Bytes(), nil
}

// readExactly reads a body of exactly n bytes from r, and checks that
// nothing follows: it reads into one buffer with room for one byte more,
// which, if it comes, tells a body longer than its length.
func readExactly(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, n+1)
	got, err := io.ReadFull(r, buf)
	switch {
	case got > n:
		return nil, fmt.Errorf("%w: the body goes on past its %d bytes", ErrLength, n)
	case got == n && (err == io.ErrUnexpectedEOF || err == io.EOF):
		return buf[:n], nil
	case err == io.ErrUnexpectedEOF || err == io.EOF:
		return nil, fmt.Errorf("%w: the body ended after %d of its %d bytes", ErrLength, got, n)
	}
	return nil, fmt.Errorf("read reply: %w", err)
}

// DecodeHello decodes and cleans a hello reply of at most HelloCap bytes.
func DecodeHello(r io.Reader, length int64) (*Hello, error) {
	data, err := ReadCapped(r, length, HelloCap)
	if err != nil {
		return nil, fmt.Errorf("hello: %w", err)
	}
	var h Hello
	if err := unmarshalClosed(data, &h, jsonstrict.ReplaceInvalidUTF8); err != nil {
		return nil, fmt.Errorf("hello: %w", err)
	}
	if h.Protocol != Version {
		return nil, fmt.Errorf("hello: the agent speaks protocol %d; this bridge speaks %d", h.Protocol, Version)
	}
	cleanHello(&h)
	return &h, nil
}

// DecodeSnapshot decodes a snapshot reply of at most SnapshotCap bytes, drops
// every object with a bad id or an unusable shape and cleans every string.
// The report lists what was dropped, for the log.
func DecodeSnapshot(r io.Reader, length int64) (*Snapshot, Report, error) {
	data, err := ReadCapped(r, length, SnapshotCap)
	if err != nil {
		return nil, Report{}, fmt.Errorf("snapshot: %w", err)
	}
	return ParseSnapshot(data)
}

// ParseSnapshot is DecodeSnapshot for bytes already read.
func ParseSnapshot(data []byte) (*Snapshot, Report, error) {
	if len(data) > SnapshotCap {
		return nil, Report{}, fmt.Errorf("snapshot: %w: %d bytes", ErrTooLarge, len(data))
	}
	var s Snapshot
	var rep Report
	err := unmarshalClosed(data, &s)
	var je *jsonstrict.Error
	if errors.As(err, &je) && je.Kind == jsonstrict.InvalidUTF8 {
		// Display text with invalid UTF-8 is shown with U+FFFD (cleaning
		// step 1 of collie-durable(7)), but an id is never changed (X5):
		// an object whose id was not valid UTF-8 is dropped.
		s = Snapshot{}
		if err = unmarshalClosed(data, &s, jsonstrict.ReplaceInvalidUTF8); err == nil {
			rep.drop("", "invalid UTF-8", fmt.Sprintf("replaced by U+FFFD (the first at %s); an object whose id was not valid UTF-8 is dropped", jsonstrict.Quote(je.Pointer)))
			dropReplacedIDs(&s)
		}
	}
	if err != nil {
		return nil, Report{}, fmt.Errorf("snapshot: %w", err)
	}
	Clean(&s, &rep)
	return &s, rep, nil
}

// unmarshalClosed decodes exactly one JSON value by the closed schema of
// protocol v1 (see jsonstrict): member names in their exact case, no name
// twice, no unknown member, nothing after the value, and no invalid UTF-8
// unless opts say to replace it.
func unmarshalClosed(data []byte, v any, opts ...jsonstrict.Option) error {
	if err := jsonstrict.Unmarshal(data, v, opts...); err != nil {
		return fmt.Errorf("broken JSON: %w", err)
	}
	return nil
}

// dropReplacedIDs empties every id of s that holds U+FFFD, after a decode
// that replaced invalid UTF-8: such an id may not be what the agent sent,
// and an id is never changed (X5), so Clean drops its object. A question's
// tool-call key is an id too.
func dropReplacedIDs(s *Snapshot) {
	fix := func(id *string) {
		if strings.ContainsRune(*id, '\uFFFD') {
			*id = ""
		}
	}
	for i := range s.Spaces {
		sp := &s.Spaces[i]
		fix(&sp.ID)
		for j := range sp.Tabs {
			t := &sp.Tabs[j]
			fix(&t.ID)
			for k := range t.Conversations {
				c := &t.Conversations[k]
				fix(&c.ID)
				for l := range c.Items {
					fix(&c.Items[l].ID)
				}
				for l := range c.Questions {
					q := &c.Questions[l]
					fix(&q.ID)
					if strings.ContainsRune(q.ToolCall, '\uFFFD') {
						q.ToolCall = "\x00" // not a valid id: the question is dropped
					}
					for m := range q.Options {
						fix(&q.Options[m].ID)
					}
					for m := range q.Fields {
						fix(&q.Fields[m].ID)
					}
				}
			}
		}
	}
	for i := range s.Belt {
		fix(&s.Belt[i].ID)
	}
	for i := range s.Starters {
		fix(&s.Starters[i].ID)
	}
}
