package audit

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// sixLines is an intact log of six records, its lines and its head.
func sixLines(t *testing.T) (ls [][]byte, head string) {
	t.Helper()
	dir := t.TempDir()
	l, _ := openLog(t, Options{Dir: dir})
	for i := range 6 {
		record(t, l, who, answer(fmt.Sprintf("r-%d", i+1)))
	}
	return lines(t, dir), l.Head()
}

// rechain recomputes every prev after the first line, as someone who
// knows the scheme would after an edit.
func rechain(ls [][]byte) [][]byte {
	prevRE := regexp.MustCompile(`"prev":"[0-9a-f]{64}"`)
	out := make([][]byte, len(ls))
	for i, l := range ls {
		out[i] = append([]byte(nil), l...)
		if i > 0 {
			out[i] = prevRE.ReplaceAll(out[i], []byte(`"prev":"`+hashLine(out[i-1])+`"`))
		}
	}
	return out
}

func verifyBytes(t *testing.T, name string, data []byte) Report {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := VerifyFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestVerify checks that verify finds each kind of tampering and names
// the first bad line.
func TestVerify(t *testing.T) {
	ls, head := sixLines(t)
	edit := func(i int, from, to string) [][]byte {
		out := append([][]byte(nil), ls...)
		out[i] = bytes.Replace(ls[i], []byte(from), []byte(to), 1)
		return out
	}
	without := func(i int) [][]byte {
		return append(append([][]byte(nil), ls[:i]...), ls[i+1:]...)
	}
	swapped := append([][]byte(nil), ls...)
	swapped[2], swapped[3] = swapped[3], swapped[2]
	// A forged record that chains correctly to line 2, put after it.
	forged := bytes.Replace(ls[2], []byte(`"r-3"`), []byte(`"r-forged"`), 1)
	inserted := append(append(append([][]byte(nil), ls[:2]...), forged), ls[2:]...)
	extraField := rechain(edit(2, `"result":"ok"`, `"text":"hunter2","result":"ok"`))

	for _, tc := range []struct {
		name string
		data []byte
		line int    // first bad line; 0 for intact
		what string // in the first problem
		torn int
	}{
		{"chain_intact", joinLines(ls), 0, "", 0},
		{"edit_detected", joinLines(edit(2, `"r-3"`, `"r-9"`)), 4, "does not follow line 3: line 3 was edited, or records between them were removed", 0},
		{"edit_revision_detected", joinLines(edit(1, `"revision":1`, `"revision":2`)), 3, "line 2 was edited", 0},
		{"remove_detected", joinLines(without(2)), 3, "does not follow line 2: line 2 was edited, or records between them were removed", 0},
		{"remove_first_detected", joinLines(without(0)), 1, "the first record does not start the chain", 0},
		{"insert_detected", joinLines(inserted), 4, "follows line 2, not line 3: the records after line 2 were inserted", 0},
		{"reorder_detected", joinLines(swapped), 3, "follows line 4, which comes after it: records were reordered", 0},
		{"junk_line_detected", joinLines(append(append([][]byte(nil), ls[:3]...), append([][]byte{[]byte("hello")}, ls[3:]...)...)), 4, "not an audit record", 0},
		{"empty_line_detected", joinLines(append(append([][]byte(nil), ls[:3]...), append([][]byte{{}}, ls[3:]...)...)), 4, "not an audit record", 0},
		{"A3_rechained_extra_field_detected", joinLines(extraField), 3, `answer lines do not keep the field "text": the audit schema does not list it for that event`, 0},
		{"torn_tail_reported_not_tampered", joinLines(ls)[:len(joinLines(ls))-30], 0, "", 1},
		{"unterminated_junk_tail_detected", append(joinLines(ls), "junk"...), 7, "not an audit record", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := verifyBytes(t, "audit.log", tc.data)
			if tc.line == 0 {
				if !rep.Intact() {
					t.Errorf("Verify found %v; want intact", rep.Problems)
				}
			} else {
				if rep.Intact() {
					t.Fatalf("Verify says intact; want line %d flagged", tc.line)
				}
				if p := rep.Problems[0]; p.Line != tc.line || !strings.Contains(p.What, tc.what) {
					t.Errorf("first problem: %s\nwant line %d: ...%s...", p, tc.line, tc.what)
				}
			}
			if len(rep.Torn) != tc.torn {
				t.Errorf("Torn = %v, want %d", rep.Torn, tc.torn)
			}
		})
	}

	// The chain cannot catch an edit of the last line, or an edit after
	// which every later prev is recomputed: both change the head, which is
	// why the daemon should log it elsewhere.
	t.Run("anchor_head_changes_on_rewrite", func(t *testing.T) {
		rep := verifyBytes(t, "audit.log", joinLines(rechain(edit(1, `"r-2"`, `"r-x"`))))
		if !rep.Intact() {
			t.Fatalf("a rechained log: %v", rep.Problems)
		}
		if rep.Head == head {
			t.Error("a rechained log gives the same head; the anchor would not notice")
		}
		rep = verifyBytes(t, "audit.log", joinLines(ls))
		if rep.Head != head || rep.Records != 6 {
			t.Errorf("Head = %s (%d records), want the writer's %s", rep.Head, rep.Records, head)
		}
	})

	t.Run("problems_are_capped", func(t *testing.T) {
		var junk [][]byte
		for range maxProblems + 5 {
			junk = append(junk, []byte("x"))
		}
		rep := verifyBytes(t, "audit.log", joinLines(junk))
		if len(rep.Problems) != maxProblems || rep.More != 5 {
			t.Errorf("%d problems and %d more, want %d and 5", len(rep.Problems), rep.More, maxProblems)
		}
	})

	t.Run("missing_log_is_empty", func(t *testing.T) {
		rep, err := Verify(filepath.Join(t.TempDir(), "none"))
		if err != nil || rep.Records != 0 || !rep.Intact() || len(rep.Files) != 0 {
			t.Errorf("Verify(missing) = %+v, %v", rep, err)
		}
	})
}

// TestCheckFields checks the schema check on lines no writer of ours
// makes.
func TestCheckFields(t *testing.T) {
	base := `{"time":"2026-12-01T10:00:00.000Z","session":"s","device":"d",`
	prev := `,"prev":"` + GenesisPrev + `"}`
	for _, tc := range []struct{ name, fields, want string }{
		{"A3_unknown_event", `"event":"answer.all"`, `the event "answer.all" is not one Collie records`},
		{"A3_answer_without_result", `"event":"answer","requestId":"r","question":"q","revision":1,"optionIds":["yes"]`, "keep a result, which this one lacks"},
		{"A3_answer_with_both_kinds", `"event":"answer","requestId":"r","question":"q","revision":1,"optionIds":["yes"],"answer":"text","result":"ok"`, `exactly one of "optionIds" and "answer", and this one has 2`},
		{"A3_send_without_preview", `"event":"send","requestId":"r","turn":"c","steer":false,"result":"ok"`, `keep the field "preview", which this one lacks`},
		{"A3_revision_as_string", `"event":"answer","requestId":"r","question":"q","revision":"1","optionIds":["yes"],"result":"ok"`, `"revision" is a string, not a number`},
		{"A3_refused_without_reason", `"event":"abort","requestId":"r","turn":"c","result":"refused"`, "a refused result has no reason"},
		{"A3_ok_with_reason", `"event":"abort","requestId":"r","turn":"c","result":"ok","reason":"x"`, "has a reason, but nothing was refused"},
		{"A3_rename_with_ok_result", `"event":"tab.rename","tab":"t","name":"n","result":"ok"`, "carry a result only when it was not ok"},
		{"A3_odd_result", `"event":"abort","requestId":"r","turn":"c","result":"maybe"`, `not "ok", "refused", "failed" or "pending"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseLine([]byte(base + tc.fields + prev))
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckFields(r); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckFields = %v, want ...%s...", err, tc.want)
			}
		})
	}
}

func TestParseLine(t *testing.T) {
	for _, tc := range []struct{ name, line, want string }{
		{"duplicate_key", `{"time":"2026-12-01T10:00:00.000Z","time":"2026-12-01T10:00:00.000Z"}`, `the field "time" twice`},
		{"no_prev", `{"time":"2026-12-01T10:00:00.000Z","session":"s","device":"d","event":"pane.close","conversation":"c"}`, `no "prev" field`},
		{"bad_prev", `{"prev":"abc"}`, "not a hex SHA-256"},
		{"local_time", `{"time":"2026-12-01T11:00:00.000+01:00"}`, "not RFC 3339 in UTC"},
		{"object_value", `{"x":{}}`, "object"},
		{"null_value", `{"x":null}`, "null"},
		{"float_value", `{"x":1.5}`, "not a whole number"},
		{"mixed_list", `{"x":["a",1]}`, "other than strings"},
		{"trailing", `{"x":1}{"y":2}`, "more after"},
		{"not_object", `["x"]`, "not a JSON object"},
		{"cut_short", `{"time":"2026-12-01T10:0`, "not whole JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseLine([]byte(tc.line))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseLine(%s) = %v, want ...%s...", tc.line, err, tc.want)
			}
		})
	}
}
