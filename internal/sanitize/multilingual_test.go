package sanitize

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// Words of the scripts an agent's reply mixes: Latin with accents,
// Cyrillic, Greek, CJK, Arabic, Hebrew, emoji, and plain ASCII (code,
// paths, numbers), each a few words long so that scripts change often.
var multilingualWords = [][]string{
	{"the", "build", "failed", "see", "log", "fix", "is", "in", "main.go:42", "run", "go", "test", "./...", "again"},
	{"Grüße", "café", "naïve", "résumé", "façade", "señor", "Ångström", "smörgåsbord", "déjà", "vu", "Łódź", "crème", "brûlée"},
	{"Привет", "мир", "сборка", "упала", "смотрите", "журнал", "исправление", "файл", "строка"},
	{"Καλημέρα", "κόσμε", "σφάλμα", "αρχείο", "γραμμή", "διόρθωση", "δοκιμή"},
	{"世界", "你好", "构建失败", "请查看日志", "修复", "文件", "日本語", "テスト", "한국어", "빌드"},
	{"مرحبا", "بالعالم", "خطأ", "في", "البناء", "السجل", "الملف"},
	{"שלום", "עולם", "שגיאה", "בבנייה", "קובץ", "יומן"},
	{"😀", "🚀", "👍🏽", "🎉", "🔥", "✅", "❌", "🙂"},
}

// What the cleaner removes from a multi-line field (X2 steps 1 and 2):
// C0 controls (ESC before an escape sequence, whose printable rest
// stays), DEL, C1 controls, direction marks, bidi embeddings, overrides
// and isolates, zero-width characters, the word joiner, BOM and tags.
var hostileChars = []string{
	"\x00", "\x07", "\x08", "\x1b", "\r", "\x7f", "\u0085", "\u009b", "\u008d",
	"\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u061c",
	"\u202a", "\u202b", "\u202c", "\u202d", "\u202e",
	"\u2060", "\u2066", "\u2067", "\u2068", "\u2069", "\ufeff",
	"\U000E0001", "\U000E0041", "\U000E007F",
}

// multilingual returns n bytes (fewer only to end at a whole character)
// of mixed-script text with a removed character every 25 bytes, six per
// 150, the same text for the same n: words of random scripts between
// spaces, punctuation and line breaks, hostile characters landing
// between words and inside them, an ESC before "[31m" now and then.
func multilingual(n int) string {
	rng := rand.New(rand.NewPCG(23, 150))
	var b strings.Builder
	b.Grow(n + 64)
	next := 25 // the length at which the next hostile character goes in
	for b.Len() < n {
		words := multilingualWords[rng.IntN(len(multilingualWords))]
		w := words[rng.IntN(len(words))]
		if b.Len()+len(w) >= next {
			// Inside the word or before it, at a whole character.
			k := min(max(next-b.Len(), 0), len(w))
			for k > 0 && k < len(w) && !utf8.RuneStart(w[k]) {
				k--
			}
			h := hostileChars[rng.IntN(len(hostileChars))]
			if h == "\x1b" {
				h += "[31m"
			}
			b.WriteString(w[:k])
			b.WriteString(h)
			w = w[k:]
			next += 25
		}
		b.WriteString(w)
		switch r := rng.IntN(12); {
		case r == 0:
			b.WriteString(".\n")
		case r == 1:
			b.WriteString(", ")
		case r == 2:
			b.WriteString("\n\t")
		default:
			b.WriteByte(' ')
		}
	}
	s := b.String()[:n]
	for len(s) > 0 && !utf8.ValidString(s[len(s)-min(len(s), utf8.UTFMax):]) {
		s = s[:len(s)-1]
	}
	return s
}

// TestMultilingualText: the benchmark text is what it claims to be: most
// of it multi-byte, six removals per 150 bytes, the same every time.
func TestMultilingualText(t *testing.T) {
	s := multilingual(64 << 10)
	if s != multilingual(64<<10) {
		t.Fatal("multilingual is not deterministic")
	}
	if !utf8.ValidString(s) {
		t.Fatal("multilingual text is not valid UTF-8")
	}
	removed := 0
	multi := 0
	for i := 0; i < len(s); {
		n, f := char(s, i, layout)
		if f == dropped {
			removed++
		}
		if n > 1 && f == kept {
			multi += n
		}
		i += n
	}
	per150 := float64(removed) * 150 / float64(len(s))
	t.Logf("%d bytes: %.2f removals per 150 bytes, %.0f%% multi-byte; starts %q", len(s), per150, float64(multi)*100/float64(len(s)), s[:300])
	if per150 < 5.5 || per150 > 6.5 {
		t.Errorf("%.2f removals per 150 bytes, want about 6", per150)
	}
	if share := float64(multi) / float64(len(s)); share < 0.4 {
		t.Errorf("%.0f%% of the bytes are in multi-byte characters, want at least 40%%", share*100)
	}
}

// BenchmarkMultilingualVsOracle is the cleaner's speed figure on the text
// agents send when they send hostile text: Block on mixed scripts with a
// removed character every 25 bytes, against the cleaner before it judged
// bytes by class (oracleClean, kept in oracle_test.go), run alternately so
// both see the same machine. new_GB/s and oracle_GB/s are each side's
// throughput from the fastest of its runs (a descheduled run on a shared
// machine says nothing about the code), x_oracle how many times faster
// the new one is.
func BenchmarkMultilingualVsOracle(b *testing.B) {
	for _, tc := range []struct {
		name  string
		fn    func(string, int) (string, bool)
		s     string
		limit int
		u     unit
		keep  uint32
	}{
		{"Block_4KiB", Block, multilingual(4 << 10), MessageBytes, inBytes, layout},
		{"Block_64KiB", Block, multilingual(64 << 10), MessageBytes, inBytes, layout},
		{"Block_64KiB_cut_to_16KiB", Block, multilingual(64 << 10), OutputBytes, inBytes, layout},
		{"Line_256B", Line, strings.ReplaceAll(multilingual(TitleBytes), "\n", " "), TitleBytes, inBytes, 0},
		{"Block_clean_64KiB", Block, fst(oracleClean(multilingual(64<<10), MessageBytes, inBytes, layout)), MessageBytes, inBytes, layout},
	} {
		b.Run(tc.name, func(b *testing.B) {
			got, gotChanged := tc.fn(tc.s, tc.limit)
			want, wantChanged := oracleClean(tc.s, tc.limit, tc.u, tc.keep)
			if got != want || gotChanged != wantChanged {
				b.Fatal("the cleaner and the oracle disagree")
			}
			b.SetBytes(int64(len(tc.s)))
			var fast, slow best
			for b.Loop() {
				t0 := time.Now()
				tc.fn(tc.s, tc.limit)
				t1 := time.Now()
				oracleClean(tc.s, tc.limit, tc.u, tc.keep)
				fast.add(t1.Sub(t0))
				slow.add(time.Since(t1))
			}
			b.ReportMetric(fast.mbps(len(tc.s))/1e3, "new_GB/s")
			b.ReportMetric(slow.mbps(len(tc.s))/1e3, "oracle_GB/s")
			b.ReportMetric(float64(slow.d)/float64(fast.d), "x_oracle")
		})
	}
}
