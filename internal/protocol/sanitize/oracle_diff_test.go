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

// TestUsualStops: usual, the automaton's judgement of a usual stop, says
// "removed" for every code point X2 removes, with the oracle's length, and
// for nothing else, among all code points and all 4-byte windows, in
// single-line and multi-line fields (X2 steps 1, 2); the automaton stops
// in every character X2 removes; and after a usual stop it reads on in
// the state it would have reached without stopping: through the rest of
// a valid character to its end, and never past an invalid one (X2 step
// 0).
func TestUsualStops(t *testing.T) {
	for _, keep := range []uint32{0, layout} {
		a := automatonFor(keep)
		for r := rune(0); r <= utf8.MaxRune; r++ {
			if r >= 0xD800 && r <= 0xDFFF {
				continue
			}
			s := string(r) + "xyz"
			n, f := oracleChar(s, 0, keep)
			j, prev := a.scan(s, 0, stText)
			if f == oracleDropped && j >= n {
				t.Fatalf("X2: the automaton does not stop in U+%04X (keep %#x)", r, keep)
			}
			if f == oracleDropped && r < 0x100000 {
				// Every character X2 removes is a usual stop.
				if p, got, resume := a.usual(s, j, prev); resume == stStop || p != 0 || got != n {
					t.Fatalf("X2: usual(U+%04X, keep %#x) = %d, %d, state %d; want 0, %d", r, keep, p, got, resume, n)
				}
			}
			checkUsual(t, a, s)
		}
		// Bytes past the length the first byte gives vary only where
		// they count.
		for b0 := range 256 {
			for b1 := range 256 {
				for b2 := range 256 {
					for _, b3 := range []byte{0x00, 0x7F, 0x80, 0xBF, 0xC0} {
						checkUsual(t, a, string([]byte{byte(b0), byte(b1), byte(b2), b3})+"xyz")
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

// checkUsual runs the automaton over s, which ends in ASCII, from stop to
// usual stop, and checks each judgement of usual and the state it reads
// on in against the oracle, until a stop that is judge's.
func checkUsual(t *testing.T, a *automaton, s string) {
	t.Helper()
	i, st := 0, uint64(stText)
	for {
		j, prev := a.scan(s, i, st)
		if j == len(s) {
			return
		}
		p, n, resume := a.usual(s, j, prev)
		if resume == stStop {
			return
		}
		on, of := oracleChar(s, p, a.keep)
		if n > 0 && (of != oracleDropped || on != n) || n == 0 && of == oracleDropped {
			t.Fatalf("X2: usual(%q, %d) = %d, %d; the oracle says %d, %d (keep %#x)", s, j, p, n, on, of, a.keep)
		}
		// Reading on from j+1: to the end of a valid character in
		// stText without a stop, and to a stop within an invalid one.
		st = resume
		k := j + 1
		for ; k < len(s) && st != stStop && (of == oracleInvalid || k < p+on); k++ {
			st = a.step[s[k]] >> st & 63
			if of == oracleInvalid && st == stText {
				t.Fatalf("X2: after the stop at %d in %q the automaton reads past invalid bytes (keep %#x)", j, s, a.keep)
			}
		}
		if of != oracleInvalid && (st != stText || k != p+on) {
			t.Fatalf("X2: after the stop at %d in %q the automaton is in state %d at %d, want %d at %d (keep %#x)", j, s, st, k, stText, p+on, a.keep)
		}
		if of == oracleInvalid {
			return
		}
		i, st = k, stText
	}
}
