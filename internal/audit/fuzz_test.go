package audit

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// FuzzParseLine: the line parser never panics, accepts only valid JSON,
// and reads back every string the writer escapes.
func FuzzParseLine(f *testing.F) {
	f.Add([]byte(`{"time":"2026-12-01T10:00:00.000Z","session":"desk","device":"d","event":"pane.close","conversation":"c","prev":"` + GenesisPrev + `"}`))
	f.Add([]byte(`{"time":"2026-12-01T10:0`))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := ParseLine(line)
		if err != nil {
			return
		}
		if !json.Valid(line) {
			t.Fatalf("ParseLine accepted invalid JSON: %q", line)
		}
		if r.Hash != hashLine(line) || !isHash(r.Prev) {
			t.Fatalf("hash %s or prev %s wrong", r.Hash, r.Prev)
		}
		CheckFields(r) // must not panic on anything ParseLine accepts
	})
}

// FuzzVerify: verify never panics on any file, names only lines that
// exist, and a log that verifies intact has whole records only where it
// says so.
func FuzzVerify(f *testing.F) {
	f.Add([]byte("hello\n"))
	f.Add([]byte("{\"time\":\"2026-12-01T10:00:00.000Z\"\n\n{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rep := verify([]fileData{{"audit.log", data}})
		n := len(splitLines(data))
		for _, p := range append(append([]Problem(nil), rep.Problems...), rep.Torn...) {
			if p.Line < 1 || p.Line > n {
				t.Fatalf("a problem at line %d of %d: %s", p.Line, n, p)
			}
		}
		if rep.Intact() && rep.Records+len(rep.Torn) != n {
			t.Fatalf("%d lines but %d records and %d torn in an intact log", n, rep.Records, len(rep.Torn))
		}
		if !isHash(rep.Head) {
			t.Fatalf("head %q", rep.Head)
		}
	})
}

// FuzzChain: whatever strings a request carries, the writer's lines read
// back, keep A3's fields, never show a raw control character, and any
// byte changed in a line other than the last is detected.
func FuzzChain(f *testing.F) {
	f.Add("r-1", "q-1", "hello", "Work", "refused?", uint(10), byte('x'))
	f.Add("\x00\n\"\\", "\u202e", "\xff\xfe", "\U000E0041", "", uint(0), byte('\n'))
	f.Fuzz(func(t *testing.T, id, q, text, name, reason string, at uint, to byte) {
		dir := filepath.Join(t.TempDir(), "state")
		l, _, err := Open(Options{Dir: dir, NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		evs := []Event{
			Answer{RequestID: id, Question: q, Revision: 1, Answered: OptionIDs(text, name), Result: Refused(reason)},
			Send{RequestID: id, On: Question(q), Text: text, Result: OK},
			SpaceRename{Space: id, NewName: name, Result: Failed(reason)},
			StarterStart{StarterID: q, RequestID: id, Result: OK},
		}
		for _, ev := range evs {
			if _, err := l.Record(Who{Session: name, Device: id}, ev); err != nil {
				t.Fatal(err)
			}
		}
		files, err := snapshot(dir)
		if err != nil {
			t.Fatal(err)
		}
		data := files[0].data
		for i, line := range splitLines(data) {
			r, err := ParseLine(line)
			if err != nil {
				t.Fatalf("line %d does not read back: %v\n%q", i+1, err, line)
			}
			if err := CheckFields(r); err != nil {
				t.Fatalf("line %d: %v", i+1, err)
			}
			for _, c := range line {
				if c < 0x20 || c == 0x7f {
					t.Fatalf("line %d holds the raw byte %#x", i+1, c)
				}
			}
			if !utf8.Valid(line) {
				t.Fatalf("line %d is not UTF-8", i+1)
			}
			if p, ok := r.Get("preview").(string); ok && utf8.ValidString(text) && p != preview(text) {
				t.Fatalf("preview %q, want the first %d characters of %q", p, PreviewChars, text)
			}
		}
		if rep := verify(files); !rep.Intact() || rep.Records != len(evs) {
			t.Fatalf("the writer's log does not verify: %v", rep.Problems)
		}
		lastStart := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
		pos := int(at % uint(lastStart))
		if data[pos] == to {
			return
		}
		bad := bytes.Clone(data)
		bad[pos] = to
		if rep := verify([]fileData{{"audit.log", bad}}); rep.Intact() {
			t.Fatalf("changing byte %d from %q to %q went unnoticed:\n%s", pos, data[pos], to, bad)
		}
	})
}
