package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestParseLineStrict: a line that encoding/json reads the same but that
// Collie would not have written is not a record (A1).
func TestParseLineStrict(t *testing.T) {
	good := `{"time":"2026-12-01T10:00:00.000Z","session":"desk","device":"d","event":"tab.rename","tab":"t","name":"a\u202eb\ufffd","prev":"` + GenesisPrev + `"}`
	if _, err := ParseLine([]byte(good)); err != nil {
		t.Fatalf("the writer's own form: %v", err)
	}
	for _, tc := range []struct{ name, from, to, want string }{
		{"trailing_cr", `"}`, "\"}\r", "whitespace"},
		{"space_after_colon", `"tab":"t"`, `"tab": "t"`, "whitespace"},
		{"wrong_case_time", `"time"`, `"TIME"`, `no "time" field`},
		{"wrong_case_prev", `"prev"`, `"Prev"`, `no "prev" field`},
		{"key_escaped", `"tab"`, `"t\u0061b"`, `a \u escape Collie does not write`},
		{"duplicate_after_escape", `"name":`, `"tab":"x","name":`, `the field "tab" twice`},
		{"slash_escape", `"t"`, `"\/t"`, `(\/, \b or \f)`},
		{"upper_hex", `\u202e`, `\u202E`, `a \u escape Collie does not write`},
		{"raw_bidi", `\u202e`, "\u202e", "a raw U+202E character"},
		{"raw_del", `"t"`, "\"t\x7f\"", "a raw DEL"},
		{"invalid_utf8", `"t"`, "\"t\xff\"", "invalid UTF-8"},
		{"lone_surrogate", `\ufffd`, `\ud800`, "a lone surrogate"},
		{"plain_escaped", `"t"`, `"\u0074"`, `a \u escape Collie does not write`},
		{"session_after_device", `"session":"desk","device":"d"`, `"device":"d","session":"desk"`, "out of Collie's order"},
		{"field_after_prev", `"}`, `","x":"y"}`, "out of Collie's order"},
		{"nul_raw", `"t"`, "\"t\x00\"", "not valid JSON"},
	} {
		t.Run("A1_"+tc.name, func(t *testing.T) {
			line := strings.Replace(good, tc.from, tc.to, 1)
			if line == good {
				t.Fatal("the case changes nothing")
			}
			_, err := ParseLine([]byte(line))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseLine(%q) = %v, want ...%s...", line, err, tc.want)
			}
		})
	}
}

// TestParseLineForms: the reader takes both forms the writer gives
// U+FFFD (a real one raw, invalid UTF-8 as \ufffd), names invalid UTF-8
// even where it starts like the U+FFFD the decoder reads it as, and calls
// a line that ends inside a value, a literal or a list included, cut
// short (errNotWhole), which Verify treats as a torn write at the end
// (A1).
func TestParseLineForms(t *testing.T) {
	good := `{"time":"2026-12-01T10:00:00.000Z","session":"desk","device":"d","event":"send","requestId":"r","turn":"c","steer":true,"preview":"t","result":"ok","prev":"` + GenesisPrev + `"}`
	for _, tc := range []struct{ name, from, to, want string }{
		{"fffd_raw", `"preview":"t"`, "\"preview\":\"t\ufffd\"", ""},
		{"fffd_escaped", `"preview":"t"`, `"preview":"t\ufffd"`, ""},
		{"fffd_upper", `"preview":"t"`, `"preview":"t\uFFFD"`, `a \u escape Collie does not write`},
		{"invalid_utf8_fffd_lead", `"preview":"t"`, "\"preview\":\"t\xef\xbf\"", "invalid UTF-8 at byte 133"},
		{"invalid_utf8_lead", `"preview":"t"`, "\"preview\":\"t\xef\"", "invalid UTF-8 at byte 133"},
		{"cut_in_literal", `true,"preview":"t","result":"ok","prev":"` + GenesisPrev + `"}`, "tr", errNotWhole.Error()},
		{"cut_in_list", `"steer":true,"preview":"t","result":"ok","prev":"` + GenesisPrev + `"}`, `"x":["a",`, errNotWhole.Error()},
		{"cut_in_key", `"steer":true,"preview":"t","result":"ok","prev":"` + GenesisPrev + `"}`, `"ste`, errNotWhole.Error()},
		{"minus_zero", `"steer":true`, `"count":-0`, "a number not in its plain form at byte 116"},
	} {
		t.Run("A1_"+tc.name, func(t *testing.T) {
			line := strings.Replace(good, tc.from, tc.to, 1)
			if line == good {
				t.Fatal("the case changes nothing")
			}
			_, err := ParseLine([]byte(line))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("ParseLine(%q) = %v, want it read", line, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("ParseLine(%q) = %v, want ...%s...", line, err, tc.want)
			case tc.want == errNotWhole.Error() && !errors.Is(err, errNotWhole):
				t.Errorf("ParseLine(%q) = %v, not errNotWhole", line, err)
			}
		})
	}
}

// TestParseReceiptStrict: receipts.jsonl is read only as Collie writes
// it: a receipt with a key in another case, a key twice, whitespace or an
// extra field is dropped and counted (A6).
func TestParseReceiptStrict(t *testing.T) {
	r := Receipt{ID: GenesisPrev, Time: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Device: "d\u202e", Session: "desk", Event: "send", RequestID: "r-1", Result: "ok"}
	good := strings.TrimSuffix(string(encodeReceipt(nil, r)), "\n")
	if got, err := parseReceipt([]byte(good)); err != nil || got != r {
		t.Fatalf("parseReceipt(its own line) = %+v, %v", got, err)
	}
	for _, tc := range []struct{ name, from, to string }{
		{"wrong_case", `"device"`, `"Device"`},
		{"duplicate", `"result":"ok"`, `"result":"ok","result":"refused"`},
		{"extra_field", `"result":"ok"`, `"result":"ok","note":"x"`},
		{"missing_field", `,"result":"ok"`, ``},
		{"whitespace", `"event":"send"`, `"event": "send"`},
		{"reordered", `"device":"d\u202e","session":"desk"`, `"session":"desk","device":"d\u202e"`},
		{"number", `"result":"ok"`, `"result":1`},
		{"crlf", `"}`, "\"}\r"},
	} {
		t.Run("A6_"+tc.name, func(t *testing.T) {
			line := strings.Replace(good, tc.from, tc.to, 1)
			if line == good {
				t.Fatal("the case changes nothing")
			}
			if got, err := parseReceipt([]byte(line)); err == nil {
				t.Errorf("parseReceipt(%s) = %+v; want it refused", line, got)
			}
		})
	}
	t.Run("A6_dropped_and_counted", func(t *testing.T) {
		dir := t.TempDir()
		bad := strings.Replace(good, `"device"`, `"Device"`, 1)
		os.WriteFile(filepath.Join(dir, ReceiptsName), []byte(good+"\n"+bad+"\n"), 0o600)
		l, op, err := Open(Options{Dir: dir, NoSync: true, Now: func() time.Time { return r.Time }})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if op.BadReceipts != 1 {
			t.Errorf("BadReceipts = %d, want 1", op.BadReceipts)
		}
	})
}

// FuzzParseReceipt: the receipt parser never panics, reads back every
// receipt the writer writes, and what it accepts encoding/json reads the
// same, each key exactly once.
func FuzzParseReceipt(f *testing.F) {
	f.Add([]byte(`{"id":"` + GenesisPrev + `","time":"2026-12-01T10:00:00.000Z","device":"d","session":"s","event":"send","requestId":"r","result":"ok"}`))
	f.Add([]byte(`{"id":"x"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := parseReceipt(line)
		if err != nil {
			return
		}
		var m map[string]string
		if err := json.Unmarshal(line, &m); err != nil || len(m) != 7 /* id, time, device, session, event, requestId, result */ {
			t.Fatalf("parseReceipt accepted %q; encoding/json: %v, %d keys", line, err, len(m))
		}
		if m["id"] != r.ID || m["device"] != r.Device || m["session"] != r.Session || m["event"] != r.Event || m["requestId"] != r.RequestID || m["result"] != r.Result {
			t.Fatalf("parseReceipt read %+v, encoding/json %v", r, m)
		}
		if again := encodeReceipt(nil, r); !bytes.Equal(again[:len(again)-1], line) {
			t.Fatalf("accepted %q, which the writer writes as %q", line, again)
		}
	})
}
