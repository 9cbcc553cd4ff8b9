package sanitize

import (
	"strings"
	"testing"
)

// prose returns about n bytes of clean printable ASCII in lines.
func prose(n int) string {
	const line = "The quick brown fox jumps over the lazy dog; 0123456789 (ok).\n"
	return strings.Repeat(line, n/len(line)+1)[:n]
}

// mixed returns about n bytes of hostile text: multi-byte characters with
// bidi overrides, zero-width and tag characters, C1 and C0 controls, and
// invalid UTF-8 scattered through it.
func mixed(n int) string {
	const chunk = "Grüße, 世界 😀 \u202Eevil\u202C ok\u200B\u200D x\U000E0041\U000E0042 " +
		"\u0085next\u009b31m\x1b[0m \xff\xfe tail\r\n\tindent café\n"
	return strings.Repeat(chunk, n/len(chunk)+1)[:n]
}

func benchClean(b *testing.B, fn func(string, int) (string, bool), s string, limit int) {
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		fn(s, limit)
	}
}

func BenchmarkLineASCII(b *testing.B) {
	title := strings.ReplaceAll(prose(TitleBytes), "\n", " ")
	long := strings.ReplaceAll(prose(4<<10), "\n", " ")
	b.Run("256B", func(b *testing.B) { benchClean(b, Line, title, TitleBytes) })
	b.Run("4KiB", func(b *testing.B) { benchClean(b, Line, long, 4<<10) })
	b.Run("4KiB_cut_to_256B", func(b *testing.B) { benchClean(b, Line, long, TitleBytes) })
}

func BenchmarkBlockASCII(b *testing.B) {
	b.Run("4KiB", func(b *testing.B) { benchClean(b, Block, prose(4<<10), MessageBytes) })
	b.Run("64KiB", func(b *testing.B) { benchClean(b, Block, prose(64<<10), MessageBytes) })
}

func BenchmarkBlockUTF8Clean(b *testing.B) {
	s := strings.Repeat("Grüße, 世界! 😀 café\n", 64<<10/26)
	benchClean(b, Block, s, 1<<20)
}

func BenchmarkBlockMixed(b *testing.B) {
	b.Run("4KiB", func(b *testing.B) { benchClean(b, Block, mixed(4<<10), MessageBytes) })
	b.Run("64KiB", func(b *testing.B) { benchClean(b, Block, mixed(64<<10), MessageBytes) })
	b.Run("64KiB_cut_to_16KiB", func(b *testing.B) { benchClean(b, Block, mixed(64<<10), OutputBytes) })
}

func BenchmarkLabel(b *testing.B) {
	b.Run("ASCII", func(b *testing.B) { benchClean(b, Label, "Run tests", BeltChars) })
	b.Run("cut_multibyte", func(b *testing.B) { benchClean(b, Label, strings.Repeat("日本語", 10), BeltChars) })
}

func BenchmarkValidID(b *testing.B) {
	for _, tc := range []struct{ name, id string }{
		{"ASCII_36B", "conv-0f8fad5b-d9cb-469f-a165-70867728"},
		{"ASCII_128B", strings.Repeat("a1-", 42) + "xy"},
		{"multibyte", "tâche-日本語-😀-42"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.id)))
			b.ReportAllocs()
			for b.Loop() {
				ValidID(tc.id)
			}
		})
	}
}

func BenchmarkCheckLink(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = CheckLink("https://example.com/docs/page?id=42#section")
	}
}
