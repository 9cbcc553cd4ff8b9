package hook

import (
	"fmt"
	"unicode/utf8"

	"github.com/collie-linux/collie/internal/protocol/sanitize"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Excerpt fits s into limit bytes for a card: cleaned as a block (lines
// kept, X2) and, when still too long, its head and its tail with a line
// "[… N bytes not shown …]" between them, so the end of a long command or
// file, what a yes would run last, is never hidden without saying so
// (X3). changed reports that cleaning or cutting changed s. Every card
// made of a tool's input (the hook's, collie mcp's approve) is made with
// it.
func Excerpt(s string, limit int) (out string, changed bool) {
	clean, changed := sanitize.Block(s, 3*len(s)+4) // cleans, never cuts
	if len(clean) <= limit {
		return clean, changed
	}
	// The marker's length with the widest count it can show.
	room := limit - len(marker(len(clean)))
	if room < 8 {
		out, _ = sanitize.Block(clean, limit)
		return out, true
	}
	head := cutBack(clean, room/2)
	tail := cutFront(clean, room-len(head))
	return head + marker(len(clean)-len(head)-len(tail)) + tail, true
}

func marker(n int) string { return fmt.Sprintf("\n[… %d bytes not shown …]\n", n) }

// cutBack is the longest prefix of s of at most n bytes that ends at a
// character boundary.
func cutBack(s string, n int) string {
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// cutFront is the longest suffix of s of at most n bytes that starts at a
// character boundary.
func cutFront(s string, n int) string {
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// DetailOf is s as a question's detail, the whole text a card shows on a
// tap when its rationale holds only an excerpt: s itself up to
// wire.DetailBytes, its head and tail past that (the card is marked
// shortened either way). The agent cleans it like the rationale.
func DetailOf(s string) string {
	if len(s) <= wire.DetailBytes && utf8.ValidString(s) {
		return s
	}
	out, _ := Excerpt(s, wire.DetailBytes)
	return out
}
