package upstream

import (
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/protocol/sanitize"
)

// FuzzValidETag: an ETag that is kept is safe to send back in
// If-None-Match and to show: quoted, visible ASCII, at most MaxETagBytes.
func FuzzValidETag(f *testing.F) {
	for _, s := range []string{`"a"`, `W/"v1"`, `""`, `"a b"`, "\"\x1b\"", `W/`, `"`, "\"\u202e\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tag string) {
		if !validETag(tag) {
			return
		}
		if len(tag) > MaxETagBytes || sanitize.TerminalLine(tag) != tag {
			t.Fatalf("kept %q", tag)
		}
		body := strings.TrimPrefix(tag, "W/")
		if len(body) < 2 || body[0] != '"' || body[len(body)-1] != '"' || strings.Contains(body[1:len(body)-1], `"`) {
			t.Fatalf("kept %q, which is not a quoted entity tag", tag)
		}
		for i := 0; i < len(tag); i++ {
			if tag[i] <= ' ' || tag[i] >= 0x7F {
				t.Fatalf("kept %q with byte %#x", tag, tag[i])
			}
		}
	})
}

func TestValidCode(t *testing.T) {
	for code, want := range map[string]bool{
		"caller-refused": true, "stale-revision": true, "x.y-1": true,
		"": false, "Caller": false, "a b": false, "a\x1b": false, strings.Repeat("a", 65): false, "é": false,
	} {
		if got := validCode(code); got != want {
			t.Errorf("validCode(%q) = %v, want %v", code, got, want)
		}
	}
}
