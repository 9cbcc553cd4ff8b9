package wire

import (
	"encoding/json"
	"fmt"

	"github.com/collie-linux/collie/internal/protocol/sanitize"
)

// counter counts the bytes written to it.
type counter int

func (c *counter) Write(p []byte) (int, error) {
	*c += counter(len(p))
	return len(p), nil
}

// jsonLen is the length of v encoded as compact JSON without HTML
// escaping, as the reference agent encodes a snapshot: the measure of a
// state's size (State.Size).
func jsonLen(v any) int {
	var c counter
	enc := json.NewEncoder(&c)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return SnapshotCap + 1 // never for the protocol's types; counts as over the cap
	}
	return int(c) - 1 // the newline Encode ends with
}

// listField is what a list member left out when empty adds to its
// object's JSON: `,"name":[...]`, or nothing.
func listField[T any](name string, l []T) int {
	if len(l) == 0 {
		return 0
	}
	return len(`,"":`) + len(name) + jsonLen(l)
}

func validID(id string) bool { return sanitize.ValidID(id) }

// quoteClip quotes an untrusted value, clipped, for a report.
func quoteClip(s string) string { return fmt.Sprintf("%q", clip(s)) }
