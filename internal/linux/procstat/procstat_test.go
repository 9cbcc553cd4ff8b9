package procstat

import (
	"testing"
)

func TestParseStat(t *testing.T) {
	tail := " 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 777 22 23\n"
	tests := []struct {
		name      string
		line      string
		state     byte
		ppid      int
		starttime uint64
	}{
		{"plain", "123 (bash) S 42" + tail, 'S', 42, 777},
		{"C2_comm_with_spaces", "123 (my tool) R 42" + tail, 'R', 42, 777},
		{"C2_comm_with_paren_and_fake_fields", "123 (x) S 1 1 1) S 42" + tail, 'S', 42, 777},
		{"C2_comm_only_parens", "123 ()) Z 9" + tail, 'Z', 9, 777},
		{"C2_comm_with_newline", "123 (a\nb) S 42" + tail, 'S', 42, 777},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := Parse([]byte(tt.line))
			if err != nil {
				t.Fatal(err)
			}
			if st.State != tt.state || st.PPID != tt.ppid || st.StartTime != tt.starttime {
				t.Fatalf("got %+v, want state %c ppid %d start %d", st, tt.state, tt.ppid, tt.starttime)
			}
		})
	}
	for _, bad := range []string{"", "123 bash S 1" + tail, "123 (bash) S", "123 (bash) S x" + tail, "123 (bash) SS 1" + tail} {
		if st, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", bad, st)
		}
	}
}

// FuzzParse: whatever a process names itself, Parse never panics, and a
// line it accepts has a parent pid that is no negative number.
func FuzzParse(f *testing.F) {
	tail := " 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 777 22 23\n"
	for _, s := range []string{"123 (bash) S 42" + tail, "123 (x) S 1 1 1) S 42" + tail, "123 ()) Z 9" + tail, "", "1 (a"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := Parse(b)
		if err == nil && st.PPID < 0 {
			t.Fatalf("Parse(%q) = %+v", b, st)
		}
	})
}
