// Package testbuf holds Buffer, a bytes.Buffer a test reads while other
// goroutines write to it: a log handler's sink, a process's output. Only
// tests and test helpers import it (internal/suite/deps keeps it out of the
// binaries).
package testbuf

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent writes and reads. The zero
// value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far; "" for a nil Buffer.
func (s *Buffer) String() string {
	if s == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
