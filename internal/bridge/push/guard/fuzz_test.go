package guard

import (
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"
)

// FuzzParse: the state file is read strictly. Whatever the bytes, parse
// never panics; what it accepts holds sorted windows, at most MemoryKeys
// keys and no time after now, and writes back as a file that parses to
// the same state.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"version":1,"sent":[],"conversations":{},"held":[],"silentUntil":0,"keys":""}`))
	f.Add([]byte(`{"version":1,"sent":[1,2,3],"conversations":{"00000000000000ff":[2]},"held":[[1,4],[2,1]],"silentUntil":99,"keys":"AAAAAAAAAAE="}`))
	f.Add([]byte(`{"version":1,"sent":[3,2],"conversations":{},"held":[],"silentUntil":0,"keys":""}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`{"version":1,"Sent":[]}`))
	now := time.UnixMilli(1_000_000_000_000)
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := parse(data, now)
		if err != nil {
			return
		}
		if len(st.keyRing) > MemoryKeys || len(st.keyRing) != len(st.keys) {
			t.Fatalf("%d keys in the ring, %d in the set", len(st.keyRing), len(st.keys))
		}
		for _, ts := range append([][]int64{st.sent}, slices.Collect(maps.Values(st.conv))...) {
			for i, v := range ts {
				if v > now.UnixMilli() || (i > 0 && v < ts[i-1]) {
					t.Fatalf("times %v: out of order or after now", ts)
				}
			}
		}
		g := &Guard{now: func() time.Time { return now }, st: st}
		data2, err := g.encode()
		if err != nil {
			t.Fatal(err)
		}
		st2, err := parse(data2, now)
		if err != nil {
			t.Fatalf("our own file %s does not parse: %v", data2, err)
		}
		if !reflect.DeepEqual(norm(st), norm(st2)) {
			t.Fatalf("round trip changed the state:\n%+v\n%+v", st, st2)
		}
	})
}

// norm makes empty lists nil, so a round trip compares what matters.
func norm(s state) state {
	if len(s.sent) == 0 {
		s.sent = nil
	}
	if len(s.held) == 0 {
		s.held = nil
	}
	if len(s.keyRing) == 0 {
		s.keyRing = nil
	}
	for c, ts := range s.conv {
		if len(ts) == 0 {
			s.conv[c] = nil
		}
	}
	return s
}
