package jsonstrict

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

type inner struct {
	Name string `json:"name"`
}

type target struct {
	ID    string            `json:"id"`
	Title string            `json:"title,omitempty"`
	N     int64             `json:"n,omitempty"`
	Ok    bool              `json:"ok,omitempty"`
	Sub   []inner           `json:"sub,omitempty"`
	M     map[string]string `json:"m,omitempty"`
	P     *inner            `json:"p,omitempty"`
}

// embedded is the shape of device.AnswerRequest: an embedded struct whose
// fields are promoted, plus one of its own.
type embedded struct {
	target
	Confirm string `json:"confirm,omitempty"`
}

func TestUnmarshalAccepts(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     target
	}{
		{"plain", `{"id":"a","title":"T"}`, target{ID: "a", Title: "T"}},
		{"whitespace_around", " \n\t{\"id\":\"a\"} \r\n", target{ID: "a"}},
		{"escaped_name_is_the_same_name", `{"\u0069d":"a"}`, target{ID: "a"}},
		{"nested", `{"id":"a","sub":[{"name":"x"},{"name":"y"}],"p":{"name":"z"}}`, target{ID: "a", Sub: []inner{{"x"}, {"y"}}, P: &inner{"z"}}},
		{"map_keys_any_case", `{"m":{"k":"1","K":"2"}}`, target{M: map[string]string{"k": "1", "K": "2"}}},
		{"null_member", `{"id":"a","sub":null}`, target{ID: "a"}},
		{"valid_surrogate_pair", `{"id":"\ud83d\ude00"}`, target{ID: "\U0001F600"}},
		{"non_ascii", `{"title":"Grüße – 日本"}`, target{Title: "Grüße – 日本"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got target
			if err := Unmarshal([]byte(tc.in), &got); err != nil {
				t.Fatalf("Unmarshal(%s): %v", tc.in, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Unmarshal(%s) = %+v, want %+v", tc.in, got, tc.want)
			}
			// The same as encoding/json wherever both accept.
			var v1 target
			if err := json.Unmarshal([]byte(tc.in), &v1); err != nil || !reflect.DeepEqual(v1, got) {
				t.Errorf("encoding/json gives %+v, %v; jsonstrict %+v", v1, err, got)
			}
		})
	}
}

func TestUnmarshalRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		opts     []Option
		kind     Kind
		ptr      string
		msg      string // a part of the message
	}{
		{"X_wrong_case_ID", `{"ID":"a"}`, nil, UnknownMember, "/ID", `unknown field "ID" in the top-level object`},
		{"X_wrong_case_Title", `{"id":"a","Title":"t"}`, nil, UnknownMember, "/Title", `"Title"`},
		{"X_wrong_case_nested", `{"sub":[{"NAME":"x"}]}`, nil, UnknownMember, "/sub/0/NAME", `unknown field "NAME" in "/sub/0"`},
		{"X_unicode_fold_long_s", `{"ſub":[]}`, nil, UnknownMember, "/ſub", `"\u017fub"`},
		{"X_kelvin_sign_fold", `{"o\u212a":true}`, nil, UnknownMember, "/o\u212a", `"o\u212a"`},
		{"unknown_member", `{"id":"a","extra":1}`, nil, UnknownMember, "/extra", `"extra"`},
		{"duplicate", `{"id":"a","id":"b"}`, nil, DuplicateName, "/id", `field "id" appears twice in the top-level object`},
		{"duplicate_escaped", `{"id":"a","\u0069d":"b"}`, nil, DuplicateName, "/id", "twice"},
		{"duplicate_nested", `{"sub":[{"name":"a","name":"b"}]}`, nil, DuplicateName, "/sub/0/name", `in "/sub/0"`},
		{"duplicate_map_key", `{"m":{"k":"1","k":"2"}}`, nil, DuplicateName, "/m/k", "twice"},
		{"duplicate_open", `{"id":"a","id":"b"}`, []Option{Open}, DuplicateName, "/id", "twice"},
		{"duplicate_replace", `{"id":"a","id":"b"}`, []Option{ReplaceInvalidUTF8}, DuplicateName, "/id", "twice"},
		{"invalid_utf8", "{\"title\":\"a\xffb\"}", nil, InvalidUTF8, "/title", `the value at "/title" is not valid UTF-8`},
		{"invalid_utf8_nested", "{\"sub\":[{\"name\":\"\xc3\"}]}", nil, InvalidUTF8, "/sub/0/name", "not valid UTF-8"},
		{"invalid_utf8_map", "{\"m\":{\"k\":\"\xed\xa0\x80\"}}", nil, InvalidUTF8, "/m/k", "not valid UTF-8"},
		{"lone_surrogate", `{"title":"a\ud800b"}`, nil, InvalidUTF8, "/title", "not valid UTF-8"},
		{"lone_low_surrogate", `{"title":"\udc00"}`, nil, InvalidUTF8, "/title", "not valid UTF-8"},
		{"invalid_utf8_open", "{\"zz\":\"\xff\"}", []Option{Open}, InvalidUTF8, "/zz", "not valid UTF-8"},
		{"trailing_value", `{"id":"a"}{"id":"b"}`, nil, Trailing, "", "data after the JSON value"},
		{"trailing_garbage", `{"id":"a"} x`, nil, Trailing, "", "at byte 11"},
		{"empty", ``, nil, Empty, "", "no JSON value"},
		{"blank", " \n", nil, Empty, "", "no JSON value"},
		{"truncated", `{"id":"a"`, nil, Truncated, "", "cut short"},
		{"syntax", `{"id":'a'}`, nil, Syntax, "/id", "not valid JSON at byte 6"},
		{"wrong_type_string", `{"id":1}`, nil, WrongType, "/id", `the value at "/id": want a string, got a number`},
		{"wrong_type_int", `{"n":"1"}`, nil, WrongType, "/n", "want a whole number, got a string"},
		{"not_integer", `{"n":1.5}`, nil, WrongType, "/n", "does not fit"},
		{"overflow", `{"n":99999999999999999999}`, nil, WrongType, "/n", "does not fit"},
		{"wrong_type_top", `[]`, nil, WrongType, "", "the top-level value: want an object, got an array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got target
			err := Unmarshal([]byte(tc.in), &got, tc.opts...)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Unmarshal(%q) = %v, want a *Error of kind %d", tc.in, err, tc.kind)
			}
			if e.Kind != tc.kind || e.Pointer != tc.ptr {
				t.Errorf("Unmarshal(%q): kind %d at %q, want kind %d at %q (%v)", tc.in, e.Kind, e.Pointer, tc.kind, tc.ptr, err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Unmarshal(%q): message %q does not say %q", tc.in, err, tc.msg)
			}
			checkMessage(t, err)
		})
	}
}

// TestOpen: an open schema ignores unknown members, but a member whose name
// differs from a field's only in case is not that field.
func TestOpen(t *testing.T) {
	var got target
	if err := Unmarshal([]byte(`{"ID":"evil","id":"a","future":{"x":[1]}}`), &got, Open); err != nil {
		t.Fatal(err)
	}
	if got.ID != "a" {
		t.Errorf("ID = %q, want %q: a wrong-case name must not fill the field", got.ID, "a")
	}
	got = target{}
	if err := Unmarshal([]byte(`{"ID":"evil"}`), &got, Open); err != nil || got.ID != "" {
		t.Errorf("got %+v, %v; want the field left empty", got, err)
	}
}

func TestReplaceInvalidUTF8(t *testing.T) {
	var got target
	in := "{\"id\":\"a\xffb\",\"title\":\"x\\ud800y\"}"
	if err := Unmarshal([]byte(in), &got, ReplaceInvalidUTF8); err != nil {
		t.Fatal(err)
	}
	if got.ID != "a\uFFFDb" || got.Title != "x\uFFFDy" {
		t.Errorf("got %+q, %+q; want U+FFFD in place of each broken sequence", got.ID, got.Title)
	}
}

func TestEmbedded(t *testing.T) {
	var got embedded
	if err := Unmarshal([]byte(`{"id":"a","confirm":"c","sub":[{"name":"n"}]}`), &got); err != nil {
		t.Fatal(err)
	}
	want := embedded{target: target{ID: "a", Sub: []inner{{"n"}}}, Confirm: "c"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if err := Unmarshal([]byte(`{"id":"a","Confirm":"c"}`), &got); err == nil {
		t.Error("a wrong-case name of the outer struct was accepted")
	}
}

// TestRawMessage: a json.RawMessage field keeps its bytes, and what is in
// it follows the same rules (the Claude Code hook's tool_input).
func TestRawMessage(t *testing.T) {
	type hook struct {
		Tool  string          `json:"tool"`
		Input json.RawMessage `json:"input"`
	}
	var h hook
	if err := Unmarshal([]byte(`{"tool":"Bash","input":{"command":"ls"}}`), &h); err != nil || string(h.Input) != `{"command":"ls"}` {
		t.Fatalf("got %s, %v", h.Input, err)
	}
	for _, in := range []string{`{"tool":"Bash","input":{"command":"ls","command":"rm -rf ~"}}`, "{\"tool\":\"Bash\",\"input\":{\"command\":\"\xff\"}}"} {
		if err := Unmarshal([]byte(in), &h, Open); err == nil {
			t.Errorf("Unmarshal(%q) accepted a raw value with a duplicate name or invalid UTF-8", in)
		}
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"id":                     `"id"`,
		"a\x1b[31mb":             `"a\x1b[31mb"`,
		"\u202egnp.exe":          `"\u202egnp.exe"`,
		"tag\U000E0041":          `"tag\U000e0041"`,
		strings.Repeat("é", 40):  `"` + strings.Repeat(`\u00e9`, 32) + `"...`,
		strings.Repeat("x", 100): `"` + strings.Repeat("x", 64) + `"...`,
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}

// checkMessage: an error message is printable ASCII, whatever the input.
func checkMessage(t *testing.T, err error) {
	t.Helper()
	for _, c := range []byte(err.Error()) {
		if c < 0x20 || c > 0x7e {
			t.Fatalf("message %q has byte %#x", err, c)
		}
	}
}

func TestNotAPointer(t *testing.T) {
	var e *Error
	if err := Unmarshal([]byte(`{}`), target{}); err == nil || errors.As(err, &e) {
		t.Errorf("Unmarshal into a non-pointer: %v, want a plain error", err)
	}
}
