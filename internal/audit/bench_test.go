package audit

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/wire"
)

// BenchmarkRecord measures one append (a send line and its receipt):
// without fsync, with fsync one at a time, and with fsync from many
// goroutines at once, which share fsync rounds. It reports appends/s.
func BenchmarkRecord(b *testing.B) {
	ev := SendOf(wire.SendRequest{RequestID: "r-0123456789", Conversation: "c-1", Text: strings.Repeat("word ", 60)}, OK)
	for _, bc := range []struct {
		name     string
		noSync   bool
		parallel bool
	}{{"nosync", true, false}, {"fsync", false, false}, {"fsync_parallel", false, true}} {
		b.Run(bc.name, func(b *testing.B) {
			l, _, err := Open(Options{Dir: filepath.Join(b.TempDir(), "state"), NoSync: bc.noSync})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			b.ReportAllocs()
			b.ResetTimer()
			if bc.parallel {
				b.SetParallelism(16)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := l.Record(who, ev); err != nil {
							b.Error(err)
							return
						}
					}
				})
			} else {
				for b.Loop() {
					if _, err := l.Record(who, ev); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
		})
	}
}

// BenchmarkVerify measures verify over 10,000 lines.
func BenchmarkVerify(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "state")
	l, _, err := Open(Options{Dir: dir, NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 10000 {
		l.Record(who, answer(fmt.Sprintf("r-%d", i)))
	}
	l.Close()
	files, _ := snapshot(dir)
	b.ResetTimer()
	for b.Loop() {
		if rep := verify(files); !rep.Intact() {
			b.Fatal(rep.Problems)
		}
	}
}
