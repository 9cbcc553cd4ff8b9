package testbuf

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestBuffer: writes from many goroutines all land whole, while others
// read; a nil Buffer reads as empty.
func TestBuffer(t *testing.T) {
	var b Buffer
	const writers, lines = 8, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range lines {
				fmt.Fprintf(&b, "w%d line %d\n", w, i)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	out := b.String()
	if got := strings.Count(out, "\n"); got != writers*lines {
		t.Fatalf("%d lines, want %d", got, writers*lines)
	}
	for w := range writers {
		if !strings.Contains(out, fmt.Sprintf("w%d line %d\n", w, lines-1)) {
			t.Errorf("writer %d's last line is missing", w)
		}
	}
	var none *Buffer
	if none.String() != "" {
		t.Error("a nil Buffer is not empty")
	}
}
