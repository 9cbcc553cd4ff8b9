package sanitize

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
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

// sprinkled returns about n bytes of mostly clean text, accents, CJK and
// emoji included, with an invisible, bidi or C1 character every 40 bytes
// or so: what an agent's reply with pasted or hostile text looks like.
func sprinkled(n int) string {
	const chunk = "The build of päckage foo\u200b failed; see the log.\n" +
		"Grüße aus 世界 😀, the fix\u202e is in bar.go (line 42).\n" +
		"Run `go test ./...`\u0085 again, then\u2066 ask the user\u2069 first.\n" +
		"\tindented: café, naïve, résumé\U000E0041 and so on.\uFEFF\n"
	return strings.Repeat(chunk, n/len(chunk)+1)[:n]
}

// BenchmarkMixedVsLegacy is the cleaner's speed figure: Block on
// 64 KiB of mixed text, the cleaner against the one before it was made faster
// (legacyClean, kept in legacy_test.go) and the one before the byte
// automaton (oracleClean, kept in oracle_test.go), run alternately so all
// see the same machine. new_MB/s and legacy_MB/s are their throughputs,
// x_legacy and x_oracle how many times faster the new one is than each,
// each from the fastest of its runs: on a shared machine a run that was
// descheduled says nothing about the code. Each case is one text cleaned
// over and over, which a branch predictor may learn (see
// BenchmarkMultilingualVsOracle).
func BenchmarkMixedVsLegacy(b *testing.B) {
	for _, tc := range []struct {
		name  string
		s     string
		limit int
	}{
		{"sprinkled_64KiB", sprinkled(64 << 10), MessageBytes},
		{"dense_64KiB", mixed(64 << 10), MessageBytes},
		{"dense_64KiB_cut_to_16KiB", mixed(64 << 10), OutputBytes},
		{"clean_utf8_64KiB", utf8Text(64 << 10), MessageBytes},
		{"clean_utf8_64KiB_cut_to_16KiB", utf8Text(64 << 10), OutputBytes},
	} {
		b.Run(tc.name, func(b *testing.B) {
			if got, want := fst(Block(tc.s, tc.limit)), fst(legacyClean(tc.s, tc.limit, inBytes, layout)); got != want {
				b.Fatal("the new cleaner and the legacy one disagree")
			}
			b.SetBytes(int64(len(tc.s)))
			var fast, slow, oracle best
			for b.Loop() {
				t0 := time.Now()
				Block(tc.s, tc.limit)
				t1 := time.Now()
				legacyClean(tc.s, tc.limit, inBytes, layout)
				t2 := time.Now()
				oracleClean(tc.s, tc.limit, inBytes, layout)
				fast.add(t1.Sub(t0))
				slow.add(t2.Sub(t1))
				oracle.add(time.Since(t2))
			}
			b.ReportMetric(fast.mbps(len(tc.s)), "new_MB/s")
			b.ReportMetric(slow.mbps(len(tc.s)), "legacy_MB/s")
			b.ReportMetric(float64(slow.d)/float64(fast.d), "x_legacy")
			b.ReportMetric(float64(oracle.d)/float64(fast.d), "x_oracle")
			reportLoad(b)
		})
	}
}

// best keeps the shortest of a series of timings.
type best struct{ d time.Duration }

// add reports whether d is the shortest so far.
func (m *best) add(d time.Duration) bool {
	if m.d == 0 || d < m.d {
		m.d = max(d, 1)
		return true
	}
	return false
}

// mbps is the throughput, in MB/s, of n bytes in the best time.
func (m *best) mbps(n int) float64 { return float64(n) / m.d.Seconds() / 1e6 }

// reportLoad reports the one-minute load average as the metric load, so
// that a figure is read with the load it was taken at.
func reportLoad(b *testing.B) {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		b.Logf("no load average: %v", err)
		return
	}
	if f := strings.Fields(string(raw)); len(f) > 0 {
		if load, err := strconv.ParseFloat(f[0], 64); err == nil {
			b.ReportMetric(load, "load")
		}
	}
}

// utf8Text returns at most n bytes of clean text, most of it multi-byte.
func utf8Text(n int) string {
	const line = "Grüße, 世界! 😀 café\n"
	return strings.Repeat(line, n/len(line))
}

func fst(s string, _ bool) string { return s }
