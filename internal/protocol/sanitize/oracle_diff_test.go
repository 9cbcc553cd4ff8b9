package sanitize

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCleanVsOracle: the cleaner gives the same output, byte for byte,
// and the same changed flag as the oracle (the cleaner before the byte
// automaton, kept in oracle_test.go), for Line, Block and Label, on
// any text and any limit (X2, X3). Seeds live in
// testdata/fuzz/FuzzCleanVsOracle.
func FuzzCleanVsOracle(f *testing.F) {
	f.Add(multilingual(300), 200)
	f.Add(multilingual(1000), 1<<20)
	f.Fuzz(func(t *testing.T, s string, n int) {
		checkVsOracle(t, s, n)
		// Limits the fuzzer would rarely reach: around the text's length
		// in bytes, where the cut and no-cut paths meet.
		checkVsOracle(t, s, len(s)+n%8)
	})
}

func checkVsOracle(t *testing.T, s string, n int) {
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
		want, wantChanged := oracleClean(s, tc.limit, tc.u, tc.keep)
		if got != want || gotChanged != wantChanged {
			t.Fatalf("X2: %s(%q, %d) = %q, %v; the oracle gives %q, %v",
				tc.name, s, tc.limit, got, gotChanged, want, wantChanged)
		}
	}
}

// TestCleanVsOracleEdges: every kind of character and dirt next to every
// other, at every limit around the text's length (X2 step 3), and every
// alignment of a removed character against an 8-byte word, against the
// oracle.
func TestCleanVsOracleEdges(t *testing.T) {
	pieces := []string{"a", " ", "~", "é", "ж", "世", "😀", "\u200b", "\u202e", "\u0085", "\u009f", "\u00a0",
		"\x1b", "\x00", "\x7f", "\n", "\t", "\r", "\xff", "\xc2", "\xe2\x80", "\xf3\xa0\x80", "\xed\xa0\x80",
		"\U000E0041", "\U000E0080", "\uFEFF", "\uFEFE", "\u061C", "\u061B", "\u2066", "\u206A", "…", "\uFFFD"}
	for _, a := range pieces {
		for _, b := range pieces {
			for _, c := range pieces {
				s := "xy" + a + b + "z" + c
				for n := -1; n <= len(s)+8; n++ {
					checkVsOracle(t, s, n)
				}
			}
		}
	}
	for _, p := range pieces {
		for pad := range 17 {
			for _, fill := range []string{"a", "é", "世"} {
				s := strings.Repeat(fill, pad) + p + strings.Repeat("b", 17-pad) + p
				checkVsOracle(t, s, 1<<20)
				checkVsOracle(t, s, len(s)-1)
			}
		}
	}
	for _, s := range []string{multilingual(4 << 10), mixed(4 << 10), sprinkled(4 << 10),
		strings.Repeat("\xff", 3000), strings.Repeat("\u200b", 3000) + "abc"} {
		for _, n := range []int{0, 1, 2, 3, 4, 100, 1000, 2047, 2048, 4095, 4096, 8192} {
			checkVsOracle(t, s, n)
		}
	}
}

// TestDropLen: dropLen, the automaton's judgement of a usual stop, says
// "removed" for every code point X2 removes and, among all 4-byte
// windows, only for whole valid encodings of one of them, with the
// oracle's length, in single-line and multi-line fields (X2 steps 1, 2).
func TestDropLen(t *testing.T) {
	for _, keep := range []uint32{0, layout} {
		for r := rune(0); r <= utf8.MaxRune; r++ {
			if r >= 0xD800 && r <= 0xDFFF {
				continue
			}
			s := string(r) + "xyz"
			n, f := oracleChar(s, 0, keep)
			want := 0
			if f == oracleDropped {
				want = n
			}
			if got := dropLen(s, 0, keep); got != want {
				t.Fatalf("X2: dropLen(U+%04X, keep %#x) = %d, want %d", r, keep, got, want)
			}
		}
		// A key holds only the bytes of its character: bytes past the
		// length its first byte gives vary only where they count.
		for b0 := range 256 {
			for b1 := range 256 {
				for b2 := range 256 {
					for _, b3 := range []byte{0x00, 0x7F, 0x80, 0xBF, 0xC0} {
						s := string([]byte{byte(b0), byte(b1), byte(b2), b3})
						if n := dropLen(s, 0, keep); n != 0 {
							if on, of := oracleChar(s, 0, keep); of != oracleDropped || on != n {
								t.Fatalf("X2: dropLen(%q, keep %#x) = %d; the oracle says %d, %d", s, keep, n, on, of)
							}
						}
						if b0 < 0xF0 {
							break
						}
					}
					if b0 < 0xE0 {
						break
					}
				}
				if b0 < 0xC0 {
					break
				}
			}
		}
	}
}
