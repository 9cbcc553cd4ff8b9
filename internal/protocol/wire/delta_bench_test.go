package wire

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkDeltaVsWhole: what the bridge does for one ~250-byte item added
// to a 3.5 MiB transcript, by a delta (decode the delta, apply it, cleaning
// only the item) against a whole read (decode and clean the whole
// snapshot), side by side in one run; x_whole is the delta's share.
func BenchmarkDeltaVsWhole(b *testing.B) {
	c := Conversation{ID: "main", Title: "Build"}
	for size := 0; size < 3584<<10; {
		it := Item{ID: fmt.Sprintf("i%06d", len(c.Items)), Kind: KindText, Role: "agent", Text: strings.Repeat("tool output streams by; ", 8)}
		size += jsonLen(&it) + 1 // about 250 bytes each
		c.Items = append(c.Items, it)
	}
	raw := &Snapshot{Spaces: []Space{{ID: "s", Title: "Desk", Tabs: []Tab{{ID: "t", Title: "Main", Conversations: []Conversation{c}}}}}}
	whole := agentJSON(b, raw)
	st := wholeState(b, raw)
	st.Size()
	var deltas [][]byte
	for i := range 512 {
		d := Delta{Conversations: []ConversationDelta{{ID: "main", Items: []Item{{ID: fmt.Sprint("n", i), Kind: KindText, Role: "agent", Text: strings.Repeat("more output \u202e; ", 16)}}}}}
		deltas = append(deltas, agentJSON(b, &d))
	}
	var deltaNs, wholeNs float64
	b.Run("delta", func(b *testing.B) {
		cur, i := st, 0
		for b.Loop() {
			d, err := ParseDelta(deltas[i%len(deltas)])
			if err != nil {
				b.Fatal(err)
			}
			if i%len(deltas) == 0 && i > 0 {
				// Start again from a whole read (not timed): the deltas'
				// ids repeat, and the state must stay under the cap.
				b.StopTimer()
				cur = wholeState(b, raw)
				cur.Size()
				b.StartTimer()
			}
			if cur, _, err = cur.Apply(d); err != nil {
				b.Fatal(err)
			}
			i++
		}
		deltaNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := ParseSnapshot(whole); err != nil {
				b.Fatal(err)
			}
		}
		wholeNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	if wholeNs > 0 {
		b.ReportMetric(deltaNs/wholeNs, "x_whole")
		fmt.Printf("one item on a %d-byte transcript: delta %.1f µs, whole read %.1f ms: %.5fx\n", len(whole), deltaNs/1e3, wholeNs/1e6, deltaNs/wholeNs)
	}
}
