package jsonstrict

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"regexp"
	"slices"
	"testing"
	"unicode/utf8"
)

// FuzzUnmarshal checks Unmarshal against the rules it promises, using
// encoding/json and a token walk of its own as the reference:
//   - it accepts exactly the inputs that are one valid JSON value, valid
//     UTF-8 with no lone surrogate escape, and with no name twice in an
//     object (into any);
//   - into a closed struct, it accepts only names that are the struct's
//     own, in their exact case, and then agrees with encoding/json;
//   - every error is an *Error (or says the input is not a pointer) whose
//     message is printable ASCII.
func FuzzUnmarshal(f *testing.F) {
	for _, s := range []string{
		`{"id":"a","title":"t","n":3,"ok":true,"sub":[{"name":"x"}],"m":{"k":"v"},"p":{"name":"y"}}`,
		`{"ID":"a"}`, `{"id":"a","id":"b"}`, `{"m":{"k":"1","k":"2"}}`, "{\"id\":\"\xff\"}",
		`{"id":"\ud800"}`, `{"id":"\ud83d\ude00"}`, `{"id":"a"} {}`, `[1,2,{"a":{"a":1}}]`,
		`{"ſub":[]}`, `{"\u0069d":"x"}`, `null`, ``, `{"n":1e400}`, `"x"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var anyv any
		err := Unmarshal(data, &anyv)
		checkFuzzErr(t, data, err)
		wellFormed := json.Valid(data) && utf8.Valid(data) && !loneSurrogate.Match(data)
		dup := wellFormed && hasDuplicate(data)
		switch {
		case err == nil && (!json.Valid(data) || !utf8.Valid(data)):
			t.Fatalf("accepted %q, which is not one valid UTF-8 JSON value", data)
		case err == nil && hasDuplicate(data):
			t.Fatalf("accepted %q, which has a name twice in one object", data)
		case err != nil && wellFormed && !dup && !loneSurrogateEscapes(data):
			var ref any
			if json.Unmarshal(data, &ref) == nil {
				t.Fatalf("refused %q: %v", data, err)
			}
		}
		if err == nil {
			var ref any
			if err := json.Unmarshal(data, &ref); err != nil || !reflect.DeepEqual(ref, anyv) {
				t.Fatalf("%q: encoding/json gives %#v (%v), jsonstrict %#v", data, ref, err, anyv)
			}
		}

		var got target
		err = Unmarshal(data, &got)
		checkFuzzErr(t, data, err)
		if err != nil {
			return
		}
		if anyv == nil && !bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
			t.Fatalf("accepted %q into a struct but not into any", data)
		}
		if !namesExact(anyv) {
			t.Fatalf("accepted %q, whose names are not the struct's own in their case", data)
		}
		var ref target
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ref); err != nil || !reflect.DeepEqual(ref, got) {
			t.Fatalf("%q: encoding/json gives %+v (%v), jsonstrict %+v", data, ref, err, got)
		}
	})
}

var loneSurrogate = regexp.MustCompile(`\\u[dD][89abcdefABCDEF]`)

// loneSurrogateEscapes reports whether data may hold an escaped surrogate
// (paired or not): the fuzz oracle does not decide those.
func loneSurrogateEscapes(data []byte) bool { return loneSurrogate.Match(data) }

func checkFuzzErr(t *testing.T, data []byte, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%q: error %v is not a *Error", data, err)
	}
	for _, c := range []byte(err.Error()) {
		if c < 0x20 || c > 0x7e {
			t.Fatalf("%q: message %q has byte %#x", data, err, c)
		}
	}
}

// hasDuplicate walks data's tokens with encoding/json and reports a name
// given twice in one object.
func hasDuplicate(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		names  map[string]bool
		object bool
		key    bool // the next token is a name
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF || err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				continue
			}
			name := tok.(string)
			if top.names[name] {
				return true
			}
			top.names[name] = true
			top.key = false
			continue
		}
		if top != nil && top.object {
			top.key = true
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{names: map[string]bool{}, object: true, key: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}

// namesExact reports whether every name in v, decoded as any, is one of
// target's (or inner's, or a map key) in its exact case.
func namesExact(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return v == nil
	}
	for k, x := range m {
		switch k {
		case "id", "title", "n", "ok", "m":
		case "sub":
			if l, ok := x.([]any); ok {
				for _, e := range l {
					if !innerExact(e) {
						return false
					}
				}
			}
		case "p":
			if !innerExact(x) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func innerExact(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return true
	}
	for k := range m {
		if !slices.Contains([]string{"name"}, k) {
			return false
		}
	}
	return true
}
