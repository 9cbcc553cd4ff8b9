package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

func load(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseSnapshotCleans(t *testing.T) {
	s, rep, err := ParseSnapshot(load(t, "good.json"))
	if err != nil {
		t.Fatal(err)
	}
	sp := s.Spaces[0]
	conv := sp.Tabs[0].Conversations[0]
	checks := []struct {
		id, got, want string
	}{
		{"X2_step2_bidi_in_space_title", sp.Title, "Project evil"},
		{"X3_empty_title_named_by_id", sp.Tabs[0].Title, "t1"},
		{"X2_step1_control_in_title", conv.Title, "Fix the build"},
		{"X2_multiline_keeps_newline_tab", conv.Items[0].Text, "line one\nline\ttwo"},
		{"X6_markdown_html_kept_as_text", conv.Items[1].Text, "# Head\n<script>alert(1)</script>"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.id, c.got, c.want)
		}
	}
	var ids []string
	for _, it := range conv.Items {
		ids = append(ids, it.ID)
	}
	if got := strings.Join(ids, ","); got != "i1,i2,i3,i4,i6" {
		t.Errorf("X5/X6 items kept = %s, want i1,i2,i3,i4,i6 (bad id, repeated id, bad link, unknown kind dropped)", got)
	}
	var qids []string
	for _, q := range conv.Questions {
		qids = append(qids, q.ID)
	}
	if got := strings.Join(qids, ","); got != "q1,q2,q3" {
		t.Errorf("questions kept = %s, want q1,q2,q3 (a choice with no usable option dropped)", got)
	}
	q1, q2, q3 := conv.Questions[0], conv.Questions[1], conv.Questions[2]
	if q1.Shortened || !q1.AllowAlways || q1.Revision != 3 || q1.ToolCall != "tc-1" {
		t.Errorf("q1 = %+v", q1)
	}
	if !q2.Shortened || q2.Title != "Pick" {
		t.Errorf("X3 shortened mark: q2 = %+v", q2)
	}
	if len(q2.Options) != 1 || q2.Options[0].ID != "a" {
		t.Errorf("X3 blank option and X5 bad option id dropped: options = %+v", q2.Options)
	}
	if q3.Fields[0].Label != "host" {
		t.Errorf("X3 empty field named by id: %+v", q3.Fields)
	}
	var belt []string
	for _, b := range s.Belt {
		belt = append(belt, b.ID+"="+b.Label)
	}
	if got := strings.Join(belt, ","); got != "b1=Stop the build …,b3=Retry,b4=Logs" {
		t.Errorf("D2/X4 belt = %s", got)
	}
	if len(rep.Dropped) < 7 {
		t.Errorf("report lists %d drops, want at least 7 (blank belt button included): %+v", len(rep.Dropped), rep.Dropped)
	}
	for _, d := range rep.Dropped {
		if d.What == `item "i5"` && d.Conversation != "c1" {
			t.Errorf("X6 link drop not tied to its conversation: %+v", d)
		}
	}
}

func TestParseSnapshotRefuses(t *testing.T) {
	tests := []struct {
		name string
		data string
		want string
	}{
		{"broken_json", `{"spaces": [`, "broken JSON"},
		{"unknown_field", `{"spaces": [], "html": "<b>"}`, "unknown field"},
		{"trailing_data", `{"spaces": []} {}`, "data after the JSON value"},
		{"wrong_type", `{"spaces": {}}`, "broken JSON"},
		{"X4_over_cap", `{"spaces": [], "starters": [{"id": "x", "label": "` + strings.Repeat("a", SnapshotCap) + `"}]}`, "over its size cap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseSnapshot([]byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// countingReader counts how much of an endless body was read.
type countingReader struct{ n int64 }

func (r *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	r.n += int64(len(p))
	return len(p), nil
}

func TestDecodeCaps(t *testing.T) {
	t.Run("X4_snapshot_endless_body_stops_at_cap", func(t *testing.T) {
		r := &countingReader{}
		_, _, err := DecodeSnapshot(r, -1)
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("err = %v, want ErrTooLarge", err)
		}
		if r.n > SnapshotCap+64<<10 {
			t.Fatalf("read %d bytes of an endless body; the cap is %d", r.n, SnapshotCap)
		}
	})
	t.Run("X4_snapshot_content_length_over_cap_reads_nothing", func(t *testing.T) {
		r := &countingReader{}
		_, _, err := DecodeSnapshot(r, SnapshotCap+1)
		if !errors.Is(err, ErrTooLarge) || r.n != 0 {
			t.Fatalf("err = %v, read %d bytes; want ErrTooLarge and nothing read", err, r.n)
		}
	})
	t.Run("X4_hello_over_16KiB", func(t *testing.T) {
		body := `{"protocol":1,"agent":"` + strings.Repeat("a", HelloCap) + `"}`
		if _, err := DecodeHello(strings.NewReader(body), -1); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("err = %v, want ErrTooLarge", err)
		}
	})
	t.Run("snapshot_exactly_at_cap_is_read", func(t *testing.T) {
		body := []byte(`{"spaces":[]}`)
		body = append(body, bytes.Repeat([]byte(" "), SnapshotCap-len(body))...)
		if _, _, err := DecodeSnapshot(bytes.NewReader(body), int64(len(body))); err != nil {
			t.Fatalf("a reply of exactly the cap was refused: %v", err)
		}
	})
}

func TestDecodeHello(t *testing.T) {
	h, err := DecodeHello(strings.NewReader(`{"protocol":1,"agent":"demo\u202e","software":"x 1"}`), -1)
	if err != nil {
		t.Fatal(err)
	}
	if h.Agent != "demo" {
		t.Errorf("X1 hello agent = %q", h.Agent)
	}
	if _, err := DecodeHello(strings.NewReader(`{"protocol":2,"agent":"x"}`), -1); err == nil || !strings.Contains(err.Error(), "protocol 2") {
		t.Errorf("protocol 2 err = %v", err)
	}
}

func TestDecodeError(t *testing.T) {
	code, msg, ok := DecodeError([]byte(`{"error":{"code":"caller-refused","message":"no\u001b[31m"}}`))
	if !ok || code != CodeCallerRefused || msg != "no[31m" {
		t.Fatalf("got %q %q %v", code, msg, ok)
	}
	if _, _, ok := DecodeError([]byte(`<html>`)); ok {
		t.Fatal("a non-JSON body decoded as an error")
	}
}

// FuzzParseSnapshot: whatever an agent sends, decoding never panics, and a
// snapshot it accepts holds only valid ids and clean, valid UTF-8.
func FuzzParseSnapshot(f *testing.F) {
	f.Add(load(f, "good.json"))
	f.Add([]byte(`{"spaces":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, _, err := ParseSnapshot(data)
		if err != nil {
			return
		}
		unmark(s)
		out, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if !utf8.Valid(out) {
			t.Fatalf("output is not valid UTF-8")
		}
		s2, rep, err := ParseSnapshot(out)
		if err != nil {
			t.Fatalf("a cleaned snapshot does not parse again: %v", err)
		}
		if len(rep.Dropped) != 0 {
			t.Fatalf("a cleaned snapshot lost objects when cleaned again: %+v", rep.Dropped)
		}
		unmark(s2)
		out2, _ := json.Marshal(s2)
		if !bytes.Equal(out, out2) {
			t.Fatalf("cleaning is not idempotent:\n%s\n%s", out, out2)
		}
	})
}

// unmark clears the bridge's own "shortened" marks, which say what the
// first cleaning did and so differ on the second.
func unmark(s *Snapshot) {
	for i := range s.Spaces {
		for j := range s.Spaces[i].Tabs {
			for k := range s.Spaces[i].Tabs[j].Conversations {
				qs := s.Spaces[i].Tabs[j].Conversations[k].Questions
				for l := range qs {
					qs[l].Shortened = false
				}
			}
		}
	}
}

// FuzzDecodeRequest: whatever a device or a local program sends as a write
// body, decoding never panics, and a body it accepts encodes and decodes
// again to the same request.
func FuzzDecodeRequest(f *testing.F) {
	f.Add(0, []byte(`{"requestId":"r","conversation":"c","question":"q","revision":1,"optionIds":["yes"]}`))
	f.Add(1, []byte(`{"requestId":"r","conversation":"c","text":"hi\u202e","steer":true}`))
	f.Add(4, []byte(`{"requestId":"r","space":"s","title":"New name"}`))
	f.Add(7, []byte(`{"requestId":"r","starter":"s1"}`))
	f.Fuzz(func(t *testing.T, kind int, data []byte) {
		w := writes[((kind%len(writes))+len(writes))%len(writes)] // any write of the registry
		req := w.New()
		if w.Decode(bytes.NewReader(data), int64(len(data)), req) != nil {
			return
		}
		out, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		again := w.New()
		if err := w.Decode(bytes.NewReader(out), int64(len(out)), again); err != nil {
			t.Fatalf("an accepted request does not decode again: %v\n%s", err, out)
		}
		out2, _ := json.Marshal(again)
		if !bytes.Equal(out, out2) {
			t.Fatalf("not stable:\n%s\n%s", out, out2)
		}
	})
}
