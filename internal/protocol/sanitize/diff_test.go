package sanitize

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzFastVsLegacy: the fast cleaner gives the same output, byte
// for byte, and the same changed flag as the one before it (legacyClean,
// kept in legacy_test.go), for Line, Block and Label (X2, X3).
func FuzzFastVsLegacy(f *testing.F) {
	f.Add("a\u200bb\xff\xfe\u202ec", 10)
	f.Add(mixed(300), 200)
	f.Add(sprinkled(300), 301)
	f.Fuzz(func(t *testing.T, s string, n int) {
		checkVsLegacy(t, s, n)
	})
}

func checkVsLegacy(t *testing.T, s string, n int) {
	t.Helper()
	for _, tc := range []struct {
		name  string
		fn    func(string, int) (string, bool)
		limit int
		u     unit
		keep  uint32
	}{
		{"Line", Line, n, inBytes, 0},
		{"Block", Block, n, inBytes, layout},
		{"Label", Label, n / 4, inChars, 0},
	} {
		got, gotChanged := tc.fn(s, tc.limit)
		want, wantChanged := legacyClean(s, tc.limit, tc.u, tc.keep)
		if got != want || gotChanged != wantChanged {
			t.Fatalf("X2: %s(%q, %d) = %q, %v; the legacy cleaner gives %q, %v",
				tc.name, s, tc.limit, got, gotChanged, want, wantChanged)
		}
	}
}

// TestFastVsLegacyEdges: every limit around every character boundary of
// texts that put each kind of dirt where a cut falls (X2 step 3), against
// the legacy cleaner.
func TestFastVsLegacyEdges(t *testing.T) {
	pieces := []string{"a", "é", "世", "😀", "\u200b", "\u202e", "\u0085", "\x1b", "\n", "\t", "\r",
		"\xff", "\xe2\x80", "\xf3\xa0\x80", "\U000E0041", "\uFEFF", "\u061C", "\u2066", "…", "\uFFFD"}
	for _, a := range pieces {
		for _, b := range pieces {
			for _, c := range pieces {
				s := "xy" + a + b + "z" + c
				for n := -1; n <= len(s)+8; n++ {
					checkVsLegacy(t, s, n)
				}
			}
		}
	}
	for _, s := range []string{mixed(4 << 10), sprinkled(4 << 10), strings.Repeat("\xff", 3000), strings.Repeat("\u200b", 3000) + "abc"} {
		for _, n := range []int{0, 1, 2, 3, 4, 100, 1000, 2047, 2048, 4095, 4096, 8192} {
			checkVsLegacy(t, s, n)
		}
	}
}

// TestLead: the lead table agrees with unicode/utf8 on every byte from
// 0x80 up: the length of the sequence it begins, and which second bytes
// make it valid; and it marks every lead of a character X2 removes.
func TestLead(t *testing.T) {
	for c := 0x80; c <= 0xFF; c++ {
		x := lead[c-0x80]
		n := int(x & 7)
		wantN := 0
		for b1 := 0x80; b1 <= 0xBF && wantN == 0; b1++ {
			seq := []byte{byte(c), byte(b1), 0x80, 0x80}
			if r, size := utf8.DecodeRune(seq); r != utf8.RuneError {
				wantN = size
			}
		}
		if n != wantN {
			t.Errorf("X2_0: lead[0x%02X] length %d, want %d", c, n, wantN)
		}
		if n == 0 {
			continue
		}
		for b1 := 0; b1 <= 0xFF; b1++ {
			seq := []byte{byte(c), byte(b1), 0x80, 0x80}[:n]
			r, _ := utf8.DecodeRune(seq)
			ok := byte(b1) >= secondLo[x>>4] && byte(b1) <= secondHi[x>>4]
			if ok != (r != utf8.RuneError) {
				t.Errorf("X2_0: lead[0x%02X] second byte 0x%02X valid %v, utf8 says %v", c, b1, ok, !ok)
			}
		}
	}
	for r := rune(0x80); r <= utf8.MaxRune; r++ {
		if (legacyIsControl(r) || legacyIsInvisible(r)) && lead[string(r)[0]-0x80]&leadMayDrop == 0 {
			t.Fatalf("X2_1/2: U+%04X is removed but its lead 0x%02X is not marked", r, string(r)[0])
		}
	}
}

// TestCharEveryCodePoint: char judges every code point, and every byte
// sequence of up to 3 bytes, as the legacy cleaner's utf8.DecodeRune,
// isControl and isInvisible do (X2 steps 0–2), and the automaton stops
// at the same place as the oracle's cleanPrefix and measures what it
// stops at the same way, in single-line and multi-line fields.
func TestCharEveryCodePoint(t *testing.T) {
	want := func(s string, keep uint32) (int, fate) {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n == 1:
			return 1, invalid
		case r < utf8.RuneSelf && legacyKeptASCII(byte(r), keep):
			return 1, kept
		case r < utf8.RuneSelf, legacyIsControl(r), legacyIsInvisible(r):
			return n, dropped
		}
		return n, kept
	}
	check := func(s string) {
		for _, keep := range []uint32{0, layout} {
			n, f := char(s, 0, keep)
			wn, wf := want(s, keep)
			if n != wn || f != wf {
				t.Fatalf("X2: char(%q, keep %#x) = %d, %d; want %d, %d", s, keep, n, f, wn, wf)
			}
			// The automaton stops at the same place, and measures what
			// it stops at as the oracle does.
			p, an, af := automatonFor(keep).next(s, 0)
			if want := oracleCleanPrefix(s, keep); p != want {
				t.Fatalf("X2: automaton stops %q at %d, the oracle at %d", s, p, want)
			}
			if (p > 0) != (f == kept) {
				t.Fatalf("X2: automaton stops %q at %d, but char says %d", s, p, f)
			}
			if p < len(s) {
				on, of := oracleChar(s, p, keep)
				if of == oracleInvalid {
					on, _ = oracleDirtAt(s, p)
				}
				if an != on || int(af) != int(of) {
					t.Fatalf("X2: automaton measures %q at %d as %d, %d; the oracle %d, %d", s, p, an, af, on, of)
				}
			}
		}
	}
	for r := rune(0); r <= utf8.MaxRune; r++ {
		check(string(r) + "x")
	}
	// Every 2- and 3-byte sequence that begins with a lead byte (C0–FF);
	// what follows any other byte does not matter to it.
	for b0 := 0xC0; b0 <= 0xFF; b0++ {
		for b1 := range 256 {
			for b2 := range 256 {
				check(string([]byte{byte(b0), byte(b1), byte(b2)}))
			}
			check(string([]byte{byte(b0), byte(b1)}))
		}
	}
	for c := 0xF0; c <= 0xF7; c++ { // 4-byte leads with every interesting next byte
		for _, b1 := range []byte{0x00, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xA1, 0xBF, 0xC0, 0xFF} {
			for _, b2 := range []byte{0x00, 0x80, 0x81, 0x82, 0xBF, 0xC0} {
				for _, b3 := range []byte{0x00, 0x80, 0xBF, 0xC0} {
					s := string([]byte{byte(c), b1, b2, b3})
					for k := 1; k <= 4; k++ {
						check(s[:k])
					}
				}
			}
		}
	}
}
