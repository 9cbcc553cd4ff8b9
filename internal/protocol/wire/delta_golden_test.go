package wire

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

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
			if *update {
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

// TestDelta_ManPageExample: the delta collie-durable(7) shows decodes by
// the closed schema and applies to a snapshot that has what it names.
func TestDelta_ManPageExample(t *testing.T) {
	page, err := os.ReadFile("../../../man/collie-durable.7.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := bytes.Cut(page, []byte("SNAPSHOT DELTAS\n---"))
	if !ok {
		t.Fatal("collie-durable(7) has no SNAPSHOT DELTAS section")
	}
	start := bytes.Index(sec, []byte("    {\n"))
	end := bytes.Index(sec[start:], []byte("\n    }\n"))
	if start < 0 || end < 0 {
		t.Fatal("no example delta in SNAPSHOT DELTAS")
	}
	d, err := ParseDelta(sec[start : start+end+6])
	if err != nil {
		t.Fatalf("the page's example: %v", err)
	}
	base := &Snapshot{Spaces: []Space{{ID: "main", Tabs: []Tab{{ID: "main", Conversations: []Conversation{{ID: "c1",
		Items: []Item{{ID: "i7", Kind: KindText}, {ID: "i9", Kind: KindToolCall, Tool: &ToolCall{Name: "make"}}}, Questions: []Question{{ID: "q1", Kind: AskLine, Title: "?"}}}}}}}}}
	if _, _, err := wholeState(t, base).Apply(d); err != nil {
		t.Fatalf("the page's example does not apply: %v", err)
	}
}
