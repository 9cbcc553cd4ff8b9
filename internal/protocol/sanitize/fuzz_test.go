package sanitize

import (
	"net/url"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// The fuzz targets check each result against invariants and against
// reference, a slow and plain restatement of X2 that shares no code with
// the package. Seeds live in testdata/fuzz.

// reference cleans s by the letter of the package doc: invalid runs to
// U+FFFD, then steps 1 and 2 rune by rune, then step 3.
func reference(s string, limit int, chars, multiline bool) string {
	var kept []rune
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if multiline && (r == '\n' || r == '\t') {
			kept = append(kept, r)
			continue
		}
		if r < 0x20 || r >= 0x7F && r <= 0x9F || refInvisible(r) {
			continue
		}
		kept = append(kept, r)
	}
	size := func(r rune) int {
		if chars {
			return 1
		}
		return utf8.RuneLen(r)
	}
	limit = max(limit, 0)
	total := 0
	for _, r := range kept {
		total += size(r)
	}
	if total <= limit {
		return string(kept)
	}
	end := "…"
	if size('…') > limit {
		end = ""
	}
	var b strings.Builder
	room := limit
	if end != "" {
		room -= size('…')
	}
	for _, r := range kept {
		if room -= size(r); room < 0 {
			break
		}
		b.WriteRune(r)
	}
	return b.String() + end
}

func refInvisible(r rune) bool {
	return strings.ContainsRune("\u200E\u200F\u061C\u202A\u202B\u202C\u202D\u202E"+
		"\u2066\u2067\u2068\u2069\u200B\u200C\u200D\u2060\uFEFF", r) ||
		r >= 0xE0000 && r <= 0xE007F
}

// fuzzLimit maps a fuzzed int to a limit that cuts often, zero and
// negative limits included.
func fuzzLimit(n int) int { return n % 80 }

func checkClean(t *testing.T, fn func(string, int) (string, bool), s string, limit int, chars, multiline bool) {
	t.Helper()
	out, changed := fn(s, limit)
	if !utf8.ValidString(out) {
		t.Fatalf("X2: output %q is not valid UTF-8", out)
	}
	size := len(out)
	if chars {
		size = utf8.RuneCountInString(out)
	}
	if size > max(limit, 0) {
		t.Fatalf("X2_3: output %q is %d long, limit %d", out, size, limit)
	}
	for _, r := range out {
		if multiline && (r == '\n' || r == '\t') {
			continue
		}
		if r < 0x20 || r >= 0x7F && r <= 0x9F || refInvisible(r) {
			t.Fatalf("X2_1/2: output %q keeps U+%04X", out, r)
		}
	}
	if want := reference(s, limit, chars, multiline); out != want {
		t.Fatalf("X2: (%q, %d) = %q, reference gives %q", s, limit, out, want)
	}
	if changed != (out != s) {
		t.Fatalf("X3: (%q, %d) = %q, changed %v", s, limit, out, changed)
	}
	if again, changed := fn(out, limit); again != out || changed {
		t.Fatalf("X2: cleaning %q again gives %q, changed %v", out, again, changed)
	}
}

func FuzzLine(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string, n int) {
		checkClean(t, Line, s, fuzzLimit(n), false, false)
	})
}

func FuzzBlock(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string, n int) {
		checkClean(t, Block, s, fuzzLimit(n), false, true)
	})
}

func FuzzLabel(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string, n int) {
		checkClean(t, Label, s, fuzzLimit(n)/4, true, false)
	})
}

func FuzzValidID(f *testing.F) {
	f.Fuzz(func(t *testing.T, id string) {
		want := len(id) >= 1 && len(id) <= 128 && utf8.ValidString(id) &&
			!strings.ContainsFunc(id, func(r rune) bool {
				return unicode.IsControl(r) || unicode.IsSpace(r) ||
					refInvisible(r) || strings.ContainsRune("/?#", r)
			})
		if got := ValidID(id); got != want {
			t.Fatalf("X5: ValidID(%q) = %v, want %v", id, got, want)
		}
		if ValidID(id) {
			// A valid id is clean text, so Line would keep it whole.
			if out, changed := Line(id, IDMaxBytes); out != id || changed {
				t.Fatalf("X5: valid id %q cleans to %q", id, out)
			}
		}
	})
}

func FuzzCheckLink(f *testing.F) {
	f.Fuzz(func(t *testing.T, link string) {
		if CheckLink(link) != nil {
			return
		}
		// X6: what passes is a clean https URL with a host and no user.
		if out, changed := Line(link, len(link)); out != link || changed {
			t.Fatalf("X6: accepted %q is not clean text", link)
		}
		if strings.ContainsFunc(link, unicode.IsSpace) {
			t.Fatalf("X6: accepted %q has a space", link)
		}
		if utf8.RuneCountInString(link) > LinkMaxChars {
			t.Fatalf("X6: accepted a link of %d characters", utf8.RuneCountInString(link))
		}
		u, err := url.Parse(link)
		if err != nil || !strings.EqualFold(u.Scheme, "https") || u.Host == "" || u.User != nil {
			t.Fatalf("X6: accepted %q (err %v)", link, err)
		}
	})
}
