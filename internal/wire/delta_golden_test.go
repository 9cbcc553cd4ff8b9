package wire

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files of testdata/delta")

// TestDelta_X2_Golden applies each testdata/delta/NAME.delta.json to the
// whole read of NAME.base.json and compares the state, cleaned, with
// NAME.want.json (go test -run Golden -update rewrites it).
func TestDelta_X2_Golden(t *testing.T) {
	bases, _ := filepath.Glob("testdata/delta/*.base.json")
	if len(bases) == 0 {
		t.Fatal("no golden cases in testdata/delta")
	}
	for _, bp := range bases {
		name := filepath.Base(bp[:len(bp)-len(".base.json")])
		t.Run(name, func(t *testing.T) {
			read := func(suffix string) []byte {
				b, err := os.ReadFile(filepath.Join("testdata/delta", name+suffix))
				if err != nil {
					t.Fatal(err)
				}
				return bytes.TrimSpace(b)
			}
			s, rep, err := ParseSnapshot(read(".base.json"))
			if err != nil {
				t.Fatal(err)
			}
			d, err := ParseDelta(read(".delta.json"))
			if err != nil {
				t.Fatal(err)
			}
			st, drops, err := NewState(s, rep).Apply(d)
			if err != nil {
				t.Fatal(err)
			}
			got := agentJSON(t, st.Snap)
			if st.Size() != len(got) {
				t.Fatalf("size %d; the JSON is %d bytes", st.Size(), len(got))
			}
			for _, dr := range drops.Dropped {
				got = append(got, []byte("\ndropped: "+dr.What+": "+dr.Reason)...)
			}
			wp := filepath.Join("testdata/delta", name+".want.json")
			if *updateGolden {
				if err := os.WriteFile(wp, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if want := read(".want.json"); !bytes.Equal(got, want) {
				t.Fatalf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}
