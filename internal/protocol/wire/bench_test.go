package wire

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// Benchmarks of the snapshot read. The machine they run on is
// usually shared, so the figure that means something is a ratio measured
// side by side in one run, not a time: BenchmarkSnapshotVsUnmarshal runs
// DecodeSnapshot and encoding/json.Unmarshal of the same bytes alternately
// and reports how many times longer the first takes (x_unmarshal). The
// budget is 1.5: reading, decoding by the closed schema and cleaning every
// string of a 4 MiB snapshot costs at most half again a plain Unmarshal
// that does none of that.

// bigSnapshot makes a snapshot of about n bytes with many items. A dirty
// one has invisible, bidi and C1 characters sprinkled through its text.
func bigSnapshot(n int, dirty bool) []byte {
	text := "The build finished; 3 tests failed in package foo. See the log for details."
	if dirty {
		text = "The build\u200b finished\u202e; 3 tests\u0085 failed in päckage foo 😀. See the log."
	}
	var items []Item
	size := 0
	for i := 0; size < n; i++ {
		it := Item{ID: "i" + strings.Repeat("x", i%5) + string(rune('a'+i%26)) + itoa(i), Kind: KindText, Role: "agent", Text: text}
		items = append(items, it)
		size += len(text) + 60
	}
	s := Snapshot{Spaces: []Space{{ID: "s", Title: "S", Tabs: []Tab{{ID: "t", Title: "T",
		Conversations: []Conversation{{ID: "c", Title: "C", Items: items}}}}}}}
	b, _ := json.Marshal(s)
	return b
}

func itoa(i int) string {
	var b [20]byte
	n := len(b)
	for {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
		if i == 0 {
			return string(b[n:])
		}
	}
}

// snapshotCases are the 4 MiB snapshots the benchmarks read.
func snapshotCases() []struct {
	name string
	data []byte
} {
	return []struct {
		name string
		data []byte
	}{
		{"clean", bigSnapshot(4<<20-4096, false)},
		{"dirty", bigSnapshot(4<<20-4096, true)},
		{"markdown_mixed", markdownSnapshot(4<<20 - 4096)},
	}
}

// markdownSnapshot makes a snapshot of about n bytes of long markdown
// items (an agent "full of markdown"), their text mixed: accents,
// CJK and emoji, with invisible, bidi, tag and C1 characters sprinkled in.
func markdownSnapshot(n int) []byte {
	const para = "## Step 3: build the package\\n\\nThe `go build` run failed in *päckage* foo " +
		"(see [the log](https://example.com/log)); 世界 😀 the\\u200b fix\\u202e is in bar.go.\\n" +
		"- check the output\\u0085 twice\\n- ask\\u2066 the user\\u2069 first\\n\\ttabbed line\\udb40\\udc41\\n"
	var b bytes.Buffer
	b.WriteString(`{"spaces":[{"id":"s","title":"S","tabs":[{"id":"t","title":"T","conversations":[{"id":"c","title":"C","items":[`)
	for i := 0; b.Len() < n-32<<10; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"id":"m` + itoa(i) + `","kind":"markdown","text":"`)
		for k := 0; k < 24<<10/len(para); k++ {
			b.WriteString(para)
		}
		b.WriteString(`"}`)
	}
	b.WriteString(`]}]}]}]}`)
	return b.Bytes()
}

// BenchmarkSnapshotVsUnmarshal is the snapshot figure: DecodeSnapshot
// (read with its Content-Length, strict decode, clean) of a 4 MiB snapshot
// against encoding/json.Unmarshal of the same bytes into the same type,
// run alternately so both see the same machine. x_unmarshal is the ratio
// of their times, each the fastest of its runs: on a shared machine a run
// that was descheduled says nothing about the code. ns/op covers one of
// each.
func BenchmarkSnapshotVsUnmarshal(b *testing.B) {
	for _, tc := range snapshotCases() {
		b.Run(tc.name, func(b *testing.B) {
			var collie, std time.Duration
			b.SetBytes(int64(len(tc.data)))
			for b.Loop() {
				t0 := time.Now()
				if _, _, err := DecodeSnapshot(bytes.NewReader(tc.data), int64(len(tc.data))); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				var s Snapshot
				if err := json.Unmarshal(tc.data, &s); err != nil {
					b.Fatal(err)
				}
				collie = fastest(collie, t1.Sub(t0))
				std = fastest(std, time.Since(t1))
			}
			b.ReportMetric(float64(collie)/float64(std), "x_unmarshal")
			b.ReportMetric(collie.Seconds()*1e3, "collie_ms")
			b.ReportMetric(std.Seconds()*1e3, "unmarshal_ms")
		})
	}
}

// fastest returns the shorter of best (0 for none yet) and d.
func fastest(best, d time.Duration) time.Duration {
	if best == 0 || d < best {
		return max(d, 1)
	}
	return best
}

// BenchmarkDecodeSnapshot4MiB times DecodeSnapshot alone, with its
// allocations, for profiling.
func BenchmarkDecodeSnapshot4MiB(b *testing.B) {
	for _, tc := range snapshotCases() {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := DecodeSnapshot(bytes.NewReader(tc.data), int64(len(tc.data))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
