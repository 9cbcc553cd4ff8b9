package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyWrecked verifies the golden wrecked logs of testdata/wrecked:
// each is testdata/audit.log (or the files of a log with rotated files)
// changed in one way a reader could skip, tolerate or misread, with the
// hashes recomputed where the change is to one line. None may verify
// intact, and the first problem names the file and line (A1).
// Only the last line of the newest file may be torn.
func TestVerifyWrecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string // of the first problem, the base name
		line int
		what string
	}{
		{"crlf.log", "", 1, "not an audit record: it is not written the way Collie writes a line: whitespace (a space, tab, CR or LF) at byte 248"},
		{"trailing_space.log", "", 1, "whitespace"},
		{"leading_space.log", "", 1, "not a JSON object on one line"},
		{"missing_brace.log", "", 1, "a line cut short in the middle of the log"},
		{"blank_line.log", "", 5, "not an audit record: it is not a JSON object on one line"},
		{"blank_line_at_end.log", "", 13, "not an audit record"},
		{"nul_in_line.log", "", 5, "not valid JSON"},
		{"nul_line.log", "", 7, "a line cut short in the middle of the log"},
		{"duplicate_key.log", "", 3, `the field "requestId" twice`},
		{"wrong_case_key.log", "", 4, `do not keep the field "RequestId"`},
		{"wrong_case_time.log", "", 1, `no "time" field`},
		{"escaped_equivalent.log", "", 2, `a \u escape Collie does not write`},
		{"keys_reordered.log", "", 2, "a field out of Collie's order"},
		{"fields_reordered.log", "", 6, `its field "starterId" is out of the order Collie writes`},
		{"whitespace_in_line.log", "", 7, "whitespace"},
		{"number_not_plain.log", "", 1, "not a whole number"},
		{"number_negative_zero.log", "", 3, "a number not in its plain form"},
		{"time_not_canonical.log", "", 8, "not RFC 3339 in UTC to the millisecond"},
		{"torn_in_middle.log", "", 5, "a line cut short in the middle of the log"},
		{"torn_before_next_file", "audit.log.20261201T100005.000Z", 6, "looks like a write cut short, but audit.log comes after it"},
		{"rotated_swapped", "audit.log.20261201T100008.000Z", 1, "starts a chain (its prev is the genesis), yet records come before it: the files were put in another order"},
	} {
		t.Run("A1_"+strings.TrimSuffix(tc.name, ".log"), func(t *testing.T) {
			path := filepath.Join("testdata", "wrecked", tc.name)
			var rep Report
			var err error
			if fi, serr := os.Stat(path); serr == nil && fi.IsDir() {
				rep, err = Verify(path)
			} else {
				rep, err = VerifyFiles(path)
			}
			if err != nil {
				t.Fatal(err)
			}
			if rep.Intact() {
				t.Fatalf("a wrecked log verifies intact: %+v", rep)
			}
			if len(rep.Torn) != 0 {
				t.Errorf("Torn = %v; no line of a wrecked log is a torn write", rep.Torn)
			}
			p := rep.Problems[0]
			want := tc.file
			if want == "" {
				want = tc.name
			}
			if filepath.Base(p.File) != want || p.Line != tc.line || !strings.Contains(p.What, tc.what) {
				t.Errorf("first problem %s\nwant %s line %d: ...%s...", p, want, tc.line, tc.what)
			}
		})
	}
}
