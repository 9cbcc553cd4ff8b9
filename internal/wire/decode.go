package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ErrTooLarge reports a reply over its cap (X4). The reply is refused whole.
var ErrTooLarge = errors.New("reply is over its size cap")

// ReadCapped reads all of r, refusing it once it passes limit bytes. It reads
// at most limit+1 bytes, so an endless body cannot hold the caller. A known
// length (from Content-Length; -1 when unknown) over the cap is refused
// before reading anything.
func ReadCapped(r io.Reader, length int64, limit int) ([]byte, error) {
	if length > int64(limit) {
		return nil, fmt.Errorf("%w: %d bytes, the cap is %d", ErrTooLarge, length, limit)
	}
	grow := limit
	if length >= 0 {
		grow = int(length)
	}
	buf := bytes.NewBuffer(make([]byte, 0, min(grow, 64<<10)+1))
	n, err := buf.ReadFrom(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("read reply: %w", err)
	}
	if n > int64(limit) {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	}
	return buf.Bytes(), nil
}

// DecodeHello decodes and cleans a hello reply of at most HelloCap bytes.
func DecodeHello(r io.Reader, length int64) (*Hello, error) {
	data, err := ReadCapped(r, length, HelloCap)
	if err != nil {
		return nil, fmt.Errorf("hello: %w", err)
	}
	var h Hello
	if err := unmarshalClosed(data, &h); err != nil {
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
	if err := unmarshalClosed(data, &s); err != nil {
		return nil, Report{}, fmt.Errorf("snapshot: %w", err)
	}
	var rep Report
	Clean(&s, &rep)
	return &s, rep, nil
}

// unmarshalClosed decodes exactly one JSON value, refusing unknown fields and
// trailing data: the v1 schema is closed.
func unmarshalClosed(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("broken JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("broken JSON: data after the reply")
	}
	return nil
}
