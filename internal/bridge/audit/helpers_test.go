package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// clock is a clock the test moves by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock {
	return &clock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// openLog opens a log in a new folder (unless opts names one) with a test
// clock (unless opts has one) and no fsync; tests of fsync call Open.
func openLog(t *testing.T, opts Options) (*Log, *clock) {
	t.Helper()
	c := newClock()
	if opts.Dir == "" {
		opts.Dir = filepath.Join(t.TempDir(), "state")
	}
	if opts.Now == nil {
		opts.Now = c.Now
	}
	opts.NoSync = true
	l, _, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, c
}

func record(t *testing.T, l *Log, who Who, ev Event) Receipt {
	t.Helper()
	rc, err := l.Record(who, ev)
	if err != nil {
		t.Fatalf("Record(%s): %v", ev.Name(), err)
	}
	return rc
}

// lines is the log's lines, without newlines.
func lines(t *testing.T, dir string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, LogName))
	if err != nil {
		t.Fatal(err)
	}
	return splitLines(data)
}

func joinLines(ls [][]byte) []byte {
	var b bytes.Buffer
	for _, l := range ls {
		b.Write(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

var who = Who{Session: "desk", Device: "dev-7f3a"}
