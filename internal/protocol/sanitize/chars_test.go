package sanitize

import "testing"

func TestPrintable8(t *testing.T) {
	// Every byte value in every position of an otherwise printable word:
	// the word test must agree with the byte test of X2 step 1.
	for pos := range 8 {
		for b := range 256 {
			w := []byte("abcdefgh")
			w[pos] = byte(b)
			want := b >= 0x20 && b <= 0x7E
			if got := printable8(string(w)); got != want {
				t.Errorf("X2_1: printable8 with 0x%02X at %d = %v, want %v", b, pos, got, want)
			}
		}
	}
	// Pairs of bytes, for carries and borrows crossing between them.
	for b1 := range 256 {
		for b2 := range 256 {
			w := string([]byte{'x', 'x', 'x', byte(b1), byte(b2), 'x', 'x', 'x'})
			want := b1 >= 0x20 && b1 <= 0x7E && b2 >= 0x20 && b2 <= 0x7E
			if got := printable8(w); got != want {
				t.Fatalf("X2_1: printable8(%q) = %v, want %v", w, got, want)
			}
		}
	}
}
