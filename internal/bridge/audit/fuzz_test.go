package audit

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzParseLine: the line parser never panics, and agrees with
// encoding/json: what it accepts is valid JSON with the same values, and
// valid JSON is never called invalid.
func FuzzParseLine(f *testing.F) {
	f.Add([]byte(`{"time":"2026-12-01T10:00:00.000Z","session":"desk","device":"d","event":"pane.close","conversation":"c","prev":"` + GenesisPrev + `"}`))
	f.Add([]byte(`{"time":"2026-12-01T10:0`))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := ParseLine(line)
		if err != nil {
			if json.Valid(line) && (strings.Contains(err.Error(), "not valid JSON") || strings.Contains(err.Error(), "not whole JSON")) {
				t.Fatalf("ParseLine calls valid JSON invalid: %v\n%q", err, line)
			}
			return
		}
		sameAsEncodingJSON(t, line, r)
		if r.Hash != hashLine(line) || !isHash(r.Prev) {
			t.Fatalf("hash %s or prev %s wrong", r.Hash, r.Prev)
		}
		CheckFields(r) // must not panic on anything ParseLine accepts
	})
}

// sameAsEncodingJSON fails unless encoding/json reads line as valid JSON
// with the values of r, each key once.
func sameAsEncodingJSON(t *testing.T, line []byte, r Record) {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil || !json.Valid(line) {
		t.Fatalf("ParseLine accepted what encoding/json refuses (%v): %q", err, line)
	}
	// The time reads back the same, though its text may differ in
	// ways time.Parse allows.
	if tm, err := time.Parse(timeLayout, m["time"].(string)); err != nil || !tm.Equal(r.Time) {
		t.Fatalf("time %v, encoding/json %v", r.Time, m["time"])
	}
	want := map[string]any{"session": r.Session, "device": r.Device, "event": r.Event, "prev": r.Prev}
	for _, fl := range r.Fields {
		want[fl.Key] = fl.Value
	}
	if len(m) != len(want)+1 {
		t.Fatalf("%d fields and the time, encoding/json %d: %q", len(want), len(m), line)
	}
	for k, v := range want {
		got := m[k]
		switch v := v.(type) {
		case int64:
			n, err := strconv.ParseInt(string(got.(json.Number)), 10, 64)
			if err != nil || n != v {
				t.Fatalf("%s = %d, encoding/json %v", k, v, got)
			}
		case []string:
			list, ok := got.([]any)
			if !ok || len(list) != len(v) {
				t.Fatalf("%s = %q, encoding/json %v", k, v, got)
			}
			for i := range v {
				if list[i] != v[i] {
					t.Fatalf("%s[%d] = %q, encoding/json %q", k, i, v[i], list[i])
				}
			}
		default:
			if got != v {
				t.Fatalf("%s = %#v, encoding/json %#v", k, v, got)
			}
		}
	}
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
			sameAsEncodingJSON(t, line, r)
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

// FuzzAppendString: the encoder's strings are JSON that encoding/json
// reads back as the string, each invalid byte as U+FFFD; they hold no raw
// control, DEL or hidden character; and ParseLine reads a line with the
// string in every place back the same.
func FuzzAppendString(f *testing.F) {
	f.Add("plain")
	f.Add("\x00\n\r\t\"\\\x7f\u0085\u202e\u2028\ufeff\U000E0041\xff\ufffd")
	f.Fuzz(func(t *testing.T, s string) {
		q := appendString(nil, s)
		var got string
		if err := json.Unmarshal(q, &got); err != nil {
			t.Fatalf("encoding/json cannot read %q: %v", q, err)
		}
		want := make([]rune, 0, len(s))
		for _, r := range s { // an invalid byte is utf8.RuneError
			want = append(want, r)
		}
		if got != string(want) {
			t.Fatalf("%q reads back as %q", q, got)
		}
		for _, r := range string(q) {
			if r < 0x20 || r == 0x7f || hidden(r) {
				t.Fatalf("%q holds the raw %U", q, r)
			}
		}
		line := appendRecord(nil, Record{Time: time.Unix(0, 0), Session: s, Device: s, Event: s,
			Fields: []Field{{s, s}, {"optionIds", []string{s, s}}}, Prev: GenesisPrev})
		r, err := ParseLine(line)
		if err != nil && !strings.Contains(err.Error(), "twice") { // s may be "optionIds"
			t.Fatalf("the writer's line does not read back: %v\n%q", err, line)
		}
		if err == nil {
			sameAsEncodingJSON(t, line, r)
		}
	})
}
